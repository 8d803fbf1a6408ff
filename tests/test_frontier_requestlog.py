"""The request log under JOBDIR: pending = pushed - done, across restarts and torn writes."""

from __future__ import annotations

import json
import marshal
import os
import tempfile
from array import array
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from scrapy import Request, Spider

from tests.conftest import scrapy_crawl
from tianwang.formats.requestlog import MAGIC, body_of, pack, read_done, read_head, scan_log
from tianwang.frontier.requestlog import MemoryStore, RequestLog
from tianwang.testweb.launcher import TestWebProcess
from tianwang.testweb.model import SyntheticWeb


class StoreSpider(Spider):
    name = "store"

    def parse(self, response):
        return None


SPIDER = StoreSpider()


def urls(n: int) -> list[str]:
    return [f"http://h{i % 3}.example.com/p{i}.html" for i in range(n)]


def reopen(directory: Path) -> tuple[RequestLog, list]:
    log = RequestLog(directory, SPIDER)
    entries: list = []
    log.open(entries.append)
    return log, entries


def fill(directory: Path, n: int) -> RequestLog:
    log, _ = reopen(directory)
    for i, url in enumerate(urls(n)):
        fp = bytes([i % 256]) * 20 if i % 2 == 0 else None
        log.put(Request(url, callback=SPIDER.parse, priority=i), i % 11, f"h{i % 3}", fp)
    return log


def test_get_returns_the_request_before_and_after_a_flush(tmp_path: Path) -> None:
    log = fill(tmp_path, 5)
    assert log.get(4).url == urls(5)[4]  # still in the buffer
    log.flush()
    assert [log.get(i).url for i in range(5)] == urls(5)
    assert log.get(2).callback == SPIDER.parse
    log.close()


def test_resume_yields_every_record_with_its_key_slot_fingerprint_and_done_flag(
    tmp_path: Path,
) -> None:
    log = fill(tmp_path, 10)
    log.done([1, 4, 7])
    log.close()
    log, entries = reopen(tmp_path)
    assert [e.item for e in entries] == list(range(10))
    assert [e.item for e in entries if not e.done] == [0, 2, 3, 5, 6, 8, 9]
    assert [(e.weight, e.priority, e.slot) for e in entries][:4] == [
        (0, 0, "h0"),
        (1, 1, "h1"),
        (2, 2, "h2"),
        (3, 3, "h0"),
    ]
    assert entries[2].fingerprint == bytes([2]) * 20 and entries[3].fingerprint is None
    assert log.get(9).url == urls(10)[9]  # the reopened log reads old records
    log.close()


def test_a_log_keeps_places_only_for_requests_not_done_and_reads_each_one(
    tmp_path: Path,
) -> None:
    """Ten thousand requests logged, all but every 97th done in turn as a crawl would: the
    log holds places for the not done only (none kept for the done, however many), and
    gives back each not done request, before and after a resume."""
    log = fill(tmp_path, 10_000)
    log.done([i for i in range(10_000) if i % 97])
    kept = [i for i in range(10_000) if not i % 97]
    assert len(log._places) == len(kept) and len(log._places._ids) < 2 * len(kept) + 1
    assert all(log.get(i).url == urls(10_000)[i] for i in kept)
    log.close()
    log, entries = reopen(tmp_path)
    assert [e.item for e in entries if not e.done] == kept and len(log._places) == len(kept)
    assert log.get(kept[-1]).url == urls(10_000)[kept[-1]]
    log.close()


def test_done_writes_the_buffered_records_first(tmp_path: Path) -> None:
    log = fill(tmp_path, 3)
    assert (tmp_path / "requests.log").stat().st_size == len(MAGIC)  # the records buffered
    log.done([0])
    assert (tmp_path / "requests.log").stat().st_size > len(MAGIC)
    # A kill now: nothing was closed. A second process sees both records and the done id.
    _, entries = reopen(tmp_path)
    assert [(e.item, e.done) for e in entries] == [(0, True), (1, False), (2, False)]


def test_a_record_cut_short_is_dropped_and_the_log_continues_after_it(tmp_path: Path) -> None:
    fill(tmp_path, 4).close()
    path = tmp_path / "requests.log"
    path.write_bytes(path.read_bytes()[:-3])  # the last write torn by a kill
    with open(tmp_path / "done.log", "ab") as done:
        done.write(b"\x01\x00")  # and half a done id
    log, entries = reopen(tmp_path)
    assert [e.item for e in entries] == [0, 1, 2]
    item = log.put(Request("http://h.example.com/new"), 5, "h", None)
    log.close()
    log, entries = reopen(tmp_path)
    assert item == 3 and log.get(3).url == "http://h.example.com/new"
    log.close()


