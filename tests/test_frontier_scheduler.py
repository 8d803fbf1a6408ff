"""FrontierScheduler: settings, order, dedup, resume; real crawls of the test web, kill -9."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy import Request, Spider, signals

import tianwang.default_settings as defaults
from tests.conftest import (
    TestWeb,
    crawl_command,
    project_crawler,
    scrapy_crawl,
    serve_graph,
    write_graph,
)
from tests.spec_reader import SpecError, read_records
from tests.truth import load_truth, reach
from tianwang import meta as meta_keys
from tianwang.config import SettingError
from tianwang.frontier.scheduler import STATE_DIR, FrontierScheduler
from tianwang.sendback import send_back
from tianwang.testweb.launcher import TestWebProcess, write_seeds

# Only the storage pipeline: these tests are about which pages the frontier fetches.
STORAGE_ONLY = json.dumps({"tianwang.pipelines.storage.TianwangStoragePipeline": 800})


class UnitSpider(Spider):
    name = "unit"

    def parse(self, response):
        return None


# The tests of the weights pin a host's first requests off (they go before any weight);
# the tests of those firsts set them.
NO_FIRSTS = {"TIANWANG_HOST_FIRST": 0, "TIANWANG_SEED_HOST_FIRST": 0}


def scheduler(**settings: object) -> tuple[FrontierScheduler, UnitSpider]:
    crawler = project_crawler(TIANWANG_EXPECTED_URLS=10_000, TIANWANG_FRONTIER_SEED=7,
                              **{**NO_FIRSTS, **settings})
    frontier = FrontierScheduler.from_crawler(crawler)
    spider = UnitSpider()
    frontier.open(spider)
    return frontier, spider


def drain(frontier: FrontierScheduler) -> list[str]:
    urls = []
    while (request := frontier.next_request()) is not None:
        urls.append(request.url)
    return urls


# --- settings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TIANWANG_SORTED_PICKS", 0),
        ("TIANWANG_RANDOM_PICKS", "two"),
        ("TIANWANG_RANDOM_PICKS", -1),
        ("TIANWANG_HOST_PICKS", -1),
        ("TIANWANG_EXPECTED_URLS", 0),
        ("TIANWANG_BLOOM_ERROR_RATE", 1.5),
        ("TIANWANG_BLOOM_ERROR_RATE", "often"),
        ("TIANWANG_FRONTIER_SEED", "x"),
        ("TIANWANG_HOST_TURNS", -1),
        ("TIANWANG_INDEX_PAGES", "a/index.html"),
    ],
)
def test_a_bad_setting_is_refused_by_name(name: str, value: object) -> None:
    with pytest.raises(SettingError, match=name):
        FrontierScheduler.from_crawler(project_crawler(**{name: value}))


def test_a_bad_setting_stops_a_real_crawl_with_a_message_naming_it(tmp_path: Path) -> None:
    result = scrapy_crawl(
        "site",
        {"seeds": "http://www.example.com/"},
        {"TIANWANG_SORTED_PICKS": "0", "TIANWANG_DATA_DIR": str(tmp_path / "data")},
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode != 0
    # The last line names it: no second traceback from an engine that never opened.
    last = result.stderr.strip().splitlines()[-1]
    assert last.endswith("TIANWANG_SORTED_PICKS='0' is invalid: expected a whole number >= 1")
    assert "Engine slot not assigned" not in result.stderr


# --- order and dedup, component alone --------------------------------------------------


# (url, meta, priority) pushed in this order, and the order sorted picks must give them;
# the Redis frontier is held to the same table (test_distributed_scheduler.py).
ORDER_CASES = [
    ("http://a.example.com/x/y/z.html", {}, 0),  # weight 7
    ("http://b.example.com/", {}, 0),  # 10
    ("http://c.example.com/search?q=1", {}, 0),  # 10 - 1 - 1 - 2 = 6
    ("http://d.example.com/x/y/z.html", {"tianwang_boost": 2}, 0),  # 7 + 2 = 9
    ("http://e.example.com/x/y/z.html", {}, 2),  # 7, priority 2: before a
]
ORDER_EXPECTED = [
    "http://b.example.com/",
    "http://d.example.com/x/y/z.html",
    "http://e.example.com/x/y/z.html",
    "http://a.example.com/x/y/z.html",
    "http://c.example.com/search?q=1",
]


def test_sorted_picks_follow_weight_and_boost_and_priority_breaks_ties() -> None:
    # N large: with only sorted picks in view the order is fully determined.
    frontier, spider = scheduler(TIANWANG_SORTED_PICKS=1000)
    for url, meta, priority in ORDER_CASES:
        assert frontier.enqueue_request(Request(url, meta=meta, priority=priority))
    assert drain(frontier) == ORDER_EXPECTED


def test_an_index_page_goes_with_its_directory_unless_index_pages_are_off() -> None:
    urls = [
        "http://a.example.com/about.html",  # weight 9
        "http://a.example.com/news/index.html",  # 8, or 9 as /news/
        "http://a.example.com/tail/",  # 9
    ]
    for index_pages, expected in [
        (None, urls),  # the project default: three of weight 9, first come first served
        ([], [urls[0], urls[2], urls[1]]),  # seed 000's weight alone
    ]:
        overrides = {} if index_pages is None else {"TIANWANG_INDEX_PAGES": index_pages}
        frontier, _ = scheduler(TIANWANG_SORTED_PICKS=1000, **overrides)
        for url in urls:
            frontier.enqueue_request(Request(url))
        assert drain(frontier) == expected


def test_hosts_take_turns_among_equal_weights_if_host_turns_say_so() -> None:
    a = [f"http://a.example.com/{name}/" for name in ("news", "about", "jobs")]  # weight 9
    b = "http://b.example.com/news/"
    # The default: first come first served (seed 000; turns measured no gain, design.md 12).
    for turns, expected in [(16, [a[0], b, a[1], a[2]]), (None, [*a, b]), (0, [*a, b])]:
        overrides = {} if turns is None else {"TIANWANG_HOST_TURNS": turns}
        frontier, _ = scheduler(TIANWANG_SORTED_PICKS=1000, **overrides)
        for url in [*a, b]:  # host a's homepage was parsed first
            frontier.enqueue_request(Request(url))
        assert drain(frontier) == expected


def test_a_hosts_first_requests_go_first_and_a_seeds_host_has_more() -> None:
    """a.example.com is a seed's host (depth 0): 3 first requests here; b.example.com, found
    by a link, 2. Within a turn the higher weight goes first; past them, the weights."""
    a, b = "http://a.example.com/", "http://b.example.com/"
    pushed = [(a, 0), (a + "x/y/z/deep.html", 1), (a + "p1.html", 1), (a + "p2.html", 1),
              (b + "q/r/s/deep.html", 1), (b + "p1.html", 1), (b + "p2.html", 1)]
    expected = {
        # turn 0: a/, b's deep page; turn 1: b/p1 (the higher weight), a's deep page;
        # turn 2: a/p1; then by weight: a/p2 and b/p2, hosts taking turns
        (2, 3): [a, b + "q/r/s/deep.html", b + "p1.html", a + "x/y/z/deep.html", a + "p1.html",
                 a + "p2.html", b + "p2.html"],
        (0, 0): [a, a + "p1.html", b + "p1.html", a + "p2.html", b + "p2.html",
                 a + "x/y/z/deep.html", b + "q/r/s/deep.html"],
    }
    for (first, seed_first), order in expected.items():
        frontier, _ = scheduler(TIANWANG_SORTED_PICKS=1000, TIANWANG_HOST_FIRST=first,
                                TIANWANG_SEED_HOST_FIRST=seed_first, TIANWANG_HOST_TURNS=16)
        for url, depth in pushed:
            frontier.enqueue_request(Request(url, meta={"depth": depth}))
        assert drain(frontier) == order, (first, seed_first)


def test_a_seed_found_by_a_link_first_still_gives_its_host_a_seeds_first_requests() -> None:
    """A start request is consumed as the crawl goes: another host's page may link a seed's
    url before the seed is pushed, which then is a duplicate."""
    frontier, _ = scheduler(TIANWANG_SORTED_PICKS=1000, TIANWANG_HOST_FIRST=2,
                            TIANWANG_SEED_HOST_FIRST=5)
    home = "http://a.example.com/"
    assert frontier.enqueue_request(Request(home, meta={"depth": 1}))
    assert not frontier.enqueue_request(Request(home))  # the seed: seen already
    for i in range(8):
        frontier.enqueue_request(Request(f"{home}d/p{i}.html", meta={"depth": 1}))
    assert len(drain(frontier)) == 9
    frontier.close("finished")
    assert frontier.stats.get_value("tianwang/frontier/first_picks") == 5


def test_a_link_to_a_seeds_host_before_its_seed_gives_the_host_a_seeds_first_requests() -> None:
    """The homepage found by a link (marked a seed's host by the spider) before the seed is
    pushed: its links take the seed's first turns in their page's order, not the first
    section's own links pushed later (their first turns were handed out by push order)."""
    frontier, _ = scheduler(TIANWANG_SORTED_PICKS=1000, TIANWANG_HOST_FIRST=2,
                            TIANWANG_SEED_HOST_FIRST=4)
    home = "http://a.example.com/"
    link = {"depth": 1, "tianwang_seed_host": True}
    assert frontier.enqueue_request(Request(home, meta=link))
    assert drain(frontier) == [home]
    sections = [f"{home}s{i}/" for i in range(5)]
    for url in sections:
        frontier.enqueue_request(Request(url, meta={**link, "depth": 2}))
    assert frontier.next_request().url == sections[0]
    articles = [f"{sections[0]}a/b/c/p{i}.html" for i in range(3)]  # the first section's
    for url in articles:
        frontier.enqueue_request(Request(url, meta={**link, "depth": 3}))
    assert not frontier.enqueue_request(Request(home))  # the seed, late: seen already
    # Turns 2 and 3 go to the homepage's next sections, then the weights decide. Counted
    # under TIANWANG_HOST_FIRST until the seed came, they went to the first two articles.
    assert drain(frontier) == [*sections[1:], *articles]
    frontier.close("finished")
    assert frontier.stats.get_value("tianwang/frontier/first_picks") == 4


# A real crawl's order (the access log): the seed a.test/ links first a deep page of its own,
# then nine shallow ones and b.test/, which links first a deep page, then four shallow ones.
# One connection a host. By weight a deep page comes last of its host; as one of its host's
# first requests (a seed's host has 8, another 2) it comes right after the homepage.
FIRSTS_PAGES = (["http://a.test/", "http://b.test/", "http://a.test/d1/d2/d3/deep.html"]
                + [f"http://a.test/p{i}.html" for i in range(1, 10)]
                + ["http://b.test/x1/x2/x3/deep.html"]
                + [f"http://b.test/q{i}.html" for i in range(1, 5)])
FIRSTS_EDGES = [(0, i) for i in range(2, 12)] + [(0, 1)] + [(1, i) for i in range(12, 17)]


@pytest.fixture(scope="module")
def firsts_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    directory = write_graph(tmp_path_factory.mktemp("firsts") / "graph", FIRSTS_PAGES,
                            FIRSTS_EDGES)
    yield from serve_graph(directory, tmp_path_factory.mktemp("firstsweb") / "access.jsonl")


def served_in_order(web: TestWeb, tmp_path: Path, all_pages: list[str] = FIRSTS_PAGES,
                    **settings: str) -> list[str]:
    """The pages a crawl of a.test/ fetched, in the order the test web served them."""
    start = len(web.access_log.read_text(encoding="utf-8").splitlines()) if \
        web.access_log.exists() else 0
    crawl_settings = {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(tmp_path / "d"),
                      "TIANWANG_MAX_LEVELS": "0", "TIANWANG_STAY_IN_HOST": "False",
                      "CONCURRENT_REQUESTS_PER_DOMAIN": "1", "ITEM_PIPELINES": "{}", **settings}
    tmp_path.mkdir()
    result = scrapy_crawl("site", {"seeds": all_pages[0]}, crawl_settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = web.access_log.read_text(encoding="utf-8").splitlines()[start:]
    served = [json.loads(line)["url"] for line in lines]
    pages = [url for url in served if not url.endswith("/robots.txt")]
    assert sorted(pages) == sorted(all_pages)  # every page once
    return pages


def test_a_real_crawl_fetches_each_hosts_first_links_first(firsts_web: TestWeb,
                                                           tmp_path: Path) -> None:
    def of_host(pages: list[str], host: str) -> list[str]:
        return [url for url in pages if url.startswith(f"http://{host}/") and
                url != f"http://{host}/"]

    # No random picks: one may take any pending page at any time (its own test is below).
    firsts = served_in_order(firsts_web, tmp_path / "firsts", TIANWANG_RANDOM_PICKS="0")
    weights_only = served_in_order(firsts_web, tmp_path / "weights", TIANWANG_HOST_FIRST="0",
                                   TIANWANG_SEED_HOST_FIRST="0", TIANWANG_RANDOM_PICKS="0")
    for host, deep in [("a.test", FIRSTS_PAGES[2]), ("b.test", FIRSTS_PAGES[12])]:
        assert of_host(firsts, host)[0] == deep
        assert of_host(weights_only, host)[-1] == deep
    # The seed's host has 8 first requests: its homepage and its first 7 links in page order.
    assert of_host(firsts, "a.test")[:7] == FIRSTS_PAGES[2:9]


# Host picks in a real crawl (the access log): the seed a.test/ links 30 shallow pages of its
# own and b.test/, which links 10 deep pages. One request at a time, no first requests: the
# sorted picks alone take a.test's shallow pages (the higher weight) before any deep one of
# b.test; with 3 sorted picks and 1 host pick, the hosts' turns give b.test every other host
# pick, one fetch in eight.
PICKS_PAGES = (["http://a.test/", "http://b.test/"]
               + [f"http://a.test/p{i}.html" for i in range(1, 31)]
               + [f"http://b.test/x1/x2/x3/q{i}.html" for i in range(1, 11)])
PICKS_EDGES = [(0, 1)] + [(0, i) for i in range(2, 32)] + [(1, i) for i in range(32, 42)]


@pytest.fixture(scope="module")
def picks_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    directory = write_graph(tmp_path_factory.mktemp("picks") / "graph", PICKS_PAGES,
                            PICKS_EDGES)
    yield from serve_graph(directory, tmp_path_factory.mktemp("picksweb") / "access.jsonl")


def test_a_real_crawls_host_picks_give_a_second_host_its_turns(picks_web: TestWeb,
                                                               tmp_path: Path) -> None:
    one_at_a_time = {"CONCURRENT_REQUESTS": "1", "TIANWANG_HOST_FIRST": "0",
                     "TIANWANG_SEED_HOST_FIRST": "0"}

    def deep_before_last_shallow(**settings: str) -> int:
        run = tmp_path / settings["TIANWANG_HOST_PICKS"]
        pages = served_in_order(picks_web, run, PICKS_PAGES, **one_at_a_time, **settings)
        last_shallow = pages.index(PICKS_PAGES[31])
        return sum(1 for url in pages[:last_shallow] if "/x1/" in url)

    assert deep_before_last_shallow(TIANWANG_SORTED_PICKS="1000", TIANWANG_HOST_PICKS="0",
                                    TIANWANG_RANDOM_PICKS="1") == 0
    # The defaults: 3 sorted, 1 host. About 30 / 7 = 4 of b.test's turns come in a.test's 30
    # pages; at least 2 whatever the engine's timing.
    assert deep_before_last_shallow(TIANWANG_SORTED_PICKS="3", TIANWANG_HOST_PICKS="1",
                                    TIANWANG_RANDOM_PICKS="0") >= 2


# Seed 000, rule 4: "a low weight does not mean unimportant", so the crawl gives low-weight
# urls a chance. 400 urls queued on 20 hosts, half at weight 9 (/p.html), half at weight 4
# (/a/b/c/d/e/q.html), alternating: in the first 100 picks, a sorted or host pick takes
# weight 9 while any is pending; a random pick draws from everything pending, half of it
# low. So with M >= 1 random picks low-weight urls are reached, and with M = 0 none are.
PICKS_DEFAULT = {name: getattr(defaults, name) for name in
                 ("TIANWANG_SORTED_PICKS", "TIANWANG_HOST_PICKS", "TIANWANG_RANDOM_PICKS")}
NO_RANDOM_PICKS = {**PICKS_DEFAULT, "TIANWANG_RANDOM_PICKS": 0,
                   "TIANWANG_HOST_PICKS": PICKS_DEFAULT["TIANWANG_HOST_PICKS"] or 1}


def low_weight_in_first_100_of_400(**picks: object) -> tuple[int, int]:
    """(low-weight urls among the first 100 picks, random picks among them)."""
    frontier, _ = scheduler(CONCURRENT_REQUESTS_PER_DOMAIN=16, **picks)
    for i in range(200):
        for path in (f"p{i}.html", f"a/b/c/d/e/q{i}.html"):
            # Links (depth 1), as a crawl pushes them; no host's first requests (NO_FIRSTS).
            frontier.enqueue_request(Request(f"http://h{i % 20}.example.com/{path}",
                                             meta={"depth": 1}))
    picked = [frontier.next_request() for _ in range(100)]
    frontier.close("finished")
    assert None not in picked  # 16 connections a host: no host full in 100 picks
    low = sum(1 for request in picked if "/a/b/c/d/e/" in request.url)
    return low, frontier.stats.get_value("tianwang/frontier/random_picks", 0)


def test_the_default_picks_reach_low_weight_urls_and_no_random_picks_do_not() -> None:
    low, random_picks = low_weight_in_first_100_of_400(**PICKS_DEFAULT)
    cycle = sum(PICKS_DEFAULT.values())
    assert PICKS_DEFAULT["TIANWANG_RANDOM_PICKS"] >= 1  # seed 000's M >= 1
    assert random_picks == 100 * PICKS_DEFAULT["TIANWANG_RANDOM_PICKS"] // cycle
    # Only random picks reach them, at about the share of them pending (about a half).
    assert random_picks // 4 <= low <= random_picks
    # The ablation: the same sorted and host picks without the random ones reach none.
    assert low_weight_in_first_100_of_400(**NO_RANDOM_PICKS) == (0, 0)


# The same in a real crawl (the access log): a.test/ links 90 shallow pages and 90 deep ones,
# alternating; one request at a time. Sorted and host picks take every shallow page before
# any deep one; the default's random picks fetch some deep pages among them.
SHALLOW = 90
RANDOM_PAGES = (["http://a.test/"] + [f"http://a.test/p{i}.html" for i in range(SHALLOW)]
                + [f"http://a.test/x1/x2/x3/x4/q{i}.html" for i in range(SHALLOW)])
RANDOM_EDGES = [(0, i) for pair in zip(range(1, SHALLOW + 1), range(SHALLOW + 1, 2 * SHALLOW + 1),
                                       strict=True) for i in pair]


@pytest.fixture(scope="module")
def random_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    directory = write_graph(tmp_path_factory.mktemp("random") / "graph", RANDOM_PAGES,
                            RANDOM_EDGES)
    yield from serve_graph(directory, tmp_path_factory.mktemp("randomweb") / "access.jsonl")


def test_a_real_crawls_default_picks_fetch_deep_pages_before_the_last_shallow_one(
    random_web: TestWeb, tmp_path: Path
) -> None:
    def deep_before_last_shallow(name: str, **settings: str) -> int:
        pages = served_in_order(random_web, tmp_path / name, RANDOM_PAGES,
                                CONCURRENT_REQUESTS="1", TIANWANG_FRONTIER_SEED="7",
                                TIANWANG_HOST_FIRST="0", TIANWANG_SEED_HOST_FIRST="0",
                                **settings)
        last_shallow = max(pages.index(url) for url in RANDOM_PAGES[1:SHALLOW + 1])
        return sum(1 for url in pages[:last_shallow] if "/x1/" in url)

    # The default picks (a host's first requests off: a seed's host's first links are taken in
    # page order, deep ones too): 90 shallow pages take about 90 * (N + H + M) / (N + H)
    # picks, M / (N + H + M) of them random (about 11 at 7:1:1), about half of those deep.
    assert deep_before_last_shallow("default") >= 2
    assert deep_before_last_shallow("no-random", **{
        name: str(value) for name, value in NO_RANDOM_PICKS.items()}) == 0


def test_duplicates_are_dropped_unless_dont_filter() -> None:
    frontier, _ = scheduler()
    assert frontier.enqueue_request(Request("http://a.example.com/p.html"))
    assert not frontier.enqueue_request(Request("http://a.example.com/p.html"))
    assert not frontier.enqueue_request(Request("http://a.example.com/p.html#frag"))
    assert frontier.enqueue_request(Request("http://a.example.com/p.html", dont_filter=True))
    assert len(frontier) == 2
    frontier.close("finished")
    stats = frontier.stats.get_stats()
    assert stats["tianwang/frontier/dedup/filtered"] == 2
    assert stats["tianwang/frontier/dedup/added"] == 1
    assert stats["tianwang/frontier/dedup/dont_filter"] == 1


def test_close_records_picks_and_pending_by_weight() -> None:
    frontier, _ = scheduler(TIANWANG_SORTED_PICKS=1, TIANWANG_HOST_PICKS=0,
                            TIANWANG_RANDOM_PICKS=1)
    for i in range(10):
        frontier.enqueue_request(Request(f"http://h{i}.example.com/"))  # weight 10
    for i in range(5):
        frontier.enqueue_request(Request(f"http://h{i}.example.com/a/b.html"))  # 8
    for _ in range(6):
        frontier.next_request()
    frontier.close("shutdown")
    stats = frontier.stats.get_stats()
    assert stats["tianwang/frontier/sorted_picks"] == stats["tianwang/frontier/random_picks"] == 3
    pending = {k: v for k, v in stats.items() if k.startswith("tianwang/frontier/pending/")}
    assert sum(pending.values()) == 9 and set(pending) <= {
        "tianwang/frontier/pending/w10",
        "tianwang/frontier/pending/w8",
    }


def resume_urls(jobdir: Path, closed: bool) -> tuple[list[str], FrontierScheduler]:
    """Push 20, take 8, stop (cleanly or as a kill would), then reopen the same JOBDIR."""
    frontier, _ = scheduler(JOBDIR=str(jobdir))
    pushed = [f"http://h{i % 4}.example.com/p{i}.html" for i in range(20)]
    for url in pushed:
        frontier.enqueue_request(Request(url))
    taken = [frontier.next_request().url for _ in range(8)]
    if closed:
        frontier.close("shutdown")
    again, _ = scheduler(JOBDIR=str(jobdir))
    left = drain(again)
    # Every url pushed before is still known: none of them is accepted a second time.
    assert not any(again.enqueue_request(Request(url)) for url in pushed)
    return taken + left, again


def test_a_stopped_frontier_resumes_with_what_was_pending(tmp_path: Path) -> None:
    urls, again = resume_urls(tmp_path / "job", closed=True)
    assert sorted(urls) == sorted(f"http://h{i % 4}.example.com/p{i}.html" for i in range(20))
    assert len(urls) == 20  # nothing twice: a clean stop has nothing in flight
    again.close("finished")


def test_a_killed_frontier_resumes_with_the_in_flight_request_again(tmp_path: Path) -> None:
    urls, again = resume_urls(tmp_path / "job", closed=False)
    counts = Counter(urls)
    assert set(counts) == {f"http://h{i % 4}.example.com/p{i}.html" for i in range(20)}
    # Without an engine a request is done once the next is asked for: the last one taken
    # was in flight at the "kill", and only it comes back.
    assert [url for url, n in counts.items() if n > 1] == [urls[7]]
    again.close("finished")


# --- real crawls -----------------------------------------------------------------------


class SlotProbe:
    """Extension: how full download slots get, watched as each request enters one."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def reached(self, request: Request) -> None:
        slots = self.crawler.engine.downloader.slots
        stats = self.crawler.stats
        stats.max_value("probe/slot_active_max", len(slots[request.meta["download_slot"]].active))
        stats.max_value("probe/busy_slots_max", sum(1 for slot in slots.values() if slot.active))

    def closed(self) -> None:
        stats = {k: v for k, v in self.crawler.stats.get_stats().items() if isinstance(v, int)}
        Path(self.crawler.settings["PROBE_FILE"]).write_text(json.dumps(stats))


def read_tree(data_dir: Path) -> Counter[str]:
    """Urls of the complete records under a data dir (a record cut by a kill is not)."""
    urls: Counter[str] = Counter()
    for path in data_dir.glob("data_*/*/page.dat"):
        try:
            for record in read_records(path.read_bytes()):
                urls[record["header"]["url"]] += 1
        except (SpecError, ValueError, zlib.error):
            pass  # the unfinished record a kill leaves behind
    return urls


def probed_crawl(
    web: TestWeb, seeds: list[str], workdir: Path, **settings: str
) -> tuple[Counter[str], dict]:
    probe = workdir / "probe.json"
    result = scrapy_crawl(
        "site",
        {"seeds": str(write_seeds(workdir / "seeds.txt", seeds))},
        {
            "TIANWANG_PROXY": web.address,
            "TIANWANG_DATA_DIR": str(workdir / "data"),
            "ITEM_PIPELINES": STORAGE_ONLY,
            # the stack's extensions and the probe (a dict given replaces the stack's)
            "EXTENSIONS": json.dumps({**defaults.EXTENSIONS, f"{__name__}.SlotProbe": 0}),
            "PROBE_FILE": str(probe),
            **settings,
        },
        cwd=workdir,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return read_tree(workdir / "data"), json.loads(probe.read_text())


@pytest.fixture(scope="module")
def seeds(testweb: TestWeb) -> list[str]:
    return [url for url, page in testweb.truth.items() if page["kind"] == "home"][:24]


def test_a_resumable_3_to_1_crawl_stores_exactly_the_reachable_pages(
    testweb: TestWeb, seeds: list[str], tmp_path: Path
) -> None:
    stored, stats = probed_crawl(
        testweb,
        seeds,
        tmp_path,
        JOBDIR=str(tmp_path / "job"),
        TIANWANG_SORTED_PICKS="3",
        TIANWANG_RANDOM_PICKS="1",
    )
    expected = reach(testweb.truth, seeds).stored(testweb.truth)
    assert len(expected) > 300
    assert set(stored) == expected
    assert max(stored.values()) == 1
    picks = sum(stats[f"tianwang/frontier/{kind}_picks"]
                for kind in ("first", "sorted", "host", "random"))
    assert picks == stats["scheduler/dequeued"] == stats["scheduler/enqueued"]
    assert stats["tianwang/frontier/sorted_picks"] >= 3 * stats["tianwang/frontier/random_picks"]


def test_host_awareness_one_connection_per_host_and_no_host_starves_the_rest(
    testweb: TestWeb, seeds: list[str], tmp_path: Path
) -> None:
    polite = {
        "CONCURRENT_REQUESTS": "8",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        "DOWNLOAD_DELAY": "0.02",
        "DOWNLOAD_DELAY_JITTER": "0",
    }
    seeds = seeds[:16]
    (tmp_path / "frontier").mkdir()
    stored, stats = probed_crawl(testweb, seeds, tmp_path / "frontier", **polite)
    assert set(stored) == reach(testweb.truth, seeds).stored(testweb.truth)
    # Never a second request queued behind a host's one connection...
    assert stats["probe/slot_active_max"] == 1
    # ... and the crawl's 8 connections all busy at once, each on its own host.
    assert stats["probe/busy_slots_max"] == 8
    # The probe sees the difference: Scrapy's scheduler with a plain priority queue hands
    # the downloader a host's links in a row, and they wait in its slot.
    (tmp_path / "plain").mkdir()
    _, plain = probed_crawl(
        testweb,
        seeds,
        tmp_path / "plain",
        SCHEDULER="scrapy.core.scheduler.Scheduler",
        SCHEDULER_PRIORITY_QUEUE="scrapy.pqueues.ScrapyPriorityQueue",
        **polite,
    )
    assert plain["probe/slot_active_max"] > 1


# --- kill -9 ---------------------------------------------------------------------------

KILL_WEB = (11, 30)  # seed, hosts: its own small test web
KILL_CONCURRENCY = 8


def page_requests(access_log: Path) -> list[str]:
    lines = access_log.read_text(encoding="utf-8").splitlines()
    urls = [json.loads(line)["url"] for line in lines]
    return [url for url in urls if not url.endswith("/robots.txt")]


@pytest.mark.parametrize("compact", [False, True], ids=["log", "log-compacted"])
def test_kill_9_then_resume_fetches_every_page_once_but_those_in_flight(
        tmp_path: Path, compact: bool) -> None:
    """With the log compacted as often as it can be (the requests done gone from it, the
    Bloom filter's checkpoint the only copy of their urls), nothing changes either."""
    access = tmp_path / "access.jsonl"
    truth = load_truth(*KILL_WEB)
    seeds = [url for url, page in truth.items() if page["kind"] == "home"]
    expected = reach(truth, seeds).stored(truth)
    with TestWebProcess(*KILL_WEB, access_log=access) as web:
        settings = {
            "TIANWANG_PROXY": web.address,
            "JOBDIR": str(tmp_path / "job"),
            "ITEM_PIPELINES": STORAGE_ONLY,
            "CONCURRENT_REQUESTS": str(KILL_CONCURRENCY),
            "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
            "DOWNLOAD_DELAY": "0.1",  # slow enough that the kill lands midway
            "TIANWANG_EXPECTED_URLS": "20000",
        }
        if compact:
            settings["TIANWANG_LOG_COMPACT_MB"] = "0"
        command, env = crawl_command(
            "site",
            {"seeds": ",".join(seeds)},
            settings | {"TIANWANG_DATA_DIR": str(tmp_path / "data1")},
        )
        with open(tmp_path / "run1.log", "wb") as log:
            proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 120
        # Compacted, the log's first compaction comes once three quarters of it are done.
        while not access.exists() or len(page_requests(access)) < len(expected) // 3 or (
                compact and "compacted: " not in (tmp_path / "run1.log").read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, (
                tmp_path / "run1.log"
            ).read_text()[-2000:]
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        first = page_requests(access)
        result = scrapy_crawl(
            "site",
            {"seeds": ",".join(seeds)},
            settings | {"TIANWANG_DATA_DIR": str(tmp_path / "data2")},
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Resuming crawl" in result.stderr
        compactions = (tmp_path / "run1.log").read_text().count("compacted: "), \
            result.stderr.count("compacted: ")
        assert all(compactions) if compact else not any(compactions), compactions
    second = page_requests(access)[len(first) :]
    stored1, stored2 = read_tree(tmp_path / "data1"), read_tree(tmp_path / "data2")
    assert len(stored1) > 100 and len(stored2) > (30 if compact else 100)  # landed midway
    # Together the two runs stored exactly the pages an uninterrupted crawl stores.
    assert set(stored1) | set(stored2) == expected
    assert max(stored1.values()) == max(stored2.values()) == 1
    # Fetched again: only requests the first run had in flight at the kill. One of those may
    # come back twice in the second run (a retry the first run logged just before the kill,
    # beside the request it retries), so every extra fetch counts against that bound.
    refetched = set(first) & set(second)
    # In flight means held by the engine: downloading (CONCURRENT_REQUESTS) or downloaded and
    # waiting in Scrapy's scraper to be parsed and stored, which under load holds as many again.
    again = len(refetched) + len(second) - len(set(second))
    assert again <= 2 * KILL_CONCURRENCY, (sorted(refetched), Counter(second).most_common(3))
    assert set(stored1) & set(stored2) <= refetched


@pytest.mark.parametrize("checkpoint", [True, False], ids=["bloom-kept", "bloom-lost"])
def test_a_compacted_log_relies_on_the_bloom_checkpoint_and_says_so_when_it_is_gone(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, checkpoint: bool) -> None:
    frontier, _ = scheduler(JOBDIR=str(tmp_path), TIANWANG_LOG_COMPACT_MB=0)
    urls = [f"http://h{i % 4}.example.com/p{i}.html" for i in range(40)]
    for url in urls:
        frontier.enqueue_request(Request(url))
    assert sorted(drain(frontier)) == sorted(urls)
    frontier.enqueue_request(Request("http://h0.example.com/later.html"))  # still pending
    frontier.close("shutdown")
    assert frontier.stats.get_value("tianwang/frontier/log_compactions") >= 1
    if not checkpoint:
        (tmp_path / STATE_DIR / "bloom.bin").unlink()
    again, _ = scheduler(JOBDIR=str(tmp_path))
    assert drain(again) == ["http://h0.example.com/later.html"]
    assert again.enqueue_request(Request(urls[3])) is not checkpoint  # known, or not
    assert ("are not known, and those linked again will be fetched again" in caplog.text) \
        is not checkpoint
    again.close("finished")


def test_a_request_sent_back_to_wait_is_queued_again_with_its_own_dont_filter() -> None:
    """A middleware sends a request back with dont_filter set (it must pass the filter
    again) and its own in meta_keys.DONT_FILTER; queued again, it has its own back, so that a
    redirect made from it goes through the filter (a target fetched already is not again)."""
    frontier, _ = scheduler()
    frontier.enqueue_request(Request("http://a.example.com/index.htm"))
    request = frontier.next_request()
    again = send_back(request)  # as RobotsMiddleware and BackoffMiddleware do
    assert frontier.enqueue_request(again)
    assert again.dont_filter is False and meta_keys.DONT_FILTER not in again.meta
    frontier.enqueue_request(Request("http://a.example.com/"))  # the redirect's target, known
    assert not frontier.enqueue_request(again.replace(url="http://a.example.com/"))
    frontier.close("finished")
    assert frontier.stats.get_value("tianwang/frontier/requeued") == 1


class OldSpider(UnitSpider):
    """The spider as it was when the job was logged: a callback since renamed."""

    def parse_old(self, response):
        return None


def test_a_logged_request_that_cannot_be_read_is_set_aside_and_the_picks_go_on(
        tmp_path: Path) -> None:
    crawler = project_crawler(TIANWANG_EXPECTED_URLS=10_000, JOBDIR=str(tmp_path), **NO_FIRSTS)
    frontier = FrontierScheduler.from_crawler(crawler)
    old = OldSpider()
    frontier.open(old)
    for i in range(6):
        frontier.enqueue_request(Request(f"http://h{i}.example.com/",
                                         callback=old.parse_old if i == 2 else old.parse))
    frontier.close("shutdown")
    again, _ = scheduler(JOBDIR=str(tmp_path))
    urls = drain(again)
    assert sorted(urls) == [f"http://h{i}.example.com/" for i in (0, 1, 3, 4, 5)]
    assert again.counts["tianwang/error/unreadable_request"] == 1
    assert not again.has_pending_requests()
    again.close("finished")
    third, _ = scheduler(JOBDIR=str(tmp_path))  # set aside once: marked done
    assert drain(third) == [] and not third.counts["tianwang/error/unreadable_request"]
    third.close("finished")


class FaultyScheduler(FrontierScheduler):
    """A frontier with a fault in handing out: its fourth request raises."""

    handed = 0

    def _next_request(self):
        request = super()._next_request()
        if request is not None:
            FaultyScheduler.handed += 1
            if FaultyScheduler.handed == 4:
                raise RuntimeError("a fault of the frontier's own")
        return request


def test_a_fault_handing_out_a_request_stops_the_crawl_in_one_line_not_a_hang(
        testweb: TestWeb, tmp_path: Path) -> None:
    seeds = [url for url, page in testweb.truth.items() if page["kind"] == "home"]
    settings = {"TIANWANG_PROXY": testweb.address, "TIANWANG_DATA_DIR": str(tmp_path / "data"),
                "SCHEDULER": "tests.test_frontier_scheduler.FaultyScheduler",
                "ITEM_PIPELINES": STORAGE_ONLY}
    result = scrapy_crawl("site", {"seeds": ",".join(seeds)}, settings, cwd=tmp_path,
                          timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert ("Frontier: handing out a request failed (RuntimeError: a fault of the frontier's "
            "own); the crawl stops") in result.stderr
    last = result.stderr.rstrip().splitlines()[-1]
    assert "crawl FAILED (stopped: frontier_error)" in last, last
