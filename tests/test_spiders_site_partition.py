"""Crawl by share (`scrapy crawl site -a partition=PLAN -a share=i`), for real: three shares of
a recorded site served by the test web, each into its own data dir, measured from the stored
records and held to the paper's simulation on the same graph; a redirect into another share's
key path on the synthetic web; bad arguments; the shares as scrapyd jobs."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from random import Random

import pytest

from tests.conftest import TestWeb, scrapy_crawl, serve_graph, write_graph
from tests.fetchlog import fetch_log_settings, read_fetch_log, served_beyond_sent
from tests.test_scrapyd import (  # noqa: F401 - scrapyd is a fixture
    call,
    deploy_project,
    scrapyd,
    wait_for_job,
)
from tests.test_spiders_site import small_web  # noqa: F401 - a fixture: 12 hosts, 30 pages
from tianwang.analysis.sitepartition import (
    Plan,
    crawl_share,
    graph_stats,
    make_plan,
    measures,
    simulate,
)
from tianwang.formats.partitionplan import PlanFile, SitePlan, dump_plan
from tianwang.formats.store import iter_tree
from tianwang.urls import path_key

# The partitioned site: a homepage, root files, and directories of varied size whose pages
# link mostly within their own directory (as the paper found: 74% of links stay in the path).
SITE = "www.partition.test"
HOME = f"http://{SITE}/"
DIRECTORIES = {"articles": 40, "news": 28, "people": 16, "courses": 10, "lab": 6}
ROOT_FILES = 4
# A host the plan does not name: every share crawls it as usual.
OTHER = "other.test"
OTHER_PAGES = 5
SHARES = 3
SAME_DIRECTORY = 0.75


def site_urls() -> list[str]:
    urls = [HOME] + [f"{HOME}page{k}.html" for k in range(ROOT_FILES)]
    for name, size in DIRECTORIES.items():
        urls += [f"{HOME}{name}/{'sub/' if k % 3 == 2 else ''}{k}.html" for k in range(size)]
    return urls


def site_links(urls: list[str], rng: Random) -> list[tuple[int, int]]:
    """Three to five links a page, most to its own directory; the homepage links the root
    files and the first page of two directories only, so the rest are found through links
    between directories or the supplementary seeds."""
    groups: dict[str, list[int]] = {}
    for page, url in enumerate(urls):
        groups.setdefault(path_key(url), []).append(page)
    links = [(0, page) for page in range(1, ROOT_FILES + 1)]
    links += [(0, urls.index(f"{HOME}{name}/0.html")) for name in ("articles", "news")]
    for page in range(1, len(urls)):
        own = groups[path_key(urls[page])]
        for _ in range(rng.randint(3, 5)):
            pool = own if rng.random() < SAME_DIRECTORY else range(len(urls))
            target = rng.choice(list(pool))
            if target != page and (page, target) not in links:
                links.append((page, target))
    return links


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The recorded graph (the truth), its plan for three crawlers, and the plan file."""
    root = tmp_path_factory.mktemp("partitioned")
    urls = site_urls()
    links = site_links(urls, Random(8))
    others = [f"http://{OTHER}/"] + [f"http://{OTHER}/o{k}.html" for k in range(1, OTHER_PAGES)]
    other_links = [(len(urls), len(urls) + k) for k in range(1, OTHER_PAGES)]
    write_graph(root / "graph", urls + others, links + other_links)
    graph: dict[str, list[str]] = {url: [] for url in urls}
    for source, target in links:
        graph[urls[source]].append(urls[target])
    pages, in_degree, depth = graph_stats(graph, HOME)
    plan = make_plan(pages, in_degree, depth, SHARES)
    dump_plan(root / "plan.json", PlanFile(SHARES, 0.9, {SITE: SitePlan(HOME, len(pages), plan)}))
    return {"root": root, "graph": graph, "plan": plan, "plan_path": root / "plan.json",
            "others": set(others)}


@pytest.fixture(scope="module")
def graph_web(site: dict) -> Iterator[TestWeb]:
    yield from serve_graph(site["root"] / "graph", site["root"] / "access.jsonl")


