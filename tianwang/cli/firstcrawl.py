"""`tianwang first-crawl`: a crawl of your own, offline: serve the test web, write its seeds,
print the exact crawl command.

It serves the bundled test web on 127.0.0.1 (until Ctrl-C), writes DIR/seeds.txt (its
homepages) and prints the `scrapy crawl site` command to run in another terminal, with the
proxy setting that reaches the test web, and the report command after it. The test web's
host names end in .test (RFC 6761), which no DNS resolves: a crawl of these seeds that
forgets the proxy setting fetches nothing from the internet (the site spider refuses to
start, saying so). The crawl writes into DIR/data, apart from the demo's directory.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from tianwang.cli.testweb import positive_int

DEFAULT_PORT = 8731  # fixed, so the printed command is the same every time
SEEDS_FILE = "seeds.txt"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "first-crawl", help="serve the test web for a crawl of your own and print its command",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="first-crawl",
                        help="where seeds.txt and the crawl's data go (default ./first-crawl)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port of the test web on 127.0.0.1 (default {DEFAULT_PORT}; 0: any)")
    parser.add_argument("--seed", type=int, default=1, help="test web seed (default 1)")
    parser.add_argument("--hosts", type=positive_int, default=100,
                        help="test web hosts (default 100)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from twisted.internet.error import CannotListenError

    from tianwang.testweb.model import SyntheticWeb
    from tianwang.testweb.server import serve

    if not 0 <= args.port <= 65535:
        print(f"tianwang first-crawl: --port must be 0..65535, not {args.port}", file=sys.stderr)
        return 2
    web = SyntheticWeb(args.seed, args.hosts, suffix=".test")
    where = Path(args.dir)
    seeds = where / SEEDS_FILE
    try:
        where.mkdir(parents=True, exist_ok=True)
        seeds.write_text("".join(f"{url}\n" for url in web.homepages()), encoding="utf-8")
    except OSError as exc:
        print(f"tianwang first-crawl: cannot write {seeds}: {exc.strerror}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    def listening(address: str) -> None:
        print(instructions(address, args.hosts, args.seed, where), flush=True)

    try:
        return serve(web, port=args.port, listening=listening)
    except CannotListenError as exc:
        print(f"tianwang first-crawl: cannot listen on 127.0.0.1:{args.port} "
              f"({exc.socketError}); another test web still running? Give --port N",
              file=sys.stderr)
        return 1


def instructions(address: str, hosts: int, seed: int, where: Path) -> str:
    data = where / "data"
    crawl = [*_scrapy(), "crawl", "site", "-a", f"seeds={where / SEEDS_FILE}",
             "-s", f"TIANWANG_PROXY={address}", "-s", f"TIANWANG_DATA_DIR={data}",
             "-s", "DOWNLOAD_DELAY=0"]
    report = [*program("tianwang", "tianwang"), "report", str(data)]
    return "\n".join([
        f"The test web: {hosts} sites (seed {seed}) served at {address}, their names under "
        ".test",
        "(no DNS resolves them: without the proxy setting below a crawl fetches nothing).",
        f"Seeds: {where / SEEDS_FILE}, their {hosts} homepages.",
        "",
        "In another terminal, in this directory, crawl them:",
        "",
        f"    {shlex.join(crawl)}",
        "",
        "then look at what it stored (an HTML page, "
        f"{data / 'report.html'}):",
        "",
        f"    {shlex.join(report)}",
        "",
        "Ctrl-C here stops the test web.",
    ])


def _scrapy() -> list[str]:
    """`scrapy`, and the project's settings module when no scrapy.cfg is found from here."""
    from scrapy.utils.conf import closest_scrapy_cfg

    command = program("scrapy", "scrapy")
    if closest_scrapy_cfg() or os.environ.get("SCRAPY_SETTINGS_MODULE"):
        return command
    return ["env", "SCRAPY_SETTINGS_MODULE=tianwang.settings", *command]


def program(name: str, module: str) -> list[str]:
    """How to run `name` of this Python's environment from here: its bare name when the
    shell finds that one (the environment is active), else its path, else `python -m`."""
    home = Path(sys.executable).parent
    found = shutil.which(name)
    if found and Path(found).parent.resolve() == home.resolve():
        return [name]
    script = home / name
    if script.exists():
        return [_shown(script)]
    return [_shown(Path(sys.executable)), "-m", module]


def _shown(path: Path) -> str:
    """A path as short as it stays right from here: relative below this directory."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path.absolute())
