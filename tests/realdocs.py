"""Real sites for the tests and benchmarks of PERS and change detection: the HTML documentation
trees Debian packages ship, served by a real nginx on a loopback port, one virtual host a
package, reached through it as a proxy (nginx picks the server by the absolute url's host).

Nothing here is made for the code under test: the pages are the packages' own (Sphinx,
Texinfo, DocBook...), and a site's homepage is the one its package declares in its doc-base
registration (`Index:` of /usr/share/doc-base/<package>), which is not at `/`: a site's
document root is its package's directory under /usr/share/doc, so `/` answers 404, as a site
whose front page failed does. The packages and nginx are installed by the test run itself
when missing (tests/redis_server.py's lock, and apt-get waits for dpkg's own lock held by
another engineer's install).

For change detection (`volatile=True`) the trees are copied (html files and the rest as
symlinks) and every page gets, before </body>, what real pages change on every visit, made by
nginx's SSI at each request: the time (weekday, month, digits), a visitor number and a
rotating advertisement in a block named "ad" whose link carries the request's id. nginx is
told to answer every request with 200 (no ETag, no Last-Modified), so what is stored again
is decided by the crawler's change detection alone. `edit_pages` then edits pages as a person
would, one real text edit each, anywhere a reader reads.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

from lxml import html as lxml_html

from tests.redis_server import APT_ENV, APT_LOCK, ensure_debian, free_port

DOC_BASE = Path("/usr/share/doc-base")
DOC_ROOT = Path("/usr/share/doc")
# Small trees for the tests: Sphinx (four projects), Texinfo and DocBook.
TEST_PACKAGES = ("python-click-doc", "python-attr-doc", "python-requests-doc",
                 "python-babel-doc", "gettext-doc", "debian-reference-en")
# More for the benchmarks.
BENCH_PACKAGES = TEST_PACKAGES + (
    "python-flask-doc", "python-werkzeug-doc", "python-pygments-doc", "developers-reference",
    "zsh-doc", "python-lxml-doc", "debian-policy", "sphinx-doc", "python-django-doc",
    "apache2-doc", "python-jinja2-doc", "vim-doc")
SUFFIX = ".docs.test"
VOLATILE = (
    '<div class="ad"><a href=\'http://ads.example/click?id=<!--# echo var="request_id" -->\'>'
    '<!--# if expr="$request_id = /^[0-7]/" -->Cheap flights to anywhere this week'
    '<!--# else -->Learn a language in seven days<!--# endif --></a></div>\n'
    '<p>Served <!--# echo var="date_local" --> to visitor '
    '<!--# echo var="connection" -->.<!--# echo var="connection_requests" --></p>\n')


def ensure_packages(packages: Iterable[str]) -> None:
    """Install the Debian packages not installed yet, one apt-get under the tests' lock."""
    missing = [p for p in packages if not _installed(p)]
    if not missing:
        return
    with open(APT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [p for p in missing if not _installed(p)]
        if not missing:
            return
        install = ["apt-get", "install", "-y", "--no-install-recommends",
                   "-o", "DPkg::Lock::Timeout=600", *missing]
        if subprocess.run(install, env=APT_ENV, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update"], env=APT_ENV, capture_output=True, check=True)
            subprocess.run(install, env=APT_ENV, capture_output=True, check=True)


def _installed(package: str) -> bool:
    run = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", package], capture_output=True,
                         text=True)
    # "install ok installed"; a package dpkg only knows of says "unknown ok not-installed"
    return run.returncode == 0 and run.stdout.split()[-1:] == ["installed"]


@dataclass
class DocSite:
    package: str
    root: Path  # the document root: the package's directory under /usr/share/doc (or a copy)
    homepage_path: str  # the doc-base Index, below root
    paths: list[str] = field(default_factory=list)  # every html page, below root
    source: Path | None = None  # a copy's original tree

    @property
    def host(self) -> str:
        return self.package + SUFFIX

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    @property
    def homepage(self) -> str:
        return self.url(self.homepage_path)


def doc_site(package: str) -> DocSite | None:
    """The package's html documentation as a site, from its doc-base Index (None if it
    declares no html index under /usr/share/doc)."""
    listed = subprocess.run(["dpkg-query", "-L", package], capture_output=True, text=True)
    indexes = []
    for line in listed.stdout.splitlines():
        if line.startswith(f"{DOC_BASE}/") and Path(line).is_file():
            text = Path(line).read_text(encoding="utf-8", errors="replace")
            indexes += re.findall(r"^Index:\s*(/usr/share/doc/\S+\.html?)\s*$", text, re.M)
    if not indexes:
        return None
    index = Path(indexes[0])
    root = DOC_ROOT / index.relative_to(DOC_ROOT).parts[0]
    paths = sorted("/" + str(file.relative_to(root)) for file in _files(root)
                   if file.suffix in (".html", ".htm") and not _redirect(file))
    return DocSite(package, root, "/" + str(index.relative_to(root)), paths)


def _redirect(file: Path) -> bool:
    """A stub that sends the reader elsewhere (Texinfo's node aliases): not a page."""
    return b'http-equiv="refresh"' in file.read_bytes()[:4096].lower()


def _files(root: Path) -> Iterator[Path]:
    """Every file under root, through symlinked directories (a package's docs/ often is)."""
    for folder, _dirs, files in os.walk(root, followlinks=True):
        for name in files:
            yield Path(folder) / name


def doc_sites(packages: Iterable[str]) -> list[DocSite]:
    ensure_packages(packages)
    sites = [doc_site(p) for p in packages]
    return [s for s in sites if s is not None and len(s.paths) >= 5]


def copy_site(site: DocSite, to: Path, volatile: bool) -> DocSite:
    """A copy of the site's tree under `to/<package>`: html files copied (with the visit's
    volatile parts when asked), everything else linked."""
    root = to / site.package
    for source in _files(site.root):
        target = root / source.relative_to(site.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix in (".html", ".htm"):
            body = source.read_bytes()
            target.write_bytes(_with_volatile(body) if volatile else body)
        elif source.exists():
            target.symlink_to(source.resolve())
    return DocSite(site.package, root, site.homepage_path, list(site.paths), site.root)


def _with_volatile(body: bytes) -> bytes:
    at = body.lower().rfind(b"</body>")
    block = VOLATILE.encode()
    return body[:at] + block + body[at:] if at >= 0 else body + block


class Nginx:
    """nginx serving `sites` on a free loopback port; its access log: host, uri, status."""

    def __init__(self, sites: list[DocSite], workdir: Path, ssi: bool = False) -> None:
        self.binary = ensure_debian("nginx", "nginx")
        self.sites, self.dir, self.ssi = sites, workdir, ssi
        self.port = free_port()
        self.access_log = workdir / "access.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> str:
        servers = "".join(
            f"  server {{ listen 127.0.0.1:{self.port}; server_name {site.host}; "
            f"root {site.root}; location = / {{ return 404; }} }}\n" for site in self.sites)
        ssi = "ssi on; ssi_last_modified off;" if self.ssi else ""
        user = "user root;" if os.geteuid() == 0 else ""
        return f"""{user}
worker_processes 1;
daemon off;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
  types {{ text/html html htm; text/css css; application/javascript js; image/png png;
          image/svg+xml svg; text/plain txt; }}
  default_type application/octet-stream;
  log_format tsv '$host\\t$request_uri\\t$status';
  access_log {self.access_log} tsv;
  client_body_temp_path {self.dir}/body; proxy_temp_path {self.dir}/proxy;
  fastcgi_temp_path {self.dir}/fastcgi; uwsgi_temp_path {self.dir}/uwsgi;
  scgi_temp_path {self.dir}/scgi;
  index nonexistent-index;  # a site's / is not its homepage: 404, as a failed front page
  etag off; if_modified_since off; add_header Last-Modified "";
  {ssi}
  server {{ listen 127.0.0.1:{self.port} default_server; return 404; }}
{servers}}}
"""

    def __enter__(self) -> Nginx:
        self.dir.mkdir(parents=True, exist_ok=True)
        conf = self.dir / "nginx.conf"
        conf.write_text(self.config(), encoding="utf-8")
        self.proc = subprocess.Popen([self.binary, "-p", str(self.dir), "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not start: {self._errors()}") from None
                time.sleep(0.05)

    def _errors(self) -> str:
        assert self.proc is not None and self.proc.stderr is not None
        log = self.dir / "error.log"
        return (self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None
                else "") + (log.read_text(errors="replace") if log.exists() else "")

    def __exit__(self, *_exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(timeout=30)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def served(self) -> list[tuple[str, str, int]]:
        """(host, uri, status) of every request nginx logged."""
        rows = []
        for line in self.access_log.read_text(encoding="utf-8").splitlines():
            host, uri, status = line.split("\t")
            rows.append((host, uri, int(status)))
        return rows


@contextmanager
def serving(sites: list[DocSite], workdir: Path, ssi: bool = False) -> Iterator[Nginx]:
    with Nginx(sites, workdir, ssi) as server:
        yield server


# --- edits as a person makes them --------------------------------------------------------

SENTENCES = ("This paragraph was revised after a reader pointed out an omission.",
             "See the release notes for what changed in this version.",
             "Note that the behaviour described here is also the default.")
WORDS = ("carefully", "usually", "explicitly", "always", "quickly")
EDITABLE = ("p", "li", "dd", "dt", "td", "h1", "h2", "h3", "a", "em", "span", "pre", "code")
_SKIP = re.compile(r"(^|[-_ ])(footer|ad)($|[-_ ])", re.I)


def edit_pages(site: DocSite, count: int, rng: Random) -> dict[str, str]:
    """Edit `count` pages of a site's copy (copy_site, volatile), one text edit each, at a
    random element with text anywhere in the body but the footer: a sentence added, a word
    added or a word removed. The page is the package's own, edited, re-serialised and given
    its volatile parts again. Returns path -> what was done."""
    assert site.source is not None
    done: dict[str, str] = {}
    for path in rng.sample(site.paths, min(count, len(site.paths))):
        file = site.root / path.lstrip("/")
        tree = lxml_html.fromstring((site.source / path.lstrip("/")).read_bytes())
        body = tree.find(".//body")
        if body is None:
            continue
        spots = [e for e in body.iter(*EDITABLE) if (e.text or "").strip()
                 and not any(_SKIP.search(f"{a.get('id', '')} {a.get('class', '')}")
                             for a in e.iterancestors())]
        if not spots:
            continue
        spot = rng.choice(spots)
        words = spot.text.split(" ")
        kind = rng.choice(("sentence", "word added", "word removed") if len(words) > 2
                          else ("sentence", "word added"))
        if kind == "sentence":
            spot.text = spot.text.rstrip() + " " + rng.choice(SENTENCES) + " "
        elif kind == "word added":
            k = rng.randrange(len(words) + 1)
            spot.text = " ".join(words[:k] + [rng.choice(WORDS)] + words[k:])
        else:
            k = rng.choice([i for i, w in enumerate(words) if w.strip()])
            spot.text = " ".join(words[:k] + words[k + 1:])
        encoding = tree.getroottree().docinfo.encoding or "utf-8"
        file.write_bytes(_with_volatile(lxml_html.tostring(
            tree.getroottree(), encoding=encoding, doctype="<!DOCTYPE html>")))
        block = next((f"{a.tag}#{a.get('id') or a.get('class') or ''}"
                      for a in spot.iterancestors() if a.get("id") or a.get("class")), "body")
        done[path] = f"{kind} in <{spot.tag}> under {block}"
    return done


# --- change detection on the edited trees --------------------------------------------------

@dataclass
class ChangeRun:
    sites: list[DocSite]
    edited: dict[str, str]  # url -> what was edited
    stored: dict[str, int]  # url -> records stored for it, both visits
    served: list[tuple[str, str, int]]  # nginx's access log
    stderr: str


def run_change_detection(workdir: Path, packages: Iterable[str], edits_per_site: int,
                         seed: int = 37) -> ChangeRun:
    """Crawl every page of the packages' trees (volatile parts on), edit some pages, revisit
    every page with the refresh spider, and count each url's stored records."""
    from tests.conftest import scrapy_crawl
    from tianwang.formats.record import iter_records
    from tianwang.formats.store import record_files
    from tianwang.testweb.launcher import write_seeds

    sites = [copy_site(site, workdir / "trees", volatile=True) for site in doc_sites(packages)]
    data = workdir / "data"
    with serving(sites, workdir / "nginx", ssi=True) as web:
        settings = {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(data),
                    "TIANWANG_CHANGES": "1", "TIANWANG_MAX_LEVELS": "1"}
        seeds = write_seeds(workdir / "seeds.txt", [s.url(p) for s in sites for p in s.paths])
        first = scrapy_crawl("site", {"seeds": str(seeds)}, settings, cwd=workdir)
        assert first.returncode == 0, first.stderr[-3000:]
        rng = Random(seed)
        edited = {site.url(path): what for site in sites
                  for path, what in edit_pages(site, edits_per_site, rng).items()}
        second = scrapy_crawl("refresh", {"all": "1"}, settings, cwd=workdir)
        assert second.returncode == 0, second.stderr[-3000:]
        served = web.served()
    stored: dict[str, int] = {}
    for path in record_files(data):
        for record in iter_records(path):
            stored[record.url] = stored.get(record.url, 0) + 1
    return ChangeRun(sites, edited, stored, served, first.stderr + second.stderr)