def log_lines(web: TestWeb) -> list[dict]:
    return [json.loads(line) for line in web.access_log.read_text().splitlines()]


def stored_urls(data_dir: Path) -> list[str]:
    """Every stored record's url, read with the record format's own reader."""
    return [record.url for _, record in iter_tree(data_dir)]


def refused(stderr: str) -> int:
    found = re.search(r"'tianwang/partition/refused': (\d+)", stderr)
    return int(found.group(1)) if found else 0


def crawl_settings(web: TestWeb, data: Path) -> dict[str, str]:
    # Unlimited levels (0) and in-host links: the reach of the paper's simulation.
    return {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(data),
            "TIANWANG_MAX_LEVELS": "0"}


@pytest.fixture(scope="module")
def shares(site: dict, graph_web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> list:
    """Each share crawled alone, one after the other, into its own data dir: its stored
    urls, its slice of the access log, the urls it sent (its FetchLog) and its refusal
    count."""
    crawled = []
    for share in range(SHARES):
        workdir = tmp_path_factory.mktemp(f"share{share}")
        since = len(log_lines(graph_web))
        args = {"seeds": f"http://{OTHER}/", "partition": str(site["plan_path"]),
                "share": str(share)}
        settings = {**crawl_settings(graph_web, workdir / "data"),
                    **fetch_log_settings(workdir / "sent.txt")}
        result = scrapy_crawl("site", args, settings, cwd=workdir)
        assert result.returncode == 0, result.stderr[-3000:]
        crawled.append({"stored": stored_urls(workdir / "data"),
                        "log": log_lines(graph_web)[since:], "refused": refused(result.stderr),
                        "sent": read_fetch_log(workdir / "sent.txt")})
    return crawled


def site_pages(urls: list[str]) -> list[str]:
    return [url for url in urls if url.startswith(HOME)]


def test_the_measures_of_the_stored_records_equal_the_simulations(
    site: dict, shares: list
) -> None:
    stored = [site_pages(share["stored"]) for share in shares]
    real = measures([len(s) for s in stored], len(set().union(*stored)), len(site["graph"]))
    simulated = simulate(site["graph"], HOME, site["plan"])
    assert real == simulated  # N, I, U, M, and so the four measures, exactly
    # Not a trivial partition: the shares differ, none holds the whole site.
    assert 1 < simulated.acceleration and len({frozenset(s) for s in stored}) == SHARES


def test_each_share_stores_exactly_the_pages_the_simulation_gives_it(
    site: dict, shares: list
) -> None:
    for index, share in enumerate(shares):
        stored = Counter(site_pages(share["stored"]))
        assert set(stored) == crawl_share(site["graph"], HOME, site["plan"], index)
        assert max(stored.values()) == 1


def test_no_share_requests_a_url_of_another_shares_key_path(site: dict, shares: list) -> None:
    plan: Plan = site["plan"]
    for index, share in enumerate(shares):
        served = [entry["url"] for entry in share["log"]]
        assert served_beyond_sent(served, share["sent"]) == {}  # tests/fetchlog.py
        requested = [url for url in share["sent"] if not url.endswith("/robots.txt")]
        assert len(requested) == len(set(requested))  # each page fetched once
        foreign = {url for url in requested
                   if plan.owner.get(path_key(url), index) != index and url != HOME}
        assert not foreign
        assert share["refused"] > 0  # the rule was met, and counted
        # what was fetched was stored: the planned site's pages and the other host's
        assert set(requested) == set(share["stored"])


def test_a_host_the_plan_does_not_name_is_crawled_as_usual(site: dict, shares: list) -> None:
    for share in shares:
        assert {url for url in share["stored"] if not url.startswith(HOME)} == site["others"]


# --- a redirect into another share's key path (the synthetic web) -------------------------


def moved_across_key_paths(truth: dict[str, dict]) -> tuple[str, str]:
    """A redirect whose source and target are in two different directories' key paths."""
    for url, page in truth.items():
        target = page["location"]
        if target and page["robots_allowed"] and truth[target]["robots_allowed"]:
            keys = path_key(url), path_key(target)
            if keys[0] != keys[1] and not any(key.endswith("/") for key in keys):
                return url, target
    raise AssertionError("the small web has no such redirect")


@pytest.mark.parametrize("share", [0, 1])
def test_a_redirect_into_another_shares_key_path_is_not_followed(
    small_web: TestWeb, tmp_path: Path, share: int  # noqa: F811 - the imported fixture
) -> None:
    source, target = moved_across_key_paths(small_web.truth)
    host = source.split("/")[2]
    plan = Plan(2, {path_key(target): 1}, ((), ()))  # the target's directory is share 1's
    dump_plan(tmp_path / "plan.json",
              PlanFile(2, 0.9, {host: SitePlan(f"http://{host}/", 30, plan)}))
    since = len(log_lines(small_web))
    args = {"seeds": source, "partition": str(tmp_path / "plan.json"), "share": str(share)}
    result = scrapy_crawl("site", args, crawl_settings(small_web, tmp_path / "data"),
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    requested = {entry["url"] for entry in log_lines(small_web)[since:]}
    assert source in requested
    if share == 0:
        assert target not in requested and refused(result.stderr) >= 1
        assert not {url for url in requested if path_key(url) == path_key(target)}
    else:
        assert target in requested and target in stored_urls(tmp_path / "data")


# --- bad arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"share": "0"}, "-a share=0 needs -a partition="),
        ({"partition": "PLAN", "share": "3"}, "-a share=3 is outside 0..2"),
        ({"partition": "missing-plan.json", "share": "0"},
         "-a partition=missing-plan.json: cannot read partition plan"),
    ],
)
def test_bad_partition_arguments_stop_the_crawl_at_start(
    site: dict, tmp_path: Path, args: dict, named: str
) -> None:
    args = {"seeds": HOME, **args}
    if args.get("partition") == "PLAN":
        args["partition"] = str(site["plan_path"])
    # A dead proxy: had the crawl started, it would fail loudly rather than pass quietly.
    settings = {"TIANWANG_PROXY": "http://127.0.0.1:9", "TIANWANG_DATA_DIR": str(tmp_path / "d")}
    result = scrapy_crawl("site", args, settings, cwd=tmp_path, timeout=120)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1].replace(str(site["plan_path"]), "PLAN")
    assert named in last
    assert not (tmp_path / "d").exists()


