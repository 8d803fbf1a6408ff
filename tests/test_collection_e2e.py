"""The whole collection build end to end, as an operator runs it, on the collection test web.

url lists -> hosts count -> hosts clean -> the validate spider -> hosts dealias -> hosts
filter -> `cut -f1 D4` as the seeds -> `scrapy crawl site -s TIANWANG_VERTICAL=collection`
(breadth first, 3 levels, in-host, text pages, no limit per host; every copy stored, as
tests/collection_crawl.py) -> `tianwang dedup` -> `tianwang sample --seed 1` ->
`tianwang stats`: docs/collection.md's recipe.

The steps D0..D4 are held to the truth one by one in tests/test_collection_hosts_e2e.py, the
sample and stats on a plain test web in tests/test_collection_sample.py and
tests/test_collection_stats.py. Here the output of each step is the next one's input, and
the end is compared with the truth: the deduped tree holds exactly the pages a correct crawl
of the D4 sites holds, and the stats report's figures are those of the truth's pages of the
sampled hosts (the stats tests' own truth computations, called on this crawl).

What a D4 name serves (tianwang/testweb/hostlist.py), and so what a correct crawl of it holds:
- a host of the web (normal names, the kept name of the www, port and redirect alias groups
  and of a tie won by the web host's name): the web's pages, reached as tests/truth.py says;
- a kept alias name that is not a web host (`mirror.X` of the "pages" group, or of the "tie"
  group when it wins): the proxy answers its urls with the web host H's responses byte for
  byte. Its pages link H's pages relatively (in-host: fetched under the alias name) or
  absolutely (render.py's `_anchor`, about 15%: H's urls, another host, not followed), and
  its redirects say `Location: http://H/...` (a redirect is followed to any host, as
  tests/truth.py's reach does, and that page's in-host links are then H's). Which links a page
  writes relatively is read from the served body (`<a>`/`<area>` hrefs, written here without
  the spider's code) and checked against the truth's link list, so the expected pages are the
  truth's records of H moved to the alias name, the graph walked with tests/truth.py's reach;
  dedup keeps the shortest url of a body, H's when both names were fetched;
- a name of a multi-host domain (`*.yanyuan8.edu.cn`): one template homepage without links,
  404 for every other path, so a crawl holds its homepage alone.
Any other kind of D4 name fails the test by name: it would be a class this test cannot predict.

D4 spells each site `http://host:80/` while its pages link `http://host/...`: the crawl
must treat both as one url (tianwang.urls.canonical_url drops the default port).
The stats checks are tests/test_collection_stats.py's own test functions, called with this
crawl's report and truth pages (they read only those two), so the truth is computed once.
"""

from __future__ import annotations

import hashlib
import html
import re
import subprocess
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

import tests.test_collection_stats as stats_truth
from tests.collection_crawl import deduped, site_sizes
from tests.conftest import (
    COLLECTION_HOSTS,
    COLLECTION_PAGES,
    COLLECTION_SEED,
    ROOT,
    scrapy_crawl,
    tianwang_cli,
)
from tests.truth import host_of, load_truth
from tianwang.formats import iter_tree
from tianwang.testweb.hostlist import CollectionWeb

SAMPLE_SEED = 1
# The crawl step of docs/collection.md's recipe: its settings, as the page gives them.
RECIPE_CRAWL = {"TIANWANG_VERTICAL": "collection", "JOBDIR": "job"}
_HREF = re.compile(rb"""<(?:a|area)\s[^>]*?\bhref="([^"]*)\"""", re.IGNORECASE)


def run(*args: str) -> str:
    result = tianwang_cli(*args)
    assert result.returncode == 0, (args, result.stderr[-3000:])
    return result.stdout