def test_an_unserializable_request_is_kept_in_memory_and_not_resumed(tmp_path: Path) -> None:
    log, _ = reopen(tmp_path)
    odd = Request("http://h.example.com/x", callback=lambda response: None)
    item = log.put(odd, 5, "h", None)
    assert log.get(item) is odd and log.unserializable == 1
    log.close()
    _, entries = reopen(tmp_path)
    assert [(e.item, e.done) for e in entries] == [(0, True)]


def test_memory_store_hands_back_the_requests_it_was_given() -> None:
    spider = Spider("s")
    spider.parse = lambda response: None  # type: ignore[method-assign]
    store = MemoryStore(spider)
    request = Request("http://h.example.com/a?b=1", callback=spider.parse, priority=3,
                      meta={"tianwang_parent": "http://h.example.com/", "depth": 2},
                      headers={"Referer": "http://h.example.com/"})
    back = store.get(store.put(request, 1, "h", None))
    assert (back.url, back.callback, back.priority, back.meta, back.headers) == (
        request.url, spider.parse, 3, request.meta, request.headers)
    # One the codec cannot write (a callback the spider does not hold) is kept as it is.
    odd = Request("http://h.example.com/x", callback=lambda response: None)
    assert store.get(store.put(odd, 1, "h", None)) is odd


def test_memory_store_keeps_a_request_in_a_fraction_of_its_object() -> None:
    import tracemalloc

    spider = Spider("s")
    spider.parse = lambda response: None  # type: ignore[method-assign]
    requests = [Request(f"http://www.example.com/dir{i % 100}/page{i}.html",
                        callback=spider.parse, headers={"Referer": "http://www.example.com/"},
                        meta={"tianwang_parent": "http://www.example.com/", "depth": 2})
                for i in range(2000)]
    store = MemoryStore(spider)
    tracemalloc.start()
    try:
        for request in requests:
            store.put(request, 1, "www.example.com", None)
        kept, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept / len(requests) < 500  # bytes a request (its object: about 1.5 KB)


def test_a_log_of_the_format_before_is_rewritten_with_its_ids_and_done_marks(
        tmp_path: Path) -> None:
    import struct

    from tianwang.frontier import codec

    v1 = struct.Struct("<IhiBH")
    bodies = [codec.encode(Request(url, callback=SPIDER.parse), SPIDER) for url in urls(4)]
    (tmp_path / "requests.log").write_bytes(b"".join(
        v1.pack(len(body), 1, 0, False, 2) + bytes(20) + b"h0" + body for body in bodies))
    (tmp_path / "done.log").write_bytes(struct.pack("<Q", 1))
    log, entries = reopen(tmp_path)
    assert [(e.item, e.done) for e in entries] == [(0, False), (1, True), (2, False), (3, False)]
    assert log.get(2).url == urls(4)[2] and log.put(Request("http://h.example.com/n"), 1,
                                                     "h", None) == 4
    log.close()
    assert (tmp_path / "requests.log").read_bytes().startswith(MAGIC)
    log, entries = reopen(tmp_path)
    assert [e.item for e in entries] == [0, 1, 2, 3, 4] and log.get(4).url.endswith("/n")
    log.close()


def test_a_damaged_span_hides_its_requests_and_the_rest_resume_with_their_own_ids(
        tmp_path: Path) -> None:
    log = fill(tmp_path, 10)
    log.done([3, 8])  # of the two ids the damage hides, one was done
    log.close()
    spans = [(r.start, r.end) for r in scan_log(tmp_path / "requests.log")]
    blob = bytearray((tmp_path / "requests.log").read_bytes())
    blob[spans[3][0] + 30 : spans[4][1] - 2] = b"\xff" * (spans[4][1] - 2 - spans[3][0] - 30)
    (tmp_path / "requests.log").write_bytes(bytes(blob))
    log, entries = reopen(tmp_path)
    assert [(e.item, e.done) for e in entries if e.item > 5] == [
        (6, False), (7, False), (8, True), (9, False)]
    assert [e.item for e in entries] == [0, 1, 2, 5, 6, 7, 8, 9]
    assert log.damaged == [(spans[3][0], spans[5][0], 2)] and log.hidden_pending == 1
    assert log.get(5).url == urls(10)[5] and log.get(9).url == urls(10)[9]
    assert log.put(Request("http://h.example.com/n"), 1, "h", None) == 10
    log.close()
    # The damage stays where it is (nothing read is rewritten); the new record follows.
    log, entries = reopen(tmp_path)
    assert entries[-1].item == 10 and log.get(10).url.endswith("/n") and len(log.damaged) == 1
    log.close()


