"""`tianwang testweb serve --graph DIR`: a recorded link graph served as a web, checked
against the graph the test writes (and the UCI crawl's README, when that data is here)."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import TestWeb, scrapy_crawl, serve_graph, tianwang_cli, write_graph
from tests.test_spiders_site import read_tree
from tests.truth import reach
from tianwang.analysis.sitegraph import GraphDirError
from tianwang.analysis.sitepartition import Plan
from tianwang.formats.partitionplan import PlanFile, SitePlan
from tianwang.testweb.graph import GraphWeb, served_plan, served_url
from tianwang.testweb.launcher import TestWebProcess

# Two hosts; an https page, a host in capitals, a space and a default port to be normalized,
# and a page nothing links to.
URLS = [
    "http://a.test/",
    "https://a.test/docs/intro.html",
    "http://A.TEST/docs/guide.html?part=1",
    "http://a.test/docs/page with space.html",
    "http://b.test/",
    "http://a.test/unlinked.html",
    "https://b.test:443/x/",
]
SERVED = [
    "http://a.test/",
    "http://a.test/docs/intro.html",
    "http://a.test/docs/guide.html?part=1",
    "http://a.test/docs/page%20with%20space.html",
    "http://b.test/",
    "http://a.test/unlinked.html",
    "http://b.test/x/",
]
LINKS = [(0, 1), (0, 2), (1, 3), (3, 0), (0, 4), (4, 6), (2, 1), (6, 4)]
UCI = Path(__file__).resolve().parents[2] / "shared" / "data" / "uci-ics-dev-crawl"


class Hrefs(HTMLParser):
    """The <a href> values of a page, by the standard library's parser."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "a":
            self.hrefs += [value for name, value in attrs if name == "href"]


def hrefs(body: bytes) -> list[str]:
    parser = Hrefs()
    parser.feed(body.decode("utf-8"))
    return parser.hrefs


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_graph(tmp_path_factory.mktemp("graph") / "g", URLS, LINKS)


@pytest.fixture(scope="module")
def graph_web(graph_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    yield from serve_graph(graph_dir, tmp_path_factory.mktemp("graphweb") / "access.jsonl")


def test_recorded_urls_are_served_as_http_normalized() -> None:
    assert [served_url(url) for url in URLS] == SERVED


def test_every_page_is_served_with_its_recorded_links(graph_dir: Path) -> None:
    web = GraphWeb.from_dir(graph_dir)
    for page, url in enumerate(URLS):
        answer = web.respond(SERVED[page])
        assert answer.status == 200 and answer.header("Content-Type").startswith("text/html")
        assert hrefs(answer.body) == [SERVED[dst] for src, dst in LINKS if src == page]
        assert web.respond(url).body == answer.body  # asked as recorded: the same page
    bodies = {hashlib.md5(web.respond(url).body).hexdigest() for url in SERVED}
    assert len(bodies) == len(SERVED)  # distinct, so MD5 dedup merges no two pages


def test_other_urls_are_404_and_robots_allows_everything(graph_dir: Path) -> None:
    web = GraphWeb.from_dir(graph_dir)
    for url in ("http://a.test/docs/", "http://a.test/nope.html", "http://c.test/"):
        assert web.respond(url).status == 404
    robots = web.respond("http://b.test/robots.txt")
    assert robots.status == 200 and robots.body == b"User-agent: *\nDisallow:\n"
    assert web.respond("http://c.test/robots.txt").status == 404  # no host of the graph


@pytest.mark.parametrize(
    ("pages", "edges", "named"),
    [
        ("id\turl\thost\n0\thttp://a.test/\ta.test\n", "src\tdst\n0\t7\n", "edges.tsv line 2"),
        ("id\turl\thost\n0\thttp://a.test/\ta\n0\thttp://a.test/x\ta\n", "s\td\n",
         "pages.tsv line 3: page id 0 again"),
        ("id\turl\thost\nzero\thttp://a.test/\ta\n", "s\td\n", "pages.tsv line 2"),
        ("id\turl\thost\n0\tnot a url\ta\n", "s\td\n", "pages.tsv: page 0"),
        (None, "s\td\n", "cannot read"),
    ],
)
def test_a_bad_graph_is_named_by_file_and_line(
    tmp_path: Path, pages: str | None, edges: str, named: str
) -> None:
    if pages is not None:
        (tmp_path / "pages.tsv").write_text(pages)
    (tmp_path / "edges.tsv").write_text(edges)
    with pytest.raises(GraphDirError, match=named):
        GraphWeb.from_dir(tmp_path)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--graph", "MISSING"], "cannot read"),  # the server prints no address
        ([], "--seed, --hosts (or --graph)"),
        (["--graph", "G", "--seed", "1"], "no --seed, --hosts"),
        (["--graph", "G", "--mirrors"], "no --seed, --hosts"),
    ],
)
def test_serve_takes_a_graph_or_a_synthetic_web_not_both(
    graph_dir: Path, args: list[str], said: str
) -> None:
    names = {"G": str(graph_dir), "MISSING": str(graph_dir / "missing")}
    served = tianwang_cli("testweb", "serve", *(names.get(arg, arg) for arg in args))
    assert served.returncode == 2 and said in served.stderr and not served.stdout


