"""Peak memory of the record readers on a hostile page.dat (issue 16).

The file: a good record, a record whose header declares `unzip-length: 3221225516` over a
3 MB zlib stream that really inflates to that (3 GiB of zeros), and a good record. A reader
that trusts the header inflates it all. Beside it, the worst honest cases: the two good
records around one as big as a reader takes (MAX_DATA of DATA), its body zeros, random words
or random bytes. `records verify`, `stats` and `dedup` each run in their own process and
their peak RSS is that process's ru_maxrss (os.wait4), beside the same command on a tree of
the two good records only (the baseline: interpreter and imports). Code trees given with
--code are run alternately, so a noisy shared machine hits each alike.

    git archive 8bf7192 | (mkdir -p /tmp/tw-base && tar -x -C /tmp/tw-base)
    python3 bench/hostile_records.py --code before=/tmp/tw-base --code after=.

Every child runs under a 10 GiB address-space cap (RLIMIT_AS), so an old reader cannot take
the shared machine down: it then fails with a MemoryError, which the table shows.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import string
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_DATA = 11 << 20  # tianwang.formats.record.MAX_DATA (not imported: the base has none)
DECLARED = 3221225516  # the number: 3 GiB and 44 bytes
CAP = 10 << 30
DATE = "Sun, 22 Nov 2026 05:16:17 GMT"


def record(
    url: str, data: bytes, declared: int | None = None, stored: bytes | None = None
) -> bytes:
    stored = zlib.compress(data) if stored is None else stored
    unzip = len(data) if declared is None else declared
    head = (f"version: 1.0\nurl: {url}\ndate: {DATE}\nunzip-length: {unzip}\n"
            f"length: {len(stored)}\n\n")
    return head.encode() + stored + b"\n"


def bomb(size: int) -> bytes:
    """A zlib stream of `size` zero bytes, built a MiB at a time (about 3 MB for 3 GiB)."""
    packer = zlib.compressobj(9)
    block = bytes(1 << 20)
    parts = []
    left = size
    while left:
        step = min(left, len(block))
        parts.append(packer.compress(block[:step]))
        left -= step
    parts.append(packer.flush())
    return b"".join(parts)


def words(size: int) -> bytes:
    """`size` bytes of text from 2,000 random words: zlib leaves about half (HTML: a third)."""
    rng = random.Random(16)
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 12)))
                  for _ in range(2000)]
    text = " ".join(rng.choices(vocabulary, k=size // 6)).encode()
    return (text * (size // len(text) + 1))[:size]


def honest(url: str, data: bytes) -> bytes:
    """A record as this checkout's writer encodes it (compressed, or plain when zlib saves
    too little): what a crawl stores."""
    from tianwang.formats.record import Record, encode_record

    return encode_record(Record(url=url, data=data, date=DATE))


def make_trees(root: Path) -> list[tuple[str, Path]]:
    """The baseline, hostile and at-limit trees, filed where the readers look (data_<k>/<host>).
    The at-limit trees hold an honest record as big as a reader takes (MAX_DATA): its body
    zeros, random words (stored ~half as big) or random bytes (which the writer stores plain)."""
    sys.path.insert(0, str(ROOT))
    from tianwang.formats.store import page_path

    good = [record(f"http://hostile.test/{n}", b"HTTP/1.1 200 OK\r\n\r\nhello %d" % n)
            for n in range(2)]
    hostile = record("http://hostile.test/bomb", b"", DECLARED, bomb(DECLARED))
    head = b"HTTP/1.1 200 OK\r\n\r\n"
    biggest = record("http://hostile.test/big", head + bytes(MAX_DATA - len(head)))
    text = honest("http://hostile.test/text", head + words(MAX_DATA - len(head)))
    raw = honest("http://hostile.test/raw", head + random.Random(5).randbytes(MAX_DATA - len(head)))
    trees = []
    for name, blob in (("baseline", good[0] + good[1]), ("hostile", good[0] + hostile + good[1]),
                       ("at-limit", good[0] + biggest + good[1]),
                       ("limit-txt", good[0] + text + good[1]),
                       ("limit-raw", good[0] + raw + good[1])):
        path = page_path(root / name, "hostile.test")
        path.parent.mkdir(parents=True)
        path.write_bytes(blob)
        trees.append((name, root / name))
    size = page_path(root / "hostile", "hostile.test").stat().st_size
    print(f"hostile page.dat: {size:,} bytes, one record declaring unzip-length {DECLARED:,}")
    for name, blob in (("limit-txt", text), ("limit-raw", raw)):
        print(f"{name} record: {len(blob):,} bytes, {MAX_DATA:,} of DATA")
    return trees


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def run(code: Path, args: list[str]) -> tuple[float, float, int, str]:
    """(peak RSS MiB, seconds, exit status, last stderr line) of one command."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:
        # cwd too: `python -m` puts the working directory first on sys.path.
        proc = subprocess.Popen([sys.executable, "-m", "tianwang.cli", *args], env=env, cwd=code,
                                stdout=subprocess.DEVNULL, stderr=err, preexec_fn=_cap)
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
    return usage.ru_maxrss / 1024, seconds, proc.returncode, (lines[-1] if lines else "")[:90]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", default=[], metavar="NAME=DIR",
                        help="a code tree to run (default: after=this checkout)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    codes = [tuple(item.split("=", 1)) for item in args.code] or [("after", str(ROOT))]
    with tempfile.TemporaryDirectory() as temp:
        trees = make_trees(Path(temp))
        outs = iter(range(1 << 30))  # dedup wants a new output directory each time
        commands = [("records verify", lambda tree: ["records", "verify", tree]),
                    ("stats", lambda tree: ["stats", tree]),
                    ("dedup", lambda tree: ["dedup", "--workers", "1",
                                            "--out", f"{temp}/out{next(outs)}", tree])]
        print(f"{'code':8} {'command':15} {'tree':9} {'peak RSS MiB':>12} {'s':>6} exit  last line")
        for _round in range(args.rounds):
            for label, command in commands:
                for name, code in codes:
                    for tree_name, tree in trees:
                        rss, seconds, status, line = run(Path(code), command(str(tree)))
                        print(f"{name:8} {label:15} {tree_name:9} {rss:12.1f} {seconds:6.2f} "
                              f"{status:4}  {line}")


if __name__ == "__main__":
    main()
