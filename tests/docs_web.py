"""Real pages on loopback: HTML documentation trees Debian ships, mirrored and served by nginx.

The trees are Debian's documentation packages (the Python 3.11 library reference and the
PostgreSQL 15 manual: 10 to 100 KB pages written by Sphinx and DocBook), installed by the
test run itself when missing, as tests/redis_server.py installs redis-server; nothing comes
from the internet at run time. Each tree is a host under .test.

`mirror_docs` makes the served tree: nginx serves each installed tree as it is, and GNU wget
mirrors it by following links from the tree's index page, keeping the pages a crawler stores
(HTML and plain text: `ACCEPT`), so the mirror holds exactly the pages reachable from the
index, found by a crawler that shares no code with tianwang. `DocsWeb` then serves the
mirror through nginx, used as the crawlers' HTTP proxy (a request line `GET http://host/path`
is served from the host's directory), with an access log a test reads the crawl's requests
from (`requests`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tests.redis_server import ensure_debian, free_port


@dataclass(frozen=True)
class Tree:
    host: str
    package: str
    root: Path  # the installed tree
    index: str  # its start page


TREES = (
    Tree("python.docs.test", "python3.11-doc", Path("/usr/share/doc/python3.11/html"),
         "/index.html"),
    Tree("postgresql.docs.test", "postgresql-doc-15",
         Path("/usr/share/doc/postgresql-doc-15/html"), "/index.html"),
)
# What wget mirrors: pages (HTML, plain text) and directories, never images, styles,
# scripts or archives; the same pages the `site` spider stores (TIANWANG_STORE_TYPES).
ACCEPT = r"(/|\.html|\.htm|\.txt)$"
# One access log line: host, status, path as requested, bytes, the connection's serial number
# and its port, user agent (tab-separated).
BARRIER_HOST = "barrier.invalid"  # the default server's: a 404, left out of requests()
LOG_FORMAT = ("$host\\t$status\\t$request_uri\\t$body_bytes_sent\\t$connection\\t$server_port"
              "\\t$http_user_agent")


def ensure_trees() -> tuple[Tree, ...]:
    """The trees, their packages installed if missing (the lock and retry of ensure_debian)."""
    for tree in TREES:
        if not (tree.root / tree.index.lstrip("/")).is_file():
            # ensure_debian installs by a command's absence; a tree has none, so a path
            # that is never a command makes it install the package once the lock is held.
            _install(tree.package, tree.root / tree.index.lstrip("/"))
    return TREES


def _install(package: str, marker: Path) -> None:
    import fcntl

    from tests.redis_server import APT_ENV, APT_LOCK

    with open(APT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file():
            return
        install = ["apt-get", "install", "-y", "--no-install-recommends", package]
        if subprocess.run(install, env=APT_ENV, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update"], env=APT_ENV, capture_output=True, check=True)
            subprocess.run(install, env=APT_ENV, capture_output=True, check=True)
    if not marker.is_file():
        raise RuntimeError(f"{marker} is still missing after apt-get install {package}")


def ensure_wget() -> str:
    return ensure_debian("wget", "wget")


def wget_command(proxy: str, into: Path, urls: list[str]) -> list[str]:
    """GNU wget's recursive mirror of `urls` through `proxy` (robots.txt obeyed, as the
    crawlers do; one connection, kept alive), the pages of ACCEPT only."""
    return [ensure_wget(), "--recursive", "--level=inf", "--no-parent", "--no-verbose",
            "--execute", "use_proxy=on", "--execute", f"http_proxy={proxy}",
            "--accept-regex", ACCEPT, "--directory-prefix", str(into), *urls]


class DocsWeb:
    """nginx serving one directory per host (`roots`), as a proxy on a free loopback port."""

    def __init__(self, roots: dict[str, Path], directory: Path, ports: int = 1) -> None:
        self.roots, self.directory = roots, directory
        self.ports = [free_port() for _ in range(ports)]  # all serve the same
        self.port = self.ports[0]
        self.address = f"http://127.0.0.1:{self.port}"
        self.access_log = directory / "access.log"
        self._barriers = 0  # requests of the test's own, before the log is read
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> DocsWeb:
        nginx = ensure_debian("nginx", "nginx")
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "nginx.conf"
        config.write_text(self.config(), encoding="utf-8")
        self.proc = subprocess.Popen([nginx, "-p", str(self.directory), "-c", str(config)],
                                     stderr=subprocess.PIPE)
        self._wait_ready()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            if self.proc.stderr is not None:
                self.proc.stderr.close()

    def config(self) -> str:
        d = self.directory
        listen = " ".join(f"listen 127.0.0.1:{port};" for port in self.ports)
        servers = "\n".join(f"    server {{ {listen} server_name {host}; root {root}; }}"
                             for host, root in self.roots.items())
        default = " ".join(f"listen 127.0.0.1:{port} default_server;" for port in self.ports)
        # As root, nginx's workers would switch to `nobody`, who cannot read a test's
        # temporary directory: they stay root (a loopback test server only).
        user = "user root;\n" if os.geteuid() == 0 else ""
        return f"""{user}daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    types {{ text/plain txt; }}
    log_format tabs "{LOG_FORMAT}";
    access_log {d}/access.log tabs;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    keepalive_requests 100000;
    sendfile on;
    server {{ {default} return 404; }}
{servers}
}}
"""

    def _wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                error = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"nginx exited {self.proc.returncode}: {error}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"nginx did not listen on {self.port} in {timeout} s")

    def log_size(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def requests(self, since: int = 0) -> list[dict]:
        """The access log's lines from byte `since` on: host, status, path, bytes, the
        connection's serial number and port, agent.

        nginx writes a line just after a response's last bytes, and a client that has read
        them may exit before: on a loaded machine a crawl's last line was missing. So a
        request of the test's own goes first, and the lines are read once its line is in:
        the one worker finishes what it was doing (the log line included) before it takes
        the next request. (Once nginx has stopped, its lines are all in.)"""
        if self.proc is not None and self.proc.poll() is None:
            self._barrier()
        with open(self.access_log, "rb") as log:
            log.seek(since)
            lines = log.read().decode("utf-8", "replace").splitlines()
        found = []
        for line in lines:
            host, status, path, size, connection, port, agent = line.split("\t", 6)
            if host != BARRIER_HOST:
                found.append({"host": host, "status": int(status), "path": path,
                              "bytes": int(size), "connection": int(connection),
                              "port": int(port), "agent": agent})
        return found

    def _barrier(self, timeout: float = 120) -> None:
        self._barriers += 1
        path = f"/barrier-{self._barriers}"
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: {BARRIER_HOST}\r\n\r\n".encode())
            while sock.recv(65536):
                pass
        mark = f"{BARRIER_HOST}\t404\t{path}\t".encode()
        deadline = time.monotonic() + timeout
        while mark not in self.access_log.read_bytes():
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not log {path} in {timeout} s")
            time.sleep(0.01)


def mirror_docs(into: Path, trees: tuple[Tree, ...] | None = None) -> dict[str, Path]:
    """wget's mirror of each installed tree (see the module's docstring), host -> directory;
    the files are the pages reachable from the tree's index page."""
    trees = trees or ensure_trees()
    with DocsWeb({tree.host: tree.root for tree in trees}, into / "origin") as origin:
        urls = [f"http://{tree.host}{tree.index}" for tree in trees]
        done = subprocess.run(wget_command(origin.address, into / "mirror", urls),
                              capture_output=True)
    if done.returncode not in (0, 8):  # 8: a server answered an error (a tree's broken link)
        raise RuntimeError(f"wget exited {done.returncode}: {done.stderr[-2000:]!r}")
    return {tree.host: into / "mirror" / tree.host for tree in trees}


def tree_paths(root: Path) -> set[str]:
    """The url paths of a mirrored tree's files ("/a/b.html"), robots.txt aside."""
    return {"/" + path.relative_to(root).as_posix() for path in root.rglob("*")
            if path.is_file() and path.name != "robots.txt"}


def copy_tree(source: Path, into: Path) -> Path:
    shutil.copytree(source, into, symlinks=False)
    return into