@pytest.fixture(scope="module")
def built(collection_web, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every step once, each reading the previous step's output."""
    work = tmp_path_factory.mktemp("collection_e2e")
    proxy = {"TIANWANG_PROXY": collection_web.address}
    run("hosts", "count", *map(str, collection_web.url_lists()), "-o", str(work / "d0"),
        "--workers", "2")
    run("hosts", "clean", str(work / "d0"), "-o", str(work / "d1"))
    crawl = scrapy_crawl("validate", {"sites": str(work / "d1"), "out": str(work / "d2")},
                         proxy, cwd=work)
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    run("hosts", "dealias", str(work / "d2"), "-o", str(work / "d3"))
    run("hosts", "filter", str(work / "d3"), "-o", str(work / "d4"), "--spam-list",
        str(collection_web.files / "spamlist.txt"))
    with open(work / "seeds.txt", "wb") as seeds:  # cut -f1 D4 > seeds.txt
        subprocess.run(["cut", "-f1", str(work / "d4")], stdout=seeds, check=True)
    settings = {**proxy, "TIANWANG_DATA_DIR": str(work / "data"), **RECIPE_CRAWL}
    crawl = scrapy_crawl("site", {"seeds": str(work / "seeds.txt")}, settings, cwd=work)
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    run("dedup", str(work / "data"), "--out", str(work / "dedup"))
    run("sample", str(work / "dedup"), "--out", str(work / "sample"), "--seed",
        str(SAMPLE_SEED))
    report = run("stats", str(work / "sample"))
    seeds = (work / "seeds.txt").read_text(encoding="utf-8").split()
    return {"work": work, "seeds": seeds, "report": report}


@pytest.fixture(scope="module")
def truth() -> dict[str, dict]:
    """The served web's pages (CollectionWeb serves a junk SyntheticWeb's hosts)."""
    return load_truth(COLLECTION_SEED, COLLECTION_HOSTS, COLLECTION_PAGES, "--junk")


@pytest.fixture(scope="module")
def expected(built: dict, collection_web, truth: dict[str, dict]) -> dict[str, dict]:
    """url -> truth page of every page the deduped crawl of the D4 sites must hold."""
    web = CollectionWeb(COLLECTION_SEED, COLLECTION_HOSTS, COLLECTION_PAGES)
    assert web.hosts  # builds the host list, and with it the alias and template maps
    kept = [r for r in collection_web.truth.values() if r["step"] is None]
    assert sorted(f"http://{r['host']}:80/" for r in kept) == sorted(built["seeds"])
    web_hosts = {page["host"] for page in truth.values()}
    pages = dict(truth)
    for record in kept:
        name = record["host"]
        if name in web_hosts:
            continue
        if name in web.alias_netlocs:
            pages |= alias_pages(web, truth, name, web.alias_netlocs[name])
        elif name in web.templated:
            pages[f"http://{name}/"] = template_home(web, name)
        else:
            pytest.fail(f"D4 keeps {name} ({record['class']}): what it serves is not predicted")
    return deduped(pages, [f"http://{r['host']}/" for r in kept])


def alias_pages(web: CollectionWeb, truth: dict[str, dict], name: str, host: str) -> dict:
    """The truth of host's pages as the alias name serves them: same bodies and statuses,
    the links the body writes resolved against the alias url."""
    pages = {}
    for url, page in truth.items():
        if page["host"] != host:
            continue
        moved = f"http://{name}{url[len(f'http://{host}'):]}"
        answer = web.respond(moved)
        if page["status"] == 200:
            assert page["md5"] == md5(answer.body), moved  # served byte for byte
        links = written_links(moved, answer.body) if page["content_type"] == "text/html" else []
        assert {on_host(link, name, host) for link in links} == set(page["links"]), moved
        pages[moved] = {**page, "url": moved, "host": name, "links": links}
    return pages


def written_links(url: str, body: bytes) -> list[str]:
    """The page's <a>/<area> hrefs made absolute, fragments and non-http links dropped."""
    links = {}
    for match in _HREF.finditer(body):
        href = html.unescape(match.group(1).decode("ascii")).strip()
        link = urljoin(url, href).split("#", 1)[0]
        if href and not href.startswith("#") and urlsplit(link).scheme in ("http", "https"):
            links[link] = None
    return list(links)


def on_host(link: str, name: str, host: str) -> str:
    prefix = f"http://{name}/"
    return f"http://{host}/{link[len(prefix):]}" if link.startswith(prefix) else link


def template_home(web: CollectionWeb, name: str) -> dict:
    answer = web.respond(f"http://{name}/")
    assert answer.status == 200 and web.respond(f"http://{name}/robots.txt").status == 404
    return {"url": f"http://{name}/", "host": name, "status": 200,
            "content_type": answer.header("Content-Type").split(";")[0], "links": [],
            "kind": "home", "location": None, "robots_allowed": True,
            "bytes": len(answer.body), "md5": md5(answer.body)}


def md5(body: bytes) -> str:
    return hashlib.md5(body).hexdigest()


def tree_urls(tree: Path) -> set[str]:
    return {record.url for _path, record in iter_tree(tree)}


@pytest.fixture(scope="module")
def sampled(built: dict, expected: dict[str, dict]) -> dict:
    """What tests/test_collection_stats.py's checks read: the report and the truth's pages of
    the sampled hosts."""
    hosts = {host_of(url) for url in tree_urls(built["work"] / "sample")}
    pages = {url: page for url, page in expected.items() if host_of(url) in hosts}
    return {"report": built["report"], "pages": pages}


def test_the_deduped_crawl_of_d4_holds_the_pages_the_truth_says(
    built: dict, expected: dict[str, dict], truth: dict[str, dict],
) -> None:
    stored = tree_urls(built["work"] / "dedup")
    assert sorted(stored - set(expected)) == [] and sorted(set(expected) - stored) == []
    served = {page["host"] for page in expected.values()} - {p["host"] for p in truth.values()}
    assert any(name.startswith("mirror.") for name in served)  # an alias name was crawled
    assert any(name.endswith(".yanyuan8.edu.cn") for name in served)  # and template names


def test_no_page_is_fetched_twice_under_two_spellings(built: dict) -> None:
    """D4 spells a site `http://host:80/`, its pages link `http://host/...`: one url."""
    fetched = [record.url for _path, record in iter_tree(built["work"] / "data")]
    assert len(set(fetched)) == len(fetched)
    assert [url for url in fetched if urlsplit(url).port is not None] == []


def test_the_sample_keeps_whole_hosts_of_drawn_sizes(built: dict, expected: dict) -> None:
    sizes = site_sizes(expected)
    kept = {host_of(url) for url in tree_urls(built["work"] / "sample")}
    kept_sizes = {sizes[host] for host in kept}
    assert kept == {host for host, size in sizes.items() if size in kept_sizes}
    assert 0 < len(kept) < len(sizes)


def test_the_size_table_equals_the_truth_of_the_sampled_hosts(sampled: dict) -> None:
    stats_truth.test_size_table_equals_the_truth_of_the_sampled_pages(sampled)


def test_the_domain_types_equal_the_truth_of_the_sampled_hosts(sampled: dict) -> None:
    stats_truth.test_domain_types_equal_the_truth_of_the_sampled_pages(sampled)


def test_the_page_forms_equal_the_truth_of_the_sampled_hosts(sampled: dict) -> None:
    stats_truth.test_page_forms_equal_the_truth_of_the_sampled_pages(sampled)


def test_the_docs_recipe_is_the_one_run_here() -> None:
    """docs/collection.md gives the commands this module runs, the crawl's settings too."""
    text = (ROOT / "docs" / "collection.md").read_text(encoding="utf-8")
    recipe = "\n".join(re.findall(r"```sh\n(.+?)\n```", text, re.DOTALL))
    crawl = "scrapy crawl site -a seeds=seeds.txt " + " ".join(
        f"-s {name}={value}" for name, value in RECIPE_CRAWL.items())
    steps = ["tianwang hosts count", "tianwang hosts clean", "scrapy crawl validate",
             "tianwang hosts dealias", "tianwang hosts filter", "cut -f1 D4 > seeds.txt",
             crawl, "tianwang dedup", "tianwang sample", "tianwang stats"]
    lines = recipe.splitlines()
    found = [next((i for i, line in enumerate(lines) if step in line), None) for step in steps]
    assert None not in found, dict(zip(steps, found, strict=True))
    assert found == sorted(found)  # in this order
