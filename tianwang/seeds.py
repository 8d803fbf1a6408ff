"""Reading the seed list a crawl starts from: a file of urls, or a comma-separated list."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from tianwang.errors import StartupError
from tianwang.urls import canonical_url

# Names no DNS resolves (RFC 6761): the test web's, when it serves them (`first-crawl`).
RESERVED_SUFFIX = ".test"
# A value ending like this names a file, so a missing one is an error, not a host name.
_FILE_SUFFIXES = (".txt", ".lst", ".list", ".csv", ".seeds")


class SeedError(StartupError):
    """The seed argument cannot be used; the message says which entry and why."""


def load_seeds(value: str | None) -> list[str]:
    """Seed urls from a file (one a line, # comments) or a comma-separated list.

    A bare host ("www.example.com") means its homepage. Duplicates are dropped, order kept.
    Every bad entry is reported at once, a file's by its line number ("seeds.txt:3: ...").
    """
    if not value or not value.strip():
        raise SeedError("no seeds: pass -a seeds=FILE or -a seeds=URL,URL,...")
    seeds, bad = [], []
    for where, entry in _read_entries(value.strip()):
        try:
            seeds.append(normalize_seed(entry))
        except SeedError as exc:
            bad.append(f"{where}{exc}")
    if bad:
        # One line per bad entry, as a compiler lists errors: all of them, not the first.
        raise SeedError("\n".join(bad) if len(bad) == 1 else
                        f"{len(bad)} bad seed entries:\n" + "\n".join(bad))
    seeds = list(dict.fromkeys(seeds))
    if not seeds:
        raise SeedError(f"no seeds in {value!r}")
    return seeds


def _read_entries(value: str) -> list[tuple[str, str]]:
    """(where, entry) pairs: "FILE:LINE: " for a file's lines, "" for a list's entries."""
    path = Path(value)
    if _is_file(path):
        try:
            # utf-8-sig: a BOM at the start (Windows editors write one) is not part of a url.
            lines = path.read_text(encoding="utf-8-sig").splitlines()
        except UnicodeDecodeError as exc:
            raise SeedError(f"seeds file {value} is not UTF-8 (byte {exc.start})") from None
        return [(f"{value}:{number}: ", line.strip()) for number, line in enumerate(lines, 1)
                if line.strip() and not line.strip().startswith("#")]
    if _looks_like_path(value):
        raise SeedError(f"seeds file not found: {value}")
    return [("", entry.strip()) for entry in value.split(",") if entry.strip()]


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a long comma list is too long to be a file name
        return False


def _looks_like_path(value: str) -> bool:
    """True for "seeds.txt", "./s", "/tmp/s", "conf/s"; False for "www.a.com/news"."""
    if "," in value or "://" in value:
        return False
    if value.lower().endswith(_FILE_SUFFIXES):
        return True
    first = value.split("/")[0]
    return "/" in value and (first in ("", ".", "..", "~") or "." not in first)


def normalize_seed(entry: str) -> str:
    """An absolute http(s) url for a seed entry, or SeedError naming the entry."""
    url = entry if "://" in entry else f"http://{entry}"
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError on a bad port
    except ValueError:
        raise SeedError(f"malformed seed url: {entry!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or " " in parts.netloc:
        raise SeedError(f"malformed seed url: {entry!r} (need http(s)://host/...)")
    if port == 0:
        raise SeedError(f"malformed seed url: {entry!r} (port 0)")
    path = parts.path or "/"
    rebuilt = f"{parts.scheme}://{parts.netloc.lower()}{path}"
    if parts.query:
        rebuilt += f"?{parts.query}"
    return canonical_url(rebuilt)


def check_reachable(seeds: list[str], proxy: str) -> None:
    """SeedError when every seed is under .test and no proxy is set: no DNS resolves them,
    so the crawl could fetch nothing; they are the test web's, which its proxy serves."""
    if proxy or not seeds:
        return
    if all((urlsplit(url).hostname or "").endswith(RESERVED_SUFFIX) for url in seeds):
        raise SeedError(
            f"the seeds are under {RESERVED_SUFFIX}, names no DNS resolves: they are the test "
            "web's (tianwang first-crawl), crawled through its proxy: give "
            "-s TIANWANG_PROXY=http://127.0.0.1:PORT, the address it printed")
