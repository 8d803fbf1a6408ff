"""Change detection and PERS on real pages: Debian's html documentation trees served by nginx.

    python3 bench/realdocs.py changes [--edits 10] [--seed 37]
    python3 bench/realdocs.py pers

changes: tests/realdocs.py's run (every page of BENCH_PACKAGES' trees crawled with nginx's SSI
clock, visitor number and rotating ad in it, --edits pages a site edited by script, every page
revisited by the refresh spider): the share of edited pages stored again and of unchanged ones
stored again, from the records. Then, on the same pages, the detectors side by side: each
page's first stored body against a fetch after the edits, judged by the body's MD5, by the
former detector (the text of the blocks labelled content) and by the current one
(tianwang.analysis.blocks.content_hash); and the same three on the --changing test web's
model (every html page, day after day for 14 days, against the truth's versions).

pers: see bench/homepage.py (the test web) and `real` there (these trees).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.realdocs import BENCH_PACKAGES, run_change_detection  # noqa: E402
from tianwang.analysis.blocks import content_hash, segment  # noqa: E402
from tianwang.formats.record import iter_records  # noqa: E402
from tianwang.formats.store import record_files  # noqa: E402
from tianwang.testweb.changing import CLOCK_START, DAY  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402


def former(body: bytes, charset: str | None) -> str:
    """The detector before issue 37: the text of the blocks labelled content, as it was."""
    text = "\n".join(b.text for b in segment(body, charset) if b.label == "content")
    return hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()


DETECTORS = {"body MD5": lambda body, charset: hashlib.md5(body).hexdigest(),
             "content blocks (former)": former,
             "all but named boilerplate, masked (current)":
                 lambda body, charset: content_hash(segment(body, charset))}


def table(rows: dict[str, tuple[int, int, int, int]]) -> None:
    print("| detector | edited pages seen changed | unchanged pages seen changed |")
    print("|---|---|---|")
    for name, (hit, edited, false, unchanged) in rows.items():
        print(f"| {name} | {hit} of {edited} ({hit / edited:.1%}) | "
              f"{false} of {unchanged} ({false / unchanged:.1%}) |")


def changes(edits: int, seed: int) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as work:
        run = run_change_detection(Path(work), BENCH_PACKAGES, edits, seed)
        pages = [site.url(path) for site in run.sites for path in site.paths]
        edited = [u for u in pages if u in run.edited]
        unchanged = [u for u in pages if u not in run.edited]
        print(f"{len(run.sites)} sites ({', '.join(s.package for s in run.sites)}), "
              f"{len(pages)} pages, {len(edited)} edited; {time.monotonic() - started:.0f} s")
        again = sum(run.stored.get(u) == 2 for u in edited)
        wrong = sum(run.stored.get(u, 0) != 1 for u in unchanged)
        print(f"crawl: edited pages stored again **{again} of {len(edited)}** "
              f"({again / len(edited):.1%}); unchanged pages stored again **{wrong} of "
              f"{len(unchanged)}** ({wrong / len(unchanged):.1%})")
        for url in edited:
            if run.stored.get(url) != 2:
                print(f"  missed {url}: {run.edited[url]}")
        first: dict[str, bytes] = {}
        for path in record_files(Path(work) / "data"):
            for record in iter_records(path):
                first.setdefault(record.url, record.http.body)
        from tests.realdocs import serving  # the same trees, served again for the fetches

        rows = {}
        with serving(run.sites, Path(work) / "nginx2", ssi=True) as web:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler(
                {"http": web.address}))
            later = {u: opener.open(u).read() for u in pages}
        for name, detect in DETECTORS.items():
            seen = {u: detect(first[u], None) != detect(later[u], None) for u in pages}
            rows[name] = (sum(seen[u] for u in edited), len(edited),
                          sum(seen[u] for u in unchanged), len(unchanged))
        print("\nThe same pages, each detector (first stored body against a fetch after the "
              "edits):\n")
        table(rows)
    testweb()


def testweb(seed: int = 13, hosts: int = 12, pages: int = 60, days: int = 14) -> None:
    web = SyntheticWeb(seed, hosts, pages, changing=True)
    assert web.changing is not None
    truth = [r for r in web.truth(bodies=False) if r["blocks"]]
    counts = {name: [0, 0, 0, 0] for name in DETECTORS}
    for page in truth:
        url, charset = page["url"], page["charset"] or "utf-8"
        bodies = [web.changing.served(url, CLOCK_START + d * DAY + 3600 * (d % 5)).body
                  for d in range(days + 1)]
        versions = [web.changing.version(url, CLOCK_START + d * DAY + 3600 * (d % 5))
                    for d in range(days + 1)]
        for name, detect in DETECTORS.items():
            hashes = [detect(body, charset) for body in bodies]
            for d in range(days):
                changed = versions[d + 1] != versions[d]
                seen = hashes[d + 1] != hashes[d]
                row = counts[name]
                row[0 if changed else 2] += seen
                row[1 if changed else 3] += 1
    print(f"\nThe --changing test web's model (seed {seed}, {hosts} hosts, {len(truth)} html "
          f"pages, {days} daily visits each, a visit at a varying hour; changed = the truth's "
          "version moved):\n")
    table({name: tuple(row) for name, row in counts.items()})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("changes", "testweb"))
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    if args.what == "changes":
        changes(args.edits, args.seed)
    else:
        testweb()
    return 0


if __name__ == "__main__":
    sys.exit(main())