def fetch(web: TestWeb, url: str) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": web.address}))
    try:
        with opener.open(url, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_server_answers_as_the_graph_says(graph_web: TestWeb, graph_dir: Path) -> None:
    since = len(graph_web.access_log.read_text().splitlines())
    for page, url in enumerate(SERVED):
        status, body = fetch(graph_web, url)
        assert status == 200 and hrefs(body) == [SERVED[d] for s, d in LINKS if s == page]
    assert fetch(graph_web, "http://a.test/missing.html")[0] == 404
    log = [json.loads(line) for line in graph_web.access_log.read_text().splitlines()[since:]]
    assert [(entry["url"], entry["status"]) for entry in log] == [
        *((url, 200) for url in SERVED), ("http://a.test/missing.html", 404)
    ]


def test_a_crawl_of_the_served_graph_stores_every_reachable_page(
    graph_web: TestWeb, tmp_path: Path
) -> None:
    homes = ["http://a.test/", "http://b.test/"]
    settings = {"TIANWANG_PROXY": graph_web.address, "TIANWANG_DATA_DIR": str(tmp_path / "data"),
                "TIANWANG_MAX_LEVELS": "0"}
    result = scrapy_crawl("site", {"seeds": ",".join(homes)}, settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    stored = [record["header"]["url"] for record in read_tree(tmp_path / "data")]
    expected = reach(graph_web.truth, homes, max_levels=0).stored(graph_web.truth)
    assert sorted(stored) == sorted(expected)
    assert expected == set(SERVED) - {"http://a.test/unlinked.html"}  # nothing links to it


@pytest.mark.skipif(not (UCI / "pages.tsv").exists(), reason="the UCI crawl is not here")
def test_the_uci_crawl_is_served_at_its_real_urls(tmp_path: Path) -> None:
    """The README's sample: page 0 is aiclub's homepage and links page 22475, Ihler's page
    (recorded as https, served as http)."""
    with TestWebProcess.for_graph(UCI) as process:
        web = TestWeb(process.address, tmp_path / "none", {}, 0, 88)
        status, body = fetch(web, "http://aiclub.ics.uci.edu/")
        assert status == 200 and "http://www.ics.uci.edu/~ihler/" in hrefs(body)
        assert fetch(web, "http://www.ics.uci.edu/~ihler/")[0] == 200
        assert fetch(web, "http://www.ics.uci.edu/~nobody-here/")[0] == 404


def test_a_plan_of_the_recorded_graph_is_moved_to_the_served_urls() -> None:
    """Key paths name no scheme; the homepage and seeds move with their pages (https as http),
    so a share crawled through the graph web starts where the pages are served."""
    plan = Plan(2, {"b.test/x": 1, "b.test/": 0}, (("http://B.test/",), ("https://b.test/x/",)))
    recorded = PlanFile(2, 0.9, {"b.test": SitePlan("https://b.test:443/", 2, plan)})
    served = served_plan(recorded).sites["b.test"]
    assert served.homepage == "http://b.test/" and served.pages == 2
    assert served.plan.owner == plan.owner
    assert served.plan.seeds == (("http://b.test/",), ("http://b.test/x/",))
