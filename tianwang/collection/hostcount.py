"""`tianwang hosts count URL_LIST... --out D0`: pages per site from url lists (seed 004's D0).

Input: url lists, one url a line, plain or gzip (recognised by its magic bytes, whatever the
name; a UTF-8 byte order mark at the start is skipped), from one machine or several: a site
found in several lists is counted once with the sum, as the thesis merged six machines'
counts. Blank lines are skipped; any other line that is not an http(s) url is a bad line,
counted by reason and not fatal:
  not-url       no `http://` or `https://` at the start (leading blanks allowed)
  other-scheme  a url of another scheme (ftp:, mailto:, javascript:, ...)
  empty-host    `http://` with no host (`http:///x`, `http://user@/`)
  bad-port      a port that is not a number up to 65535
  not-utf8      a host that is not UTF-8 (a GBK name, a cut byte sequence)
  control-char  a host with a control character or a line separator (U+2028...): it could
                not be written as one line of D0

Output, D0: one line per site, `<site>\\t<pages>\\n`, sorted by site in code point order
(= byte order, `LC_ALL=C sort`), each site once, UTF-8. A site is `scheme://host:port/`: the
port always written (`http://www.pku.edu.cn:80/`), the host as a browser reads it
(tianwang.hosts.parse_url_host, the WHATWG host parser): percent-decoded, IDNA-encoded
(`xn--` labels), lowercase, one trailing dot dropped (`www.pku.edu.cn.` is the same DNS name),
an IPv4 address in dotted-decimal (`http://2130706433/` counts as `http://127.0.0.1:80/`), an
IPv6 address in brackets, userinfo dropped. So count, not clean, lowercases and encodes
names, and every spelling of one host is one site. A host the parser refuses (forbidden
characters, an empty label in a non-ASCII name, a bad IPv4 number) is still a site of D0,
written lowercase as it was spelled, so that `hosts clean` removes it with its reason.
tianwang.collection.sitelist reads and writes this format.

With --merge the inputs are D0 files instead (counted on each machine, the lists staying
where they are): their pages are summed site by site, each file checked line by line.

The count streams: plain files are cut into byte ranges (a range owns the lines that start
in it) and gzip files into decompressed chunks, spread over worker processes; each worker
counts `scheme://authority` byte strings with a bytes regex and a Counter, and sends its
Counter once at the end. Memory grows with the number of distinct authorities (about the
number of hosts), never with the number of urls. D0 is written whole or not at all.
"""

from __future__ import annotations

import gzip
import multiprocessing
import os
import queue
import re
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tianwang.collection.sitelist import format_site, read_sites
from tianwang.hosts import DEFAULT_PORTS, MalformedURL, parse_url_host
from tianwang.progress import Progress

CHUNK = 8 << 20  # bytes per task: large enough that the per-task cost is nothing
MAX_LINE = 1 << 20  # of a longer line only this much is read: its host is at its start
EXAMPLE_BYTES = 60  # of a bad line, this much is shown: enough to recognise it, one screen line
# The scheme and authority of a url line: the authority ends where the URL standard ends it.
# Searched in "\n" + data: a literal first character lets the regex engine skip to it.
_URL = re.compile(rb"\n[ \t]*([Hh][Tt][Tt][Pp][Ss]?://[^/?#\\\s]*)")
_OTHER = re.compile(rb"(?m)^(?![ \t]*(?i:https?)://)[ \t]*(.*?)[ \t\r]*$")
# An ASCII name and port: what parse_url_host returns lowercased unless the name is a number.
_PLAIN = re.compile(rb"((?i:https?))://([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?)(?::([0-9]{1,5}))?")
_NUMBER = re.compile(rb"[0-9]+|0[xX][0-9A-Fa-f]*")
_SCHEME = re.compile(rb"([A-Za-z][A-Za-z0-9+.-]*):")
# What no line of a site list may hold: controls, and what str.splitlines() splits on.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark that an editor may put before the first url


