"""The --changing test web: Poisson changes with the truth's rates, hubs gaining links, a
clock the Date header follows, and correct ETag, Last-Modified and 304 answers."""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.request
from email.utils import parsedate_to_datetime

import pytest

from tests.conftest import CHANGING_HOSTS, CHANGING_PAGES, CHANGING_SEED, TestWeb, advance_clock
from tianwang.testweb.changing import CLOCK_START, DAY
from tianwang.testweb.mirrorsites import links_in
from tianwang.testweb.model import SyntheticWeb

ARGS = (CHANGING_SEED, CHANGING_HOSTS, CHANGING_PAGES)


@pytest.fixture(scope="module")
def web() -> SyntheticWeb:
    return SyntheticWeb(*ARGS, changing=True)


def html_pages(truth: dict[str, dict]) -> list[dict]:
    return [page for page in truth.values() if page["blocks"]]


def test_changing_is_off_by_default_and_keeps_the_urls() -> None:
    plain = {p["url"]: p for p in SyntheticWeb(*ARGS).truth(bodies=False)}
    changing = {p["url"]: p for p in SyntheticWeb(*ARGS, changing=True).truth(bodies=False)}
    assert all("change_rate" not in page for page in plain.values())
    assert set(plain) == set(changing)
    # the same links, and a link page's list of the site's pages after them
    assert all(changing[url]["links"][:len(page["links"])] == page["links"]
               for url, page in plain.items())
    assert all(set(changing[url]["links"]) <= set(plain)
               for url, page in plain.items())


def test_rates_span_never_to_several_a_day(changing_web: TestWeb) -> None:
    rates = [page["change_rate"] for page in html_pages(changing_web.truth)]
    assert sum(rate == 0 for rate in rates) >= len(rates) / 5
    assert max(rates) >= 3 and 0 < min(r for r in rates if r > 0) < 0.1
    hubs = [page for page in html_pages(changing_web.truth) if page["hub"]]
    assert len(hubs) >= CHANGING_HOSTS  # every homepage, and directory pages at /name/


def test_changes_follow_the_truths_rates(web: SyntheticWeb, changing_web: TestWeb) -> None:
    """Counts over 60 days: a Poisson total within 4 standard deviations of the truth's."""
    days = 60
    expected = observed = 0.0
    for page in html_pages(changing_web.truth):
        expected += page["change_rate"] * days
        observed += web.changing.version(page["url"], CLOCK_START + days * DAY)
    assert abs(observed - expected) <= 4 * math.sqrt(expected)


def test_same_seed_and_clock_same_answer() -> None:
    one, two = SyntheticWeb(*ARGS, changing=True), SyntheticWeb(*ARGS, changing=True)
    hub = next(p for p in one.truth(bodies=False) if p.get("hub"))["url"]
    at = CLOCK_START + 3.5 * DAY
    assert one.changing.served(hub, at) == two.changing.served(hub, at)
    assert one.changing.served(hub, at).body != one.changing.served(hub, CLOCK_START).body


def test_hubs_gain_links_to_pages_that_exist(web: SyntheticWeb) -> None:
    hub = next(p for p in web.truth(bodies=False) if p.get("hub") and p["kind"] != "home")
    later = CLOCK_START + 2 * DAY
    version = web.changing.version(hub["url"], later)
    assert version >= 1
    before = set(links_in(web.changing.served(hub["url"], CLOCK_START).body, hub["url"]))
    after = set(links_in(web.changing.served(hub["url"], later).body, hub["url"]))
    new = after - before
    latest, per_change = web.changing.hub_shape(hub["url"])
    assert len(new) == min(latest, per_change * version)
    assert all(web.changing.served(url, later).status == 200 for url in new)
    assert all(web.changing.served(url, CLOCK_START).status == 404 for url in new)


def opener(web: TestWeb) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": web.address}))


def fetch(web: TestWeb, url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with opener(web).open(request) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read()


def test_clock_date_etag_and_304_over_http(changing_web: TestWeb) -> None:
    pages = html_pages(changing_web.truth)
    still = next(p for p in pages if p["change_rate"] == 0 and not p["rotating_ad"])
    hub = next(p for p in pages if p["hub"])
    status, headers, body = fetch(changing_web, still["url"])
    assert status == 200 and parsedate_to_datetime(headers["Date"]).timestamp() >= CLOCK_START
    etag, modified = headers["ETag"], headers["Last-Modified"]
    now = advance_clock(changing_web, 30 * DAY)
    status, headers, body = fetch(changing_web, still["url"], **{"If-None-Match": etag})
    assert (status, body) == (304, b"") and headers["ETag"] == etag
    assert parsedate_to_datetime(headers["Date"]).timestamp() == now  # Date follows the clock
    status, _, _ = fetch(changing_web, still["url"], **{"If-Modified-Since": modified})
    assert status == 304
    status, headers, _ = fetch(changing_web, hub["url"], **{"If-Modified-Since": modified})
    assert status == 200  # a hub changed in 30 days, far beyond doubt at 2+ a day
    assert parsedate_to_datetime(headers["Last-Modified"]).timestamp() > CLOCK_START
    log = [json.loads(line) for line in changing_web.access_log.read_text().splitlines()]
    assert [e["status"] for e in log if e["url"] == still["url"]][-2:] == [304, 304]


def test_bad_clock_requests_are_refused(changing_web: TestWeb) -> None:
    for query in ("advance=-5", "advance=soon", "set=0"):
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(f"{changing_web.address}/_testweb/clock?{query}")
        assert error.value.code == 400
        error.value.close()


def test_page_types_in_the_truth(web: SyntheticWeb, changing_web: TestWeb) -> None:
    """Seed 001's types by the role drawn: hubs are entry pages; a link page serves its list
    of the site's pages (every link of it in the body, and none to a new page); the rest are
    stable. The link counts of link and stable pages overlap: no count tells them apart."""
    pages = html_pages(changing_web.truth)
    kinds = {page["page_type"] for page in pages}
    assert kinds == {"entry", "link", "stable"}
    counts: dict[str, list[int]] = {"link": [], "stable": []}
    assert all(page["page_type"] is None for page in changing_web.truth.values()
               if not page["blocks"])
    for page in pages:
        served = web.changing.served(page["url"], CLOCK_START + 3 * DAY).body
        host = page["url"].split("/")[2]
        in_host = {u for u in links_in(served, page["url"]) if u.split("/")[2] == host}
        if page["hub"]:
            assert page["page_type"] == "entry"
            continue
        assert not any(re.search(r"/new\d+\.html$", u) for u in in_host)  # only hubs do
        listed = web.changing.link_list(page["url"])
        assert (page["page_type"] == "link") == bool(listed), page["url"]
        assert set(listed) <= in_host
        counts[page["page_type"]].append(len(in_host))
    assert min(counts["link"]) < 10 <= max(counts["stable"])  # the classifier's 10 no border