# --- a damaged JOBDIR, resumed by a real crawl -------------------------------------------

DAMAGE_WEB = (3, 4, 60)  # seed, hosts, pages a host


def test_a_crawl_resumes_a_damaged_jobdir_to_its_end_and_says_what_it_lost(
        tmp_path: Path) -> None:
    """The log with a span overwritten and a request whose callback the spider lost, the
    Bloom checkpoint garbage, a done id no log could hold: the crawl goes on to its end."""
    access = tmp_path / "access.jsonl"
    seeds = ",".join(SyntheticWeb(*DAMAGE_WEB).homepages())
    state = tmp_path / "job" / "tianwang.frontier"
    with TestWebProcess(*DAMAGE_WEB, access_log=access) as web:
        settings = {"TIANWANG_PROXY": web.address, "JOBDIR": str(tmp_path / "job"),
                    "TIANWANG_DATA_DIR": str(tmp_path / "data")}
        first = scrapy_crawl("site", {"seeds": seeds}, settings | {
            "CLOSESPIDER_PAGECOUNT": "6", "CONCURRENT_REQUESTS": "2"}, cwd=tmp_path)
        assert first.returncode == 0, first.stderr[-3000:]
        fetched = len(access.read_text().splitlines())
        done = read_done(state / "done.log")
        records = list(scan_log(state / "requests.log"))
        pending = [r for r in records if r.item not in done]
        assert len(pending) >= 4, first.stderr[-3000:]
        unreadable, hidden = pending[1], pending[2]
        blob = bytearray((state / "requests.log").read_bytes())
        url = {r.item: _url(blob, r) for r in pending}
        gone = {"url": url[unreadable.item], "callback": "parse_renamed_since"}
        blob[hidden.start + 30 : hidden.start + 40] = b"\xff" * 10
        blob[unreadable.start : unreadable.end] = pack(
            unreadable.item, unreadable.weight, unreadable.priority, unreadable.fingerprint,
            unreadable.slot.encode(), b"m" + marshal.dumps(gone))
        (state / "requests.log").write_bytes(bytes(blob))
        (state / "bloom.bin").write_bytes(os.urandom(4096))
        with open(state / "done.log", "ab") as ids:
            ids.write((2**62).to_bytes(8, "little"))
        second = scrapy_crawl("site", {"seeds": seeds}, settings, cwd=tmp_path, timeout=240)
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr[-3000:]
    assert "has 1 damaged span(s)" in second.stderr
    assert "cannot be read (UnreadableRequest" not in second.stderr  # said once, plainly
    assert "parse_renamed_since" in second.stderr
    last = second.stderr.rstrip().splitlines()[-1]
    assert "crawl done (finished)" in last and "lost_in_request_log 1" in last, last
    assert "unreadable_request 1" in last, last
    again = [json.loads(line)["url"] for line in access.read_text().splitlines()[fetched:]]
    # Every other request left pending was fetched; the unreadable one was not.
    assert {url[r.item] for r in pending if r not in (unreadable, hidden)} <= set(again)
    assert gone["url"] not in again


def _url(blob: bytes | bytearray, record) -> str:
    """A logged request's url (the body of a record, as the codec wrote it)."""
    return marshal.loads(body_of(bytes(blob[record.start : record.end]))[1:])["url"]


# --- compaction --------------------------------------------------------------------------