class CountError(Exception):
    """An input that cannot be read; nothing is written."""


@dataclass
class Tally:
    """What one process counted: authorities, bad lines by reason, the first of each."""

    authorities: Counter[bytes] = field(default_factory=Counter)
    bad: Counter[str] = field(default_factory=Counter)
    examples: dict[str, bytes] = field(default_factory=dict)

    def add(self, data: bytes) -> None:
        found = _URL.findall(b"\n" + data)
        self.authorities.update(found)
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        if len(found) < lines:  # rare: only then look at the other lines
            self._bad_lines(data)

    def _bad_lines(self, data: bytes) -> None:
        for match in _OTHER.finditer(data):
            line = match[1]
            if line:
                scheme = _SCHEME.match(line)
                other = scheme is not None and scheme[1].lower() not in (b"http", b"https")
                self.note("other-scheme" if other else "not-url", line, 1)

    def note(self, reason: str, example: bytes, count: int) -> None:
        self.bad[reason] += count
        self.examples.setdefault(reason, example[:EXAMPLE_BYTES])

    def merge(self, other: Tally) -> None:
        self.authorities.update(other.authorities)
        self.bad.update(other.bad)
        for reason, example in other.examples.items():
            self.examples.setdefault(reason, example)


@dataclass
class CountResult:
    sites: dict[str, int]
    urls: int
    bad: Counter[str]
    examples: dict[str, bytes]


# -- the host of an authority ------------------------------------------------------------


def site_of(key: bytes) -> tuple[str | None, str]:
    """The D0 site of a `scheme://authority` byte string, or (None, bad-line reason)."""
    plain = _PLAIN.fullmatch(key)
    if plain is not None and _plain_ok(plain):  # most keys: nothing to decode or map
        scheme, host = plain[1].decode("ascii").lower(), plain[2].decode("ascii").lower()
        port = int(plain[3]) if plain[3] else DEFAULT_PORTS[scheme]
        return format_site(scheme, _drop_root_dot(host), port), ""
    return _parsed_site(key)


def _plain_ok(plain: re.Match[bytes]) -> bool:
    """True when parse_url_host would return the name as it is, only lowercased."""
    last = plain[2].rstrip(b".").rpartition(b".")[2]
    return (not _NUMBER.fullmatch(last)) and (not plain[3] or int(plain[3]) <= 65535)


def _parsed_site(key: bytes) -> tuple[str | None, str]:
    scheme_bytes, _, authority = key.partition(b"://")
    scheme = scheme_bytes.decode("ascii").lower()
    try:
        text = authority.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not-utf8"
    try:
        parsed = parse_url_host(f"{scheme}://{text}/")
    except MalformedURL:
        return _unparsed_site(scheme, text)
    host = f"[{parsed.host}]" if ":" in parsed.host else _drop_root_dot(parsed.host)
    return format_site(scheme, host, parsed.port), ""


def _unparsed_site(scheme: str, authority: str) -> tuple[str | None, str]:
    """A host the URL standard refuses stays a site (clean says why), unless it has none."""
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("[") and "]" in hostport:
        inside, _, after = hostport.partition("]")
        host, port_text = inside + "]", after[1:] if after.startswith(":") else after
    elif hostport.startswith("["):
        host, port_text = hostport, ""
    else:
        host, _, port_text = hostport.partition(":")
    if port_text and not (port_text.isascii() and port_text.isdigit()
                          and int(port_text) <= 65535):
        return None, "bad-port"
    if not host:
        return None, "empty-host"
    if _CONTROL.search(host):
        return None, "control-char"
    port = int(port_text) if port_text else DEFAULT_PORTS[scheme]
    return format_site(scheme, _drop_root_dot(host.lower()), port), ""


def _drop_root_dot(host: str) -> str:
    return host[:-1] if host.endswith(".") and len(host) > 1 else host


