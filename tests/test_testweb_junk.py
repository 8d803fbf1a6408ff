"""The test web's opt-in junk: off by default, linked from the normal web, served as the
truth says (large bodies streamed, with what was sent in the access log)."""

from __future__ import annotations

import difflib
import hashlib
import json
import urllib.request
from collections import Counter
from pathlib import Path

from tests.conftest import tianwang_cli
from tests.truth import reach
from tianwang.testweb.junk import FAMILY_SIZE, SPAM_LIST, JunkWeb, body_chunks
from tianwang.testweb.launcher import TestWebProcess
from tianwang.testweb.model import SyntheticWeb

SEED, HOSTS = 3, 20


def truth(junk: bool) -> dict[str, dict]:
    return {r["url"]: r for r in SyntheticWeb(SEED, HOSTS, 40, junk=junk).truth()}


def test_junk_is_off_by_default_and_the_normal_web_unchanged_by_it() -> None:
    plain, junk = truth(False), truth(True)
    assert SyntheticWeb(SEED, HOSTS).junk is None
    assert all("filter" not in r for r in plain.values())
    assert SyntheticWeb(SEED, HOSTS).respond("http://localhost/").status == 502
    for url, record in plain.items():
        other = dict(junk[url])
        assert other.pop("filter") is None
        if record["kind"] == "home":  # the homepages gain three junk links, nothing else
            assert other["links"][: len(record["links"])] == record["links"]
            assert len(other["links"]) == len(record["links"]) + 3
            continue
        assert other == record


def test_every_junk_host_is_reachable_from_the_normal_web() -> None:
    pages = truth(True)
    homes = [url for url, r in pages.items() if r["kind"] == "home"]
    reached = reach(pages, homes, max_levels=0, stay_in_host=False).levels
    junk_hosts = {r["host"] for r in pages.values() if r["kind"] == "junk-home"}
    assert junk_hosts <= {pages[url]["host"] for url in reached if url in pages}


def test_the_classes_of_junk_and_their_marks() -> None:
    pages = truth(True)
    hosts = Counter(r["filter"] for r in pages.values() if r["kind"] == "junk-home")
    assert hosts["spam"] >= FAMILY_SIZE and hosts["digit"] >= FAMILY_SIZE  # hundreds of hosts
    assert hosts["ip"] >= 10 and hosts["port"] >= 3 and hosts["private"] == 1
    files = Counter(r["filter"] for r in pages.values() if r["kind"] in ("image", "binary"))
    assert files["content_type"] >= 4
    for record in pages.values():
        first_label = record["host"].split(".")[0]
        if record["filter"] == "digit":
            assert first_label[0].isdigit()
        if record["filter"] == "port":
            assert not record["host"].endswith(":80")
    untyped = [r for r in pages.values() if r["content_type"] is None]
    assert {r["filter"] for r in untyped} == {None, "content_type"}  # one text, one binary


def test_family_homepages_are_near_identical() -> None:
    junk = JunkWeb(SEED, SyntheticWeb(SEED, HOSTS).hosts)
    family = [h for h, (domain, _why) in junk.families.items() if domain == "fangwen.com"]
    first, second = (junk.respond(f"http://{h}/").body.decode() for h in family[:2])
    assert first != second
    assert difflib.SequenceMatcher(None, first, second).ratio() > 0.6


def test_truth_bytes_and_md5_are_what_is_served() -> None:
    web = SyntheticWeb(SEED, HOSTS, 40, junk=True)
    for record in web.junk.truth():
        answer = web.respond(record["url"])
        digest = hashlib.md5()
        for chunk in body_chunks(answer):
            digest.update(chunk)
        assert digest.hexdigest() == record["md5"], record["url"]


def test_commands_take_junk_as_an_option(tmp_path: Path) -> None:
    plain = tianwang_cli("testweb", "hosts", "--seed", "3", "--hosts", "5").stdout.split()
    junk = tianwang_cli("testweb", "hosts", "--seed", "3", "--hosts", "5", "--junk").stdout.split()
    assert junk[:5] == plain and "http://localhost/" in junk and "http://2130706433/" in junk
    assert tianwang_cli("testweb", "spamlist").stdout == SPAM_LIST
    out = tianwang_cli("testweb", "truth", "--seed", "3", "--hosts", "2", "--junk").stdout
    assert all("filter" in json.loads(line) for line in out.splitlines())