class Model:
    """What a log must give back on resume: the requests written and not done."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.log, _ = reopen(directory)
        self.log.compact_after = 0
        self.urls: dict[int, str] = {}  # id -> url of every request put
        self.written: set[int] = set()  # ids a kill cannot lose (flushed)
        self.done: set[int] = set()
        self.compactions = 0

    def put(self, n: int) -> None:
        for _ in range(n):
            url = f"http://h{len(self.urls) % 5}.example.com/p{len(self.urls)}.html"
            item = self.log.put(Request(url, callback=SPIDER.parse), 3, "h", None)
            assert item not in self.urls
            self.urls[item] = url

    def finish(self, picks: list[int]) -> None:
        pending = sorted(set(self.urls) - self.done)
        chosen = [pending[i % len(pending)] for i in picks] if pending else []
        chosen = sorted(set(chosen))
        assert [self.log.get(item).url for item in chosen] == [self.urls[i] for i in chosen]
        self.log.done(chosen)
        self.done |= set(chosen)
        if chosen:
            self.written |= set(self.urls)  # done writes every buffered record first
        if self.log.needs_compaction:
            self.log.compact()
            self.compactions += 1

    def kill(self, _unused: int = 0) -> None:
        """The process gone: its buffered records with it, nothing closed cleanly."""
        os.close(self.log._fd)
        os.close(self.log._done_fd)
        self.urls = {i: u for i, u in self.urls.items() if i in self.written}
        self.log, entries = reopen(self.directory)
        self.log.compact_after = 0
        pending = {e.item for e in entries if not e.done}
        assert pending == set(self.urls) - self.done
        assert {e.item for e in entries} >= pending
        assert [self.log.get(i).url for i in sorted(pending)] == [
            self.urls[i] for i in sorted(pending)]
        # The gets above do not mark them done: a kill again must find them again.


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(1, 30)),
    st.tuples(st.just("finish"), st.lists(st.integers(0, 1000), max_size=25)),
    st.tuples(st.just("kill"), st.just(0))), max_size=40))
@example([("put", 1), ("finish", [0]), ("kill", 0), ("put", 1)])  # all done: ids go on
def test_a_log_compacted_any_number_of_times_and_killed_gives_back_what_is_pending(
        steps) -> None:
    with tempfile.TemporaryDirectory() as directory:
        model = Model(Path(directory))
        for action, argument in steps:
            getattr(model, action)(argument)
        model.kill()
        model.log.close()


def test_compaction_keeps_the_log_within_four_times_what_is_pending(tmp_path: Path) -> None:
    model = Model(tmp_path)
    path = tmp_path / "requests.log"
    for _ in range(60):
        model.put(40)
        model.finish(list(range(38)))  # most of what is pending, each round
        _head, start = read_head(path)
        pending = sum(r.end - r.start for r in scan_log(path) if r.item not in model.done)
        assert path.stat().st_size - start <= 4 * pending
    assert model.compactions >= 10
    assert (tmp_path / "done.log").stat().st_size <= 8 * 4 * len(set(model.urls) - model.done)
    model.kill()


def test_a_kill_after_the_compacted_log_replaced_the_old_one_loses_nothing(
        tmp_path: Path) -> None:
    """Between the rename and done.log's truncation: done.log's ids name records gone."""
    model = Model(tmp_path)
    model.put(30)
    model.finish(list(range(0, 25)))
    stale = (tmp_path / "done.log").read_bytes()
    model.log.compact_after = 1 << 30
    model.finish(list(range(3)))
    model.log.compact()
    with open(tmp_path / "done.log", "r+b") as done:  # the truncation not reached yet
        previous = done.read()
        done.seek(0)
        done.write(stale + previous)
    (tmp_path / "requests.log.partial").write_bytes(b"a compaction cut short")
    model.kill()
    assert not (tmp_path / "requests.log.partial").exists()


def test_a_damaged_span_in_a_compacted_log_counts_only_the_pending_requests_it_hid(
        tmp_path: Path) -> None:
    model = Model(tmp_path)
    model.put(60)
    model.finish([i for i in range(60) if i not in (3, 9, *range(51, 60))])
    assert model.compactions == 1
    model.put(5)
    model.log.close()
    records = list(scan_log(tmp_path / "requests.log"))
    assert [r.item for r in records] == [3, 9, *range(51, 65)]
    blob = bytearray((tmp_path / "requests.log").read_bytes())
    for record in (records[1], records[2], records[10]):  # 9 and 51 hid, 59 done after
        blob[record.start + 30] ^= 0xFF
    (tmp_path / "requests.log").write_bytes(bytes(blob))
    (tmp_path / "done.log").write_bytes(array("Q", [59]).tobytes())
    log, entries = reopen(tmp_path)
    assert log.hidden_pending == 2  # 9 and 51, not the ids done before the compaction
    assert {e.item for e in entries if not e.done} == {3, *range(52, 65)} - {59}
    log.close()


def test_done_ids_past_the_log_are_dropped_before_they_mark_new_requests_done(
        tmp_path: Path) -> None:
    """A log restored older than its done.log: the ids past its end will be new requests'."""
    log = fill(tmp_path, 10)
    log.close()
    (tmp_path / "done.log").write_bytes(array("Q", [2, 12, 13]).tobytes())
    log, _ = reopen(tmp_path)
    for i in range(5):
        log.put(Request(f"http://new.example.com/{i}", callback=SPIDER.parse), 1, "n", None)
    log.close()
    _, entries = reopen(tmp_path)
    assert {e.item for e in entries if e.done} == {2}
