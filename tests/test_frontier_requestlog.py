"""The request log under JOBDIR: pending = pushed - done, across restarts and torn writes."""

from __future__ import annotations

from pathlib import Path

from scrapy import Request, Spider

from tianwang.frontier.requestlog import HEADER, MemoryStore, RequestLog


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


def test_done_writes_the_buffered_records_first(tmp_path: Path) -> None:
    log = fill(tmp_path, 3)
    assert (tmp_path / "requests.log").stat().st_size == 0  # buffered
    log.done([0])
    assert (tmp_path / "requests.log").stat().st_size > 0
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


def test_header_layout_is_fixed() -> None:
    assert HEADER.size == 13  # body length, weight, priority, has fingerprint, slot length