def test_the_server_streams_large_bodies_and_logs_what_it_sent(tmp_path: Path) -> None:
    log = tmp_path / "access.jsonl"
    web = SyntheticWeb(SEED, HOSTS, 40, junk=True)
    untyped = next(r for r in web.junk.truth() if r["filter"] == "content_type"
                   and r["content_type"] is None)
    with TestWebProcess(SEED, HOSTS, 40, access_log=log, extra_args=("--junk",)) as server:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": server.address}))
        with opener.open(untyped["url"], timeout=60) as response:
            assert response.headers.get("Content-Type") is None  # not twisted's text/html
            body = response.read()
        port = server.port
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(f"http://localhost:{port}/", timeout=60) as response:
            home = response.read()  # direct (origin-form): localhost answers at any port
    assert hashlib.md5(body).hexdigest() == untyped["md5"] and len(body) == untyped["bytes"]
    assert b"<h1>localhost</h1>" in home
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    streamed = next(line for line in lines if line["url"] == untyped["url"])
    assert streamed["complete"] is True and streamed["sent"] == untyped["bytes"]


# -- hostile hosts (issue 16) ---------------------------------------------------------------


def test_each_bomb_is_small_and_inflates_to_a_gigabyte_as_its_truth_says() -> None:
    import zlib

    import brotli

    from tianwang.testweb.junk import BOMB_HOSTS, BOMB_PAGE, GIB

    web = SyntheticWeb(SEED, HOSTS, 40, junk=True)
    pages = truth(True)
    for host, encoding in BOMB_HOSTS.items():
        for path in (BOMB_PAGE, "/robots.txt"):
            answer = web.respond(f"http://{host}{path}")
            assert answer.header("Content-Encoding") == encoding
            assert answer.length < 2 * 1024 * 1024  # a small body on the wire
        record = pages[f"http://{host}{BOMB_PAGE}"]
        assert record["filter"] == "too_big" and record["bytes"] == answer.length
        # Its first two chunks inflate past 32 MiB (read no further: it is a gigabyte).
        head = b"".join(c for _, c in zip(range(2), answer.chunks(), strict=False))
        limit = 32 * 1024 * 1024
        if encoding == "br":
            inflated = brotli.Decompressor().process(head, output_buffer_limit=limit)
        else:
            wbits = 31 if encoding == "gzip" else 15
            inflated = zlib.decompressobj(wbits).decompress(head, limit)
        assert len(inflated) >= limit and inflated.count(0) == len(inflated)
        assert answer.length < GIB // 500


def test_hostile_truth_marks_fake_text_redirects_and_traps() -> None:
    from tianwang.testweb.junk import BAD_LOCATIONS, LOCATION_HOST, TRAP_HOSTS

    pages = truth(True)
    fake = {url: r for url, r in pages.items() if r["kind"] == "text" and r["content_type"]
            in ("text/html", "text/plain") and r["host"] == "www.fake-text.com"}
    assert {r["filter"] for r in fake.values()} == {"not_text", None}
    for path, location in BAD_LOCATIONS.items():
        record = pages[f"http://{LOCATION_HOST}{path}"]
        assert record["status"] == 302 and record["location"] == location
        assert record["filter"] == "bad_location"
    traps = {r["trap"] for r in pages.values() if r["kind"] == "trap-home"}
    assert traps == set(TRAP_HOSTS.values())
    hosts = {r["host"] for r in pages.values() if r["kind"] == "junk-home"}
    assert not hosts & set(TRAP_HOSTS)  # never linked from the normal web


def test_the_traps_have_no_end() -> None:
    web = SyntheticWeb(SEED, HOSTS, 40, junk=True)
    url = "http://www.calendar-trap.com/"
    for _ in range(50):  # always a next month
        url = _first_link(web.respond(url).body)
    assert url.startswith("http://www.calendar-trap.com/cal/2031/01/")
    url = "http://www.repeat-trap.com/"
    for _ in range(10):
        url = _first_link(web.respond(url).body)
    assert url == "http://www.repeat-trap.com/" + "a/" * 10
    first = _first_link(web.respond("http://www.session-trap.com/").body)
    again = _first_link(web.respond(first).body)
    assert first.split("?")[0] == again.split("?")[0] and first != again  # a new sid


def _first_link(body: bytes) -> str:
    return body.split(b'href="', 1)[1].split(b'"', 1)[0].decode()
