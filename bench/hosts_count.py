"""`tianwang hosts count` on 10 million generated urls: urls/s and peak RSS, as a user runs it.

    python bench/hosts_count.py [--urls 10000000] [--hosts 100000] [--rounds 1] [--gzip]

The url list is generated once (deterministic: seed 1) and cached under
/work/bench-data/hosts/ (not in the repository). Host sizes follow a power law (Zipf, exponent
1: a few hosts with hundreds of thousands of urls, tens of thousands with a handful), names
spread over .com, .net, .cn, .com.cn, .edu.cn, ...; 2% https, 1% on another port, 1% with an
upper-case host, one line in 100,000 not a url; `--gzip` counts a gzipped copy (decompressed
by the command's main process, chunks sent to the workers). Each run is the real command in a
subprocess: the default (one worker process per core) and the baseline, `--workers 1`
(counting in the command's own process), in the same invocation. Peak RSS is getrusage's
ru_maxrss of the command's process tree, taken in a fresh wrapper process per run: the
largest single process.
CPU seconds (user+sys of the whole tree) are printed too: the machine may be shared, and
urls per CPU second is what load does not change; "cores free" (one CPU-bound loop's time
against two run at once, before and after) says how many cores the counting could have had.
The D0 written is checked: its pages add up to the urls generated less the bad lines.
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path("/work/bench-data/hosts")
TLDS = [".com", ".com", ".com", ".net", ".cn", ".com.cn", ".org", ".edu.cn", ".gov.cn",
        ".net.cn", ".org.cn", ".bj.cn"]
PREFIXES = ["www.", "www.", "www.", "bbs.", "news.", "blog.", ""]
PATHS = ["/", "/index.html", "/news/{a}/{b}.html", "/forum/viewthread.php?tid={b}&page={a}",
         "/dir{a}/sub{a}/page{b}.htm", "/show.asp?id={b}", "/article/{b}.shtml",
         "/cgi-bin/view.cgi?p={b}#top"]
BAD = ["not a url at all", "mailto:someone@example.com", "javascript:void(0)"]


def url_list(urls: int, hosts: int) -> Path:
    path = DATA_DIR / f"urls-{urls}-hosts-{hosts}-seed1.txt"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        temp = path.with_suffix(".tmp")
        with open(temp, "w", encoding="ascii") as out:
            for batch in _batches(urls, hosts):
                out.write(batch)
        os.replace(temp, path)
        print(f"generated {path} in {time.monotonic() - started:.0f} s")
    return path


def gzipped(path: Path) -> Path:
    """The list gzipped (level 6, gzip's default), made once beside it."""
    target = path.with_name(path.name + ".gz")
    if not target.exists():
        temp = target.with_suffix(".tmp")
        with open(path, "rb") as plain, gzip.open(temp, "wb", compresslevel=6) as out:
            shutil.copyfileobj(plain, out, 8 << 20)
        os.replace(temp, target)
    return target


def _host_names(hosts: int, rng: np.random.Generator) -> list[str]:
    prefix = rng.integers(0, len(PREFIXES), hosts)
    tld = rng.integers(0, len(TLDS), hosts)
    names = []
    for i in range(hosts):
        scheme = "https://" if i % 50 == 7 else "http://"
        port = ":8080" if i % 100 == 3 else ""
        names.append(f"{scheme}{PREFIXES[prefix[i]]}site{i}{TLDS[tld[i]]}{port}")
    return names


def _batches(urls: int, hosts: int, size: int = 1_000_000):
    rng = np.random.default_rng(1)
    names = _host_names(hosts, rng)
    weights = 1.0 / np.arange(1, hosts + 1)
    weights /= weights.sum()
    for start in range(0, urls, size):
        n = min(size, urls - start)
        host = rng.choice(hosts, n, p=weights)
        form, a = rng.integers(0, len(PATHS), n), rng.integers(0, 50, n)
        b = rng.integers(0, 10**6, n)
        lines = []
        for i in range(n):
            number = start + i
            if number % 100_000 == 99_999:
                lines.append(BAD[number // 100_000 % len(BAD)])
                continue
            name = names[host[i]]
            if number % 100 == 11:
                name = name.upper().replace("HTTP", "http")
            lines.append(name + PATHS[form[i]].format(a=a[i], b=b[i]))
        yield "\n".join(lines) + "\n"


def run_once(command: list[str]) -> None:
    """Wrapper mode: run the command, print its wall seconds, CPU seconds and ru_maxrss."""
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{seconds}\t{usage.ru_utime + usage.ru_stime}\t{usage.ru_maxrss}")
    print(done.stdout, end="")


def measure(args: list[str]) -> tuple[float, float, int, str]:
    command = [sys.executable, "-m", "tianwang", "hosts", "count", *args]
    wrapper = [sys.executable, __file__, "--once", "--", *command]
    done = subprocess.run(wrapper, capture_output=True, text=True, cwd=ROOT, check=True)
    first, output = done.stdout.split("\n", 1)
    seconds, cpu, maxrss = first.split("\t")
    return float(seconds), float(cpu), int(maxrss), output


def cores_free() -> float:
    """How many cores the machine gives now: one CPU-bound loop's time against two at once."""
    loop = [sys.executable, "-c", "sum(range(6 * 10**7))"]
    started = time.monotonic()
    subprocess.run(loop, check=True)
    one = time.monotonic() - started
    started = time.monotonic()
    both = [subprocess.Popen(loop) for _ in range(2)]
    for proc in both:
        proc.wait()
    return 2 * one / (time.monotonic() - started)


def check(d0: Path, urls: int) -> int:
    bad = sum(1 for number in range(urls) if number % 100_000 == 99_999)
    pages = sites = 0
    with open(d0, encoding="utf-8") as lines:
        for line in lines:
            pages += int(line.rsplit("\t", 1)[1])
            sites += 1
    if pages != urls - bad:
        sys.exit(f"D0 holds {pages} pages, expected {urls - bad}")
    return sites


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--once":
        run_once(sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--gzip", action="store_true", help="count the list gzipped")
    options = parser.parse_args()
    source = url_list(options.urls, options.hosts)
    if options.gzip:
        source = gzipped(source)
    size = source.stat().st_size
    print(f"{platform.node()}: {os.cpu_count()} cores, {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}, cores free {cores_free():.2f}; "
          f"{source} ({size / 1e6:.0f} MB)")
    with tempfile.TemporaryDirectory() as work:
        d0 = Path(work) / "D0"
        rates = {}
        for _ in range(options.rounds):
            for label, extra in (("default (1 worker per core)", []), ("baseline --workers 1",
                                                                        ["--workers", "1"])):
                seconds, cpu, maxrss, output = measure([str(source), "-o", str(d0), *extra])
                check(d0, options.urls)
                rate = options.urls / seconds
                rates.setdefault(label, []).append(rate)
                print(f"{label}: {seconds:.2f} s, {rate:,.0f} urls/s; CPU {cpu:.2f} s "
                      f"({options.urls / cpu:,.0f} urls per CPU second); peak RSS "
                      f"{maxrss / 1024:.0f} MB; {output.splitlines()[0]}")
    best = {label: max(values) for label, values in rates.items()}
    default, baseline = best.values()
    print(f"best: {default:,.0f} vs {baseline:,.0f} urls/s, ratio {default / baseline:.2f}; "
          f"load after {os.getloadavg()[0]:.2f}, cores free {cores_free():.2f}")


if __name__ == "__main__":
    main()