def finish(tally: Tally) -> CountResult:
    """Fold the authorities into sites (every spelling of a host is one site)."""
    sites: Counter[str] = Counter()
    urls = 0
    for key, count in tally.authorities.items():
        site, reason = site_of(key)
        if site is None:
            tally.note(reason, key, count)
        else:
            sites[site] += count
            urls += count
    return CountResult(dict(sites), urls, tally.bad, tally.examples)


# -- reading the lists -------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    weight: int  # input bytes this task stands for (compressed bytes for gzip)
    path: str = ""
    start: int = 0
    end: int = 0
    data: bytes = b""


def check_inputs(paths: list[str]) -> list[tuple[str, bool, int]]:
    """(path, is gzip, size) of each list; CountError naming the first unreadable one."""
    checked = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                magic = handle.read(2)
                size = os.fstat(handle.fileno()).st_size
        except OSError as exc:
            raise CountError(f"{path}: {exc.strerror or exc}") from None
        if os.path.isdir(path):
            raise CountError(f"{path}: is a directory")
        checked.append((path, magic == GZIP_MAGIC, size))
    return checked


def tasks(inputs: list[tuple[str, bool, int]]) -> Iterator[Task]:
    for path, is_gzip, size in inputs:
        if is_gzip:
            yield from _gzip_tasks(path)
        else:
            for start in range(0, size, CHUNK):
                yield Task(min(CHUNK, size - start), path, start, min(start + CHUNK, size))


def _gzip_tasks(path: str) -> Iterator[Task]:
    """Decompressed chunks cut after a newline; a line is never split between two tasks."""
    with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as unzipped:
        carry, skipping, consumed = b"", False, 0
        while block := _unzip(unzipped, path):
            if not consumed and not carry:
                block = block.removeprefix(BOM)
            if skipping:  # the rest of a long line whose head is in carry
                newline = block.find(b"\n")
                if newline < 0:
                    continue
                block, skipping = block[newline:], False
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # no line end yet: of a long line keep the head, enough for its host
                carry += block
                if len(carry) > MAX_LINE:
                    carry, skipping = carry[:MAX_LINE], True
                continue
            data, carry = carry + block[:cut], block[cut:]
            yield Task(raw.tell() - consumed, data=data)
            consumed = raw.tell()
        if carry:
            yield Task(raw.tell() - consumed, data=carry)


def _unzip(unzipped: gzip.GzipFile, path: str) -> bytes:
    try:
        return unzipped.read(CHUNK)
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
        raise CountError(f"{path}: {exc}") from None


def read_task(task: Task) -> bytes:
    """The task's bytes: its own data, or the lines that start in its byte range."""
    if not task.path:
        return task.data
    with open(task.path, "rb") as handle:
        if task.start:
            handle.seek(task.start - 1)
            _skip_line(handle, task.end)  # a line begun before start is the range before's
        begin = handle.tell()
        if begin >= task.end:
            return b""
        data = handle.read(task.end - begin)
        if not data.endswith(b"\n"):
            data += handle.readline(MAX_LINE)  # the head of the last line is enough
        return data if task.start else data.removeprefix(BOM)


def _skip_line(handle: Any, end: int) -> None:
    """Move past the next newline, or to end if there is none before it (in bounded reads)."""
    while handle.tell() < end:
        piece = handle.readline(MAX_LINE)
        if not piece or piece.endswith(b"\n"):
            return


# -- running -----------------------------------------------------------------------------


def count_lists(paths: list[str], workers: int, progress: Progress | None = None) -> CountResult:
    """Count the sites of the url lists on `workers` processes (1: in this process)."""
    inputs = check_inputs(paths)
    total = sum(size for _, _, size in inputs)
    report = progress or (lambda phase, done, total: None)
    if workers <= 1:
        tally = _count_here(tasks(inputs), total, report)
    else:
        tally = _count_in_workers(tasks(inputs), workers, total, report)
    return finish(tally)


def _count_here(work: Iterator[Task], total: int, report: Progress) -> Tally:
    tally, done = Tally(), 0
    for task in work:
        tally.add(_read(task))
        done += task.weight
        report("count", done, total)
    return tally


