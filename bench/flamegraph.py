"""A flame graph of the default crawl (the `site` spider, whole stack), kept in bench/.

    pip install py-spy
    python bench/flamegraph.py [--hosts 200] [--seed 1] [--out bench/flame-default-crawl.svg]

bench/crawl.py's crawl (no delay, 32 requests, robots.txt obeyed, storage on) of the test web,
sampled by py-spy (100 samples a second, the crawl process only: the test web runs in its own
process). Open the SVG in a browser: the width of a frame is its share of the crawl's time.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import COMMON, site_command  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "flame-default-crawl.svg")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        print("bench/flamegraph.py: py-spy is not installed (pip install py-spy)", file=sys.stderr)
        return 2
    common = {key: value for key, value in COMMON.items() if key != "EXTENSIONS"}
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(args.seed, args.hosts) as web:
        seeds = write_seeds(Path(tmp) / "seeds.txt",
                            SyntheticWeb(args.seed, args.hosts).homepages())
        settings = {**common, "TIANWANG_PROXY": web.address,
                    "TIANWANG_DATA_DIR": str(Path(tmp) / "data")}
        crawl, env = site_command(seeds, settings)
        command = [py_spy, "record", "--rate", "100", "--format", "flamegraph",
                   "--output", str(args.out), "--", *crawl]
        subprocess.run(command, cwd=tmp, env=env, check=True)
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
