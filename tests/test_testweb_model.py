"""The synthetic web's model and its ground truth, checked against the seeds' figures.

Every figure here is computed in the test from the truth records (path keys, depths, the
log-log fit), following docs/design.md, not with the model's own helpers.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import itertools
import json
import math
import re
from collections import Counter, defaultdict, deque

import pytest

from tianwang.testweb.model import SyntheticWeb

BIG_SEED, BIG_HOSTS = 2, 3000
PAGE_KINDS = {"home", "html", "text"}
KINDS = {"home", "html", "text", "image", "pdf", "binary", "redirect", "missing", "error", "robots"}
LABEL = re.compile(r"^[a-z][a-z0-9-]*$")
# http, a lowercase host, no port, a path; printable ASCII with nothing to escape, no fragment
CANONICAL = re.compile(r"http://([a-z0-9.-]+)(/[-A-Za-z0-9._~/?&=]*)")


@pytest.fixture(scope="module")
def big() -> list[dict]:
    """The url graph of a 3,000-host web (bodies are checked on smaller webs)."""
    return list(SyntheticWeb(BIG_SEED, BIG_HOSTS).truth(bodies=False))


@pytest.fixture(scope="module")
def small() -> list[dict]:
    return list(SyntheticWeb(7, 25).truth())


def split(url: str) -> tuple[str, str]:
    """(host, path) of a truth url (http://host/path?query), without urlsplit's cost."""
    host, _, rest = url[len("http://") :].partition("/")
    return host, "/" + rest.split("?", 1)[0]


@functools.cache
def path_key(url: str) -> str:
    """docs/design.md 4: host + "/" + first segment if it is a directory, else host + "/"."""
    host, path = split(url)
    segments = path.split("/")
    first = segments[1] if len(segments) > 2 else ""
    return f"{host}/{first}"


def depth(url: str) -> int:
    """docs/design.md section 2: slashes in the path after removing one trailing slash."""
    path = split(url)[1]
    return path[:-1].count("/") if path.endswith("/") else path.count("/")


def loglog_slope(sizes: list[int], largest: int) -> float:
    """Least-squares slope of log(sites per unit size) on log(size), in octave bins."""
    counts = Counter(sizes)
    xs, ys = [], []
    low = 1
    while low <= largest:
        high = min(2 * low - 1, largest)
        sites = sum(counts[s] for s in range(low, high + 1))
        if sites:
            xs.append(sum(math.log10(s) for s in range(low, high + 1)) / (high - low + 1))
            ys.append(math.log10(sites / (high - low + 1)))
        low *= 2
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def test_same_seed_same_truth_other_seed_differs(small: list[dict]) -> None:
    assert list(SyntheticWeb(7, 25).truth()) == small
    other = list(SyntheticWeb(8, 25).truth())
    assert [r["md5"] for r in other] != [r["md5"] for r in small]
    assert SyntheticWeb(7, 25).hosts != SyntheticWeb(8, 25).hosts


def test_records_carry_every_key_with_its_type(small: list[dict]) -> None:
    for record in small:
        assert record["kind"] in KINDS
        assert isinstance(record["status"], int) and isinstance(record["links"], list)
        assert record["charset"] in ("utf-8", "gbk", None)
        assert isinstance(record["robots_allowed"], bool)
        assert re.fullmatch(r"[0-9a-f]{32}", record["md5"]) and record["bytes"] > 0
        assert (record["location"] is not None) == (record["kind"] == "redirect")


def test_host_names_are_realistic_and_unique() -> None:
    web = SyntheticWeb(BIG_SEED, BIG_HOSTS)
    hosts = web.hosts
    assert len(set(hosts)) == len(hosts) == BIG_HOSTS
    for host in hosts:
        labels = host.split(".")
        assert host == host.lower() and host.isascii() and ":" not in host
        assert all(LABEL.match(label) for label in labels), host
        with pytest.raises(ValueError):
            ipaddress.ip_address(host)
    tlds = Counter(host.split(".", 2)[2] for host in hosts)
    assert {"com", "com.cn", "edu.cn", "gov.cn", "org"} <= set(tlds)
    assert web.homepages() == [f"http://{host}/" for host in hosts]


def test_site_sizes_follow_seed_004_power_law(big: list[dict]) -> None:
    sizes = Counter(r["host"] for r in big if r["kind"] in PAGE_KINDS)
    assert len(sizes) == BIG_HOSTS and max(sizes.values()) <= 300
    slope = loglog_slope(list(sizes.values()), 300)
    assert -0.85 <= slope <= -0.55, slope


def test_three_quarters_of_links_stay_on_their_path_key(big: list[dict]) -> None:
    shares = [
        sum(path_key(link) == path_key(r["url"]) for link in r["links"]) / len(r["links"])
        for r in big
        if r["links"]
    ]
    mean = sum(shares) / len(shares)
    assert 0.70 <= mean <= 0.80, mean


def test_few_directories_hold_most_urls(big: list[dict]) -> None:
    """Seed 002: about 20% of a site's paths hold 90% of its urls (sites of 100+ pages)."""
    by_host: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in big:
        by_host[r["host"]][path_key(r["url"])] += 1
    shares = []
    for keys in by_host.values():
        total = sum(keys.values())
        if total >= 100:
            counts, held, needed = sorted(keys.values(), reverse=True), 0, 0
            while held < 0.9 * total:
                held, needed = held + counts[needed], needed + 1
            shares.append(needed / len(counts))
    assert 0.1 <= sum(shares) / len(shares) <= 0.3


def test_depths_url_forms_and_kinds_are_all_there(big: list[dict]) -> None:
    pages = [r for r in big if r["kind"] in PAGE_KINDS]
    depths = Counter(depth(r["url"]) for r in pages)
    assert depths[0] == BIG_HOSTS and all(depths[d] for d in range(9))
    assert sum(n for d, n in depths.items() if d >= 9) > 0
    assert any("?" in r["url"] and "&" in r["url"] for r in pages)
    for word in ("search", "proxy", "gate"):
        assert any(f"/{word}/" in r["url"] for r in pages if r["kind"] == "html"), word
    kinds = Counter(r["kind"] for r in big)
    assert set(kinds) == KINDS
    statuses = Counter(r["status"] for r in big)
    assert all(statuses[s] for s in (200, 301, 302, 404, 500))
    mimes = Counter(r["content_type"] for r in big if r["status"] == 200)
    for mime in (
        "text/html",
        "text/plain",
        "image/jpeg",
        "image/gif",
        "application/pdf",
        "application/octet-stream",
    ):
        assert mimes[mime], mime
    untold = re.compile(r"\.(zip|rar|exe|pdf|jpg|gif)$")  # nothing in the url gives the type
    assert any(r["kind"] == "binary" and not untold.search(split(r["url"])[1]) for r in big)
    assert any(r["kind"] == "image" and not untold.search(split(r["url"])[1]) for r in big)
    assert sum(not r["robots_allowed"] for r in big) > 0


def test_about_thirty_percent_of_html_pages_are_gbk(big: list[dict]) -> None:
    html = [r for r in big if r["kind"] in ("home", "html")]
    gbk = sum(r["charset"] == "gbk" for r in html) / len(html)
    assert 0.2 <= gbk <= 0.4, gbk
    assert {r["charset"] for r in html} == {"gbk", "utf-8"}


def test_urls_are_canonical_and_ordered(big: list[dict]) -> None:
    web_hosts = SyntheticWeb(BIG_SEED, BIG_HOSTS).hosts
    by_host: defaultdict[str, list[str]] = defaultdict(list)
    for r in big:
        by_host[r["host"]].append(r["url"])
        match = CANONICAL.fullmatch(r["url"])
        assert match and match[1] == r["host"], r["url"]
    assert list(by_host) == web_hosts
    for host, urls in by_host.items():
        assert urls[0] == f"http://{host}/" and urls[1:] == sorted(urls[1:])
        assert f"http://{host}/robots.txt" in urls
    assert len({r["url"] for r in big}) == len(big)


def test_every_link_target_is_a_truth_url(big: list[dict]) -> None:
    urls = {r["url"] for r in big}
    for r in big:
        assert len(set(r["links"])) == len(r["links"])
        assert set(r["links"]) <= urls, r["url"]
        assert r["kind"] in ("home", "html") or not r["links"]
        assert r["location"] is None or r["location"] in urls


def test_every_url_of_a_host_is_reachable_from_its_homepage(big: list[dict]) -> None:
    """Through in-host links and redirects; robots.txt is served but linked from nowhere."""
    by_url = {r["url"]: r for r in big}
    by_host: defaultdict[str, list[str]] = defaultdict(list)
    for r in big:
        by_host[r["host"]].append(r["url"])
    for host, urls in by_host.items():
        seen, queue = {f"http://{host}/"}, deque([f"http://{host}/"])
        while queue:
            record = by_url[queue.popleft()]
            for url in record["links"] + ([record["location"]] if record["location"] else []):
                if url not in seen and by_url[url]["host"] == host:
                    seen.add(url)
                    queue.append(url)
        assert set(urls) - seen == {f"http://{host}/robots.txt"}, host


def test_old_redirects_lead_to_pages_linked_from_nowhere_else(big: list[dict]) -> None:
    linked = Counter(itertools.chain.from_iterable(r["links"] for r in big))
    old = [r for r in big if r["kind"] == "redirect" and "/old/" in r["url"]]
    assert {r["status"] for r in old} == {301, 302}
    for r in old:
        assert linked[r["location"]] == 0 and linked[r["url"]] == 1
    aliases = [r for r in big if split(r["url"])[1] in ("/index.htm", "/default.asp")]
    assert aliases and all(r["location"] == f"http://{r['host']}/" for r in aliases)


def test_robots_disallowed_pages_are_linked_from_allowed_ones(big: list[dict]) -> None:
    allowed_links = {link for r in big if r["robots_allowed"] for link in r["links"]}
    blocked = [r for r in big if not r["robots_allowed"] and r["kind"] == "html"]
    assert blocked and any(r["url"] in allowed_links for r in blocked)
    robots = [r for r in big if r["kind"] == "robots"]
    share = sum(r["status"] == 200 for r in robots) / len(robots)
    assert 0.2 <= share <= 0.4 and {r["status"] for r in robots} == {200, 404}


def test_respond_serves_what_truth_says(small: list[dict]) -> None:
    web = SyntheticWeb(7, 25)
    for record in small:
        response = web.respond(record["url"])
        assert response.status == record["status"]
        assert hashlib.md5(response.body).hexdigest() == record["md5"]
        assert len(response.body) == record["bytes"]
        assert (response.header("Content-Type") or "").split(";")[0] == record["content_type"]
        assert response.header("Location") == record["location"]
    assert web.respond("http://nosuchhost.com/").status == 502
    assert web.respond(f"http://{web.hosts[0]}/no/such/page.html").status == 404
    assert web.respond(f"http://{web.hosts[0].upper()}/").status == 200


def test_bodies_are_2_to_10_kb_and_decode_in_their_charset(small: list[dict]) -> None:
    web = SyntheticWeb(7, 25)
    for record in small:
        if record["kind"] in PAGE_KINDS:
            assert 2000 <= record["bytes"] <= 14000, record["url"]
            body = web.respond(record["url"]).body.decode(record["charset"])
            assert re.search("[\u4e00-\u9fff]", body) and re.search("[a-z]{3}", body)


def test_a_big_web_is_cheap_to_make_and_answers_any_host() -> None:
    web = SyntheticWeb(1, 5000)
    assert web.respond(web.homepages()[-1]).status == 200
    with pytest.raises(ValueError, match="hosts"):
        SyntheticWeb(1, 0)
    with pytest.raises(ValueError, match="max_pages"):
        SyntheticWeb(1, 3, max_pages=0)


def test_a_suffix_renames_every_host_and_changes_nothing_else() -> None:
    plain, dotted = SyntheticWeb(5, 12), SyntheticWeb(5, 12, suffix=".test")
    assert dotted.hosts == [f"{host}.test" for host in plain.hosts]

    def renamed(value: object) -> object:
        text = json.dumps(value)
        for host in sorted(plain.hosts, key=len, reverse=True):
            text = text.replace(f"//{host}/", f"//{host}.test/").replace(
                f'"{host}"', f'"{host}.test"')
        return json.loads(text)

    def shape(record: dict) -> dict:  # a body names its host: its size and MD5 change too
        return {key: value for key, value in record.items() if key not in ("bytes", "md5")}

    assert [shape(r) for r in dotted.truth()] == [shape(renamed(r)) for r in plain.truth()]


def test_a_suffix_goes_with_the_plain_web_only() -> None:
    with pytest.raises(ValueError, match="--dot-test"):
        SyntheticWeb(5, 12, junk=True, suffix=".test")
