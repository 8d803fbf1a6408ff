"""`tianwang hosts homepage` (seed 001's PERS) on a real crawl of the test web with hidden
roots (testweb/hiddenroot.py): every third site's `/` answers 404 and its homepage lives
elsewhere; the crawl starts from the sites' sub-pages, and the homepage found for each site
is checked against the truth."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import scrapy_crawl, tianwang_cli
from tests.truth import load_truth
from tianwang.collection.homepage import depth, find_homepage, links_of, site_name, terms
from tianwang.testweb.hiddenroot import HOME_PATHS
from tianwang.testweb.launcher import TestWebProcess, write_seeds
from tianwang.testweb.model import SyntheticWeb

SEED, HOSTS, PAGES = 23, 12, 40


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    work = tmp_path_factory.mktemp("homepage")
    truth = load_truth(SEED, HOSTS, PAGES, "--hidden-roots")
    homes = {page["host"]: url for url, page in truth.items() if page["kind"] == "home"}
    # the sub-pages one link below each homepage: what a url list holds of a site
    seeds = sorted(url for url, page in truth.items()
                   if page["distance"] == 1 and page["kind"] == "html"
                   and page["host"] == url.split("/")[2])
    with TestWebProcess(SEED, HOSTS, PAGES, access_log=work / "access.jsonl",
                        extra_args=("--hidden-roots",)) as web:
        settings = {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(work / "data"),
                    "TIANWANG_MAX_LEVELS": "2"}
        result = scrapy_crawl("site", {"seeds": str(write_seeds(work / "seeds.txt", seeds))},
                              settings, cwd=work)
        assert result.returncode == 0, result.stderr[-3000:]
    run = tianwang_cli("hosts", "homepage", str(work / "data"))
    assert run.returncode == 0, run.stderr
    found = {line.split("\t")[0]: line.split("\t") for line in run.stdout.splitlines()}
    # a site of its homepage alone has no sub-page to start from, nor to find it by
    seeded = {url.split("/")[2] for url in seeds}
    homes = {host: url for host, url in homes.items() if host in seeded}
    hidden = {host for host, url in homes.items() if not url.endswith("/")}
    yield {"homes": homes, "hidden": hidden, "found": found, "stderr": run.stderr,
           "work": work, "all_hidden": {h for h, u in homes.items() if not u.endswith("/")}}


def test_the_web_has_sites_with_hidden_roots(crawled: dict) -> None:
    assert len(crawled["hidden"]) >= 3  # of hosts 1, 4, 7, 10, those with sub-pages


def test_the_homepage_of_each_site_whose_root_is_hidden(crawled: dict) -> None:
    found, homes = crawled["found"], crawled["homes"]
    web = SyntheticWeb(SEED, HOSTS, PAGES, hidden_roots=True)
    signalled = set()
    for host in crawled["hidden"]:
        assert found[host][3] == "missing"  # the crawl never stored its /
        path = homes[host].removeprefix(f"http://{host}")
        if path in HOME_PATHS or web.site(host).entries[homes[host]].anchor is None:
            signalled.add(host)
    # Where the site says "home" (its sub-pages link it as 首页, or its path holds a home
    # word), PERS finds it on each such site. Where it says neither, only the linking
    # sub-pages over depth are left, and the finder may miss (bench/homepage.py measures
    # it on 23 such sites and on real ones).
    assert signalled and len(signalled) < len(crawled["hidden"])  # both kinds on this web
    right = {host for host in crawled["hidden"] if found[host][1] == homes[host]}
    assert signalled <= right, {h: found[h] for h in signalled - right}
    assert (f"homepage: {len(crawled['homes'])} sites, {len(crawled['hidden'])} without their "
            "/ stored") in crawled["stderr"]


def test_a_site_whose_root_answers_keeps_it(crawled: dict) -> None:
    found, homes = crawled["found"], crawled["homes"]
    for host, url in homes.items():
        if host not in crawled["hidden"]:
            assert found[host][1:4:2] == [url, "ok"]


def test_missing_only_and_a_file_written_whole(crawled: dict) -> None:
    out = crawled["work"] / "homepages.tsv"
    run = tianwang_cli("hosts", "homepage", str(crawled["work"] / "data"), "--missing-only",
                       "--out", str(out))
    assert run.returncode == 0, run.stderr
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(row[0] for row in rows) == sorted(crawled["hidden"])
    assert [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")] == []


# --- the model on hand-made sites -----------------------------------------------------------

S = "http://s.test"


def test_terms_cut_chinese_into_bigrams() -> None:
    assert terms("返回首页 Home-Page") == ["home", "page", "返回", "回首", "首页"]
    assert terms("页") == ["页"]


def test_links_and_depth() -> None:
    body = '<a href="../index.asp#top">首页</a><a href="mailto:x@y">m</a>'.encode()
    assert links_of(f"{S}/a/b.html", body, "utf-8") == [(f"{S}/index.asp", "首页")]
    assert (depth(f"{S}/"), depth(f"{S}/index.asp"), depth(f"{S}/cms/x/")) == (0, 0, 2)


def test_the_page_the_sub_pages_call_home_wins_over_a_busier_one() -> None:
    # /news/ is linked by more pages, but only as 新闻; /main.php is called 首页
    pages = {
        f"{S}/main.php": [(f"{S}/news/", "新闻")],
        f"{S}/news/": [(f"{S}/main.php", "首页")],
        **{f"{S}/news/{k}.html": [(f"{S}/news/", "新闻"), (f"{S}/main.php", "返回首页")]
           for k in range(2)},
        f"{S}/news/2.html": [(f"{S}/news/", "新闻")],
        f"{S}/news/3.html": [(f"{S}/news/", "新闻")],
    }
    assert find_homepage("s.test", pages).homepage == f"{S}/main.php"
    # without a word for home on the site, the prior decides: related sub-pages over depth + 1,
    # x.html (3 + 1)/1 against news/ (5 + 1)/2; with three more pages linking news/, 9/2
    plain = {f"{S}/x.html": [(f"{S}/news/", "x")], f"{S}/news/": [(f"{S}/x.html", "x")],
             **{f"{S}/news/{k}.html": [(f"{S}/news/", "x")] + [(f"{S}/x.html", "x")] * (k < 2)
                for k in range(4)}}
    assert find_homepage("s.test", plain).homepage == f"{S}/x.html"
    plain |= {f"{S}/news/{k}.html": [(f"{S}/news/", "x")] for k in (4, 5, 6)}
    assert find_homepage("s.test", plain).homepage == f"{S}/news/"


def test_bad_lambda_and_missing_dir(tmp_path: Path) -> None:
    run = tianwang_cli("hosts", "homepage", str(tmp_path), "--lambda", "1")
    assert run.returncode == 2 and "--lambda 1 must be in (0, 1)" in run.stderr
    run = tianwang_cli("hosts", "homepage", str(tmp_path / "no"))
    assert run.returncode == 1 and "no such directory" in run.stderr


def test_a_site_names_its_homepage_by_its_name_and_index_may_be_another_page() -> None:
    # A Sphinx tree: every page's title ends with the project's name; every page links the
    # homepage by that name (the logo) and the general index as "Index"
    title = "{} — Frob 2.1 documentation"
    names = ("Install", "Usage", "API", "Changes")
    pages = {f"{S}/html/{n.lower()}.html": [(f"{S}/html/index.html", "Frob 2.1"),
                                            (f"{S}/html/genindex.html", "Index")]
             for n in names}
    pages[f"{S}/html/index.html"] = [(f"{S}/html/genindex.html", "Index")] + [
        (f"{S}/html/{n.lower()}.html", n) for n in names]
    pages[f"{S}/html/genindex.html"] = [(f"{S}/html/index.html", "Frob 2.1")]
    titles = {url: title.format(url.rsplit("/", 1)[1].split(".")[0].title()) for url in pages}
    assert site_name(titles.values()) == ["1", "2", "documentation", "frob"]
    assert find_homepage("s.test", pages, titles=titles).homepage == f"{S}/html/index.html"
    # without the site's name in the query, "index" is what the site calls it
    assert (find_homepage("s.test", pages, titles=titles, without=("name",)).homepage
            == f"{S}/html/genindex.html")


def test_signals_left_out_on_the_command_line(crawled: dict) -> None:
    run = tianwang_cli("hosts", "homepage", str(crawled["work"] / "data"), "--without",
                       "anchor", "--without", "url")
    assert run.returncode == 0, run.stderr
    run = tianwang_cli("hosts", "homepage", str(crawled["work"] / "data"), "--without", "x")
    assert run.returncode == 2 and "invalid choice: 'x'" in run.stderr


# --- real sites: Debian's html documentation trees, served by nginx -------------------------

@pytest.fixture(scope="module")
def real_sites(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Six packages' trees (tests/realdocs.py), one site each: `/` a 404, the homepage the
    one the package declares (doc-base Index: /html/index.html, /index.html,
    /docs/index.en.html), every page crawled as from a url list of the site."""
    from tests.realdocs import TEST_PACKAGES, doc_sites, serving

    work = tmp_path_factory.mktemp("realsites")
    sites = doc_sites(TEST_PACKAGES)
    with serving(sites, work / "nginx") as web:
        seeds = write_seeds(work / "seeds.txt", [s.url(p) for s in sites for p in s.paths])
        result = scrapy_crawl("site", {"seeds": str(seeds)},
                              {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR":
                               str(work / "data"), "TIANWANG_MAX_LEVELS": "1"}, cwd=work)
        assert result.returncode == 0, result.stderr[-3000:]
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": web.address}))
        with pytest.raises(urllib.error.HTTPError) as root:  # each site's / fails
            opener.open(sites[0].url("/"))
        assert root.value.code == 404
        root.value.close()

    def found(*without: str) -> dict[str, str]:
        args = [a for w in without for a in ("--without", w)]
        run = tianwang_cli("hosts", "homepage", str(work / "data"), *args)
        assert run.returncode == 0, run.stderr
        return {line.split("\t")[0]: line.split("\t")[1] for line in run.stdout.splitlines()}

    return {"sites": sites, "found": found}


def test_real_sites_homepages_found_and_the_sites_name_is_what_finds_them(
        real_sites: dict) -> None:
    sites = real_sites["sites"]
    assert len(sites) == 6 and all(not s.homepage.endswith("/") for s in sites)

    def right(found: dict[str, str]) -> set[str]:
        return {s.package for s in sites if found.get(s.host) == s.homepage}

    every = right(real_sites["found"]())
    # Measured: 5 of 6 (gettext's Texinfo tree: its Top node is linked as "Top", its
    # chapters' titles share nothing but "GNU gettext utilities"; a chapter wins there)
    assert len(every) >= 5, every
    # the site's name in the query is what finds them: without it, 2 of these 6
    assert len(right(real_sites["found"]("name"))) < len(every)