# --- the shares as scrapyd jobs ----------------------------------------------------------------


def test_the_shares_run_as_scrapyd_jobs(
    scrapyd, site: dict, graph_web: TestWeb, tmp_path: Path  # noqa: F811 - the fixture
) -> None:
    deploy = deploy_project(scrapyd.url, tmp_path)
    assert deploy.returncode == 0, deploy.stderr
    jobs = []
    for share in range(SHARES):
        data = tmp_path / f"data{share}"
        job = call(f"{scrapyd.url}/schedule.json", [
            ("project", "tianwang"), ("spider", "site"),
            ("partition", str(site["plan_path"])), ("share", str(share)),
            ("setting", f"TIANWANG_PROXY={graph_web.address}"),
            ("setting", f"TIANWANG_DATA_DIR={data}"),
            ("setting", "TIANWANG_MAX_LEVELS=0"),
            ("setting", "DOWNLOAD_DELAY=0"),
            ("setting", "CONCURRENT_REQUESTS_PER_DOMAIN=4"),
        ])
        assert job["status"] == "ok", job
        jobs.append((job["jobid"], data))
    for share, (job, data) in enumerate(jobs):
        wait_for_job(scrapyd, job)
        log = (scrapyd.root / "logs" / "tianwang" / "site" / f"{job}.log").read_text()
        assert "Spider closed (finished)" in log, log[-3000:]
        stored = stored_urls(data)
        assert sorted(stored) == sorted(crawl_share(site["graph"], HOME, site["plan"], share))
        assert refused(log) > 0
