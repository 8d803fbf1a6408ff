"""`tianwang testweb serve | truth | hosts | spamlist`: the synthetic web from the command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from tianwang.testweb.model import SyntheticWeb


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("testweb", help="the synthetic test web and its truth")
    commands = parser.add_subparsers(dest="testweb_command", required=True)

    serve = commands.add_parser("serve", help="serve the web as an HTTP proxy on 127.0.0.1")
    _web_options(serve, required=False)  # --seed and --hosts, or --graph
    serve.add_argument(
        "--graph",
        metavar="DIR",
        help="serve a recorded link graph instead (DIR/pages.tsv `id url host`, "
        "DIR/edges.tsv `src_id dst_id`): each page at its url, https as http, bodies "
        "synthesized, 404 for other urls",
    )
    serve.add_argument("--port", type=_port, default=0, help="port to listen on (default 0: any)")
    serve.add_argument("--access-log", metavar="FILE", help="append one JSON line per request")
    serve.add_argument("--latency", type=_seconds, default=0.0, metavar="SECONDS",
                       help="answer every request this long after it came (a server's "
                       "response time; default 0)")
    serve.add_argument("--latency-spread", type=_spread, default=0.0, metavar="FRACTION",
                       help="each answer waits a time drawn uniformly within --latency x "
                       "(1 +- FRACTION), as real servers' times vary (default 0: all alike)")
    serve.add_argument("--ca-file", metavar="FILE",
                       help="with --https: write the test CA's certificate (PEM) here, for "
                       "a crawl's TIANWANG_CA_FILE")
    serve.set_defaults(func=run_serve)

    truth = commands.add_parser("truth", help="print the ground truth as JSON lines")
    _web_options(truth)
    truth.set_defaults(func=run_truth)

    hosts = commands.add_parser("hosts", help="print the homepage urls, one a line (a seeds file)")
    _web_options(hosts)
    hosts.set_defaults(func=run_hosts)

    spamlist = commands.add_parser("spamlist", help="print the spam list of the --junk hosts")
    spamlist.set_defaults(func=run_spamlist)

    # Issue 9: the collection host list (tianwang/testweb/hostlist.py); serve it with
    # `serve --collection` (same --seed, --hosts and --max-pages).
    collection = commands.add_parser(
        "collection", help="write a collection host list's url lists (D0 input), truth and "
        "spam list")
    collection.add_argument("--seed", type=int, required=True, help="the web's seed")
    collection.add_argument("--hosts", type=positive_int, required=True,
                            help="hosts of the normal web (>= 20)")
    collection.add_argument("--max-pages", type=positive_int, default=300,
                            help="largest normal site size in pages (default 300, as serve)")
    collection.add_argument("--lists", type=positive_int, default=3,
                            help="url lists to deal the urls over, one per machine (default 3)")
    collection.add_argument("--out", metavar="DIR", required=True,
                            help="writes urls_<k>.txt, truth.jsonl and spamlist.txt here")
    collection.set_defaults(func=run_collection)


def _web_options(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--seed", type=int, required=required, help="the web's seed")
    parser.add_argument("--hosts", type=positive_int, required=required,
                        help="number of hosts (>= 1)")
    parser.add_argument(
        "--max-pages",
        type=positive_int,
        default=300,
        help="largest site size in pages (default 300)",
    )
    parser.add_argument(
        "--junk",
        action="store_true",
        help="add hosts and files a crawl must refuse (spam, ports, IPs, binaries)",
    )
    parser.add_argument(
        "--mirrors",
        action="store_true",
        help="serve some pages under more urls (/default.htm, ?sessionid=, other hosts)",
    )
    parser.add_argument(
        "--changing",
        action="store_true",
        help="pages change over a clock that GET /_testweb/clock?advance=SECONDS moves; "
        "ETag, Last-Modified and 304 answers",
    )
    parser.add_argument(
        "--protocols",
        action="store_true",
        help="add hosts with Crawl-delay, robots.txt errors, sitemaps, 429/503 Retry-After, "
        "charset and Content-Encoding cases (tianwang/testweb/protocols.py)",
    )
    parser.add_argument(
        "--floods",
        action="store_true",
        help="add hosts that attack a whole crawl: a 700,000-link page, subdomain redirect "
        "and link farms, a cookie flood, servers that never answer (testweb/floods.py)",
    )
    parser.add_argument(
        "--hidden-roots",
        action="store_true",
        help="every third host's / answers 404, its homepage elsewhere (testweb/hiddenroot.py)",
    )
    parser.add_argument(
        "--collection",
        action="store_true",
        help="serve the collection host list's names too (aliases, unreachable, families; "
        "`testweb collection`); implies --junk, ignores --mirrors and --changing",
    )
    parser.add_argument(
        "--dot-test",
        action="store_true",
        help="every host name ends in .test (RFC 6761: no DNS resolves it, so a crawl that "
        "forgets the proxy fetches nothing from the internet); the plain web only",
    )
    parser.add_argument(
        "--https",
        nargs="?",
        const="mixed",
        choices=("mixed", "all"),
        help="hosts over https too (through CONNECT): https only, http->https 301, both, "
        "and expired, self-signed or wrong-name certificates; `--https all`: every host "
        "https only, valid certificates (a benchmark's https side); not with --junk, "
        "--mirrors, --changing",
    )


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _seconds(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be >= 0 and finite, got {text}")
    return value


def _spread(text: str) -> float:
    """An argparse type: a fraction from 0 to 1 (a latency never below 0)."""
    value = _seconds(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def _port(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0..65535, got {value}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _web(args: argparse.Namespace) -> SyntheticWeb:
    if getattr(args, "collection", False):
        from tianwang.testweb.hostlist import CollectionWeb

        return CollectionWeb(args.seed, args.hosts, args.max_pages)  # type: ignore[return-value]
    return SyntheticWeb(args.seed, args.hosts, args.max_pages, junk=args.junk,
                        mirrors=args.mirrors, changing=args.changing,
                        protocols=getattr(args, "protocols", False),
                        hidden_roots=args.hidden_roots, floods=args.floods,
                        https={None: False, "mixed": True}.get(args.https, args.https),
                        suffix=".test" if args.dot_test else "")


def run_serve(args: argparse.Namespace) -> int:
    from tianwang.testweb.server import serve

    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    from twisted.internet.error import CannotListenError

    try:
        web = _served_web(args)
    except ValueError as exc:  # GraphError, or the options of neither kind of web
        print(f"tianwang testweb serve: {exc}", file=sys.stderr)
        return 2
    try:
        return serve(web, port=args.port, access_log=args.access_log, ca_file=args.ca_file,
                     latency=args.latency, spread=args.latency_spread)
    except CannotListenError as exc:
        print(
            f"tianwang testweb serve: cannot listen on 127.0.0.1:{args.port}: {exc.socketError}",
            file=sys.stderr,
        )
        return 1


def _served_web(args: argparse.Namespace) -> Any:
    """The synthetic web of --seed and --hosts, or the recorded graph of --graph."""
    synthetic = args.seed is not None or args.hosts is not None
    if args.graph is None:
        if args.seed is None or args.hosts is None:
            raise ValueError("the following arguments are required: --seed, --hosts (or --graph)")
        return _web(args)
    collection = getattr(args, "collection", False)  # an option of issue 9's
    if (synthetic or args.junk or args.mirrors or args.changing or collection or args.https
            or getattr(args, "hidden_roots", False)):
        raise ValueError("--graph serves a recorded graph: no --seed, --hosts, --junk, "
                         "--mirrors, --changing, --hidden-roots or --collection with it")
    from tianwang.testweb.graph import GraphWeb

    return GraphWeb.from_dir(args.graph)


def _web_or_none(args: argparse.Namespace, command: str) -> SyntheticWeb | None:
    """The web of the options, or None after saying which options do not go together."""
    try:
        return _web(args)
    except ValueError as exc:
        print(f"tianwang testweb {command}: {exc}", file=sys.stderr)
        return None


def run_truth(args: argparse.Namespace) -> int:
    web = _web_or_none(args, "truth")
    if web is None:
        return 2
    write = sys.stdout.write
    for record in web.truth():
        write(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


def run_hosts(args: argparse.Namespace) -> int:
    web = _web_or_none(args, "hosts")
    if web is None:
        return 2
    urls = web.homepages() + (web.junk.homepages() if web.junk else [])
    urls += web.protocols.homepages() if getattr(web, "protocols", None) else []
    sys.stdout.write("".join(f"{url}\n" for url in urls))
    sys.stdout.flush()
    return 0


def run_spamlist(args: argparse.Namespace) -> int:
    from tianwang.testweb.junk import SPAM_LIST

    sys.stdout.write(SPAM_LIST)
    sys.stdout.flush()
    return 0


def run_collection(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tianwang.testweb.hostlist import CollectionWeb, spam_list

    try:
        web = CollectionWeb(args.seed, args.hosts, args.max_pages)
        lists = web.url_lists(args.lists)
    except ValueError as exc:
        print(f"tianwang testweb collection: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for k, urls in enumerate(lists):
        (out / f"urls_{k}.txt").write_text("".join(f"{u}\n" for u in urls), encoding="utf-8")
    lines = [json.dumps(record) + "\n" for record in web.truth()]
    (out / "truth.jsonl").write_text("".join(lines), encoding="utf-8")
    (out / "spamlist.txt").write_text(spam_list(), encoding="utf-8")
    print(f"{len(lines)} sites, {sum(map(len, lists))} urls in {len(lists)} lists: {out}")
    return 0