def _read(task: Task) -> bytes:
    try:
        return read_task(task)
    except OSError as exc:
        raise CountError(f"{task.path}: {exc.strerror or exc}") from None


def _worker(inbox: Any, outbox: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers
    tally, error = Tally(), None
    while (task := inbox.get()) is not None:
        if error is None:  # after an error, drain the queue so the feeder never blocks
            try:
                tally.add(read_task(task))
            except OSError as exc:
                error = f"{task.path}: {exc.strerror or exc}"
            except Exception as exc:  # whatever it is, the parent must hear of it
                error = f"{task.path or 'a gzip chunk'}: {type(exc).__name__}: {exc}"
        outbox.put(("done", task.weight))
    outbox.put(("error", error) if error else ("tally", tally))


def _count_in_workers(work: Iterator[Task], workers: int, total: int, report: Progress) -> Tally:
    context = multiprocessing.get_context()
    inbox, outbox = context.Queue(maxsize=2 * workers), context.Queue()
    procs = [context.Process(target=_worker, args=(inbox, outbox), daemon=True)
             for _ in range(workers)]
    for proc in procs:
        proc.start()
    feeder = _Feeder(work, inbox, workers)
    feeder.start()
    try:
        tally = _collect(outbox, procs, total, report)
    except BaseException:  # interrupted, or a worker failed: stop everything, wait for nothing
        inbox.cancel_join_thread()
        for proc in procs:
            proc.terminate()
        raise
    feeder.join()
    for proc in procs:
        proc.join()
    if feeder.error is not None:
        raise feeder.error
    return tally


def _collect(outbox: Any, procs: list[Any], total: int, report: Progress) -> Tally:
    tally, done, finished, errors = Tally(), 0, 0, []
    while finished < len(procs):
        try:
            kind, value = outbox.get(timeout=1.0)
        except queue.Empty:
            if any(proc.exitcode not in (None, 0) for proc in procs):  # killed, not finished
                raise CountError("a counting process died") from None
            continue
        if kind == "done":
            done += value
            report("count", done, total)
            continue
        finished += 1
        if kind == "error":
            errors.append(value)
        else:
            tally.merge(value)
    if errors:
        raise CountError(errors[0])
    return tally


class _Feeder(threading.Thread):
    """Puts the tasks on the bounded queue (decompressing gzip lists), then one stop a worker."""

    def __init__(self, work: Iterator[Task], inbox: Any, workers: int) -> None:
        super().__init__(daemon=True)
        self.work, self.inbox, self.workers = work, inbox, workers
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            for task in self.work:
                self.inbox.put(task)
        except Exception as exc:  # a corrupt gzip list: reported by the caller
            self.error = exc if isinstance(exc, CountError) else CountError(str(exc))
        for _ in range(self.workers):
            self.inbox.put(None)


def merge_site_lists(paths: list[str]) -> CountResult:
    """Sum D0 files counted apart (one a machine, as the thesis did), site by site."""
    sites: Counter[str] = Counter()
    for path in paths:
        for site, pages in read_sites(path):
            sites[site] += int(pages)
    return CountResult(dict(sites), sum(sites.values()), Counter(), {})


# -- the command -------------------------------------------------------------------------


def count_lines(result: CountResult, lists: int, seconds: float) -> list[str]:
    bad = sum(result.bad.values())
    lines = [f"D0: {len(result.sites)} sites from {result.urls} urls in {lists} "
             f"list{'s' if lists != 1 else ''}, {bad} bad lines"]
    for reason, count in sorted(result.bad.items(), key=lambda item: (-item[1], item[0])):
        example = result.examples[reason].decode("utf-8", "backslashreplace")
        lines.append(f"bad lines, {reason}: {count} (first: {example!r})")
    rate = (result.urls + bad) / seconds if seconds > 0 else 0.0
    lines.append(f"time: {seconds:.1f} s, {rate:.0f} lines/s")
    return lines
