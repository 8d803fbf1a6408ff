"""Online MD5 dedup: after a real crawl of a web with mirrors, each body is stored once and
the mirror table is the truth's copies that were crawled; kill -9 and resume lose nothing."""

from __future__ import annotations

import hashlib
import shutil
import signal
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from scrapy.exceptions import DropItem

from tests.conftest import (
    TestWeb,
    crawl_command,
    project_crawler,
    scrapy_crawl,
    start_until_stored,
    tianwang_cli,
)
from tests.truth import reach
from tianwang.formats import iter_records, iter_tree, record_files
from tianwang.formats.md5store import MD5Store
from tianwang.formats.mirrors import iter_mirrors, mirror_degrees
from tianwang.formats.record import OnDamage, RecordError
from tianwang.items import PageItem
from tianwang.pipelines.dedup import MD5DedupPipeline
from tianwang.pipelines.storage import TianwangStoragePipeline


def stored_bodies(data: Path, on_damage: OnDamage | None = None) -> dict[str, str]:
    """url -> md5 of the body of every record of the tree (a url twice would fail below)."""
    found: dict[str, str] = {}
    for _path, record in iter_tree(data, on_damage=on_damage):
        assert record.url not in found, f"{record.url} stored twice"
        found[record.url] = hashlib.md5(record.http.body).hexdigest()
    return found


def copy_groups(truth: dict[str, dict], seeds: list[str]) -> dict[str, set[str]]:
    """md5 -> the urls with that body among the pages a correct crawl stores, 2+ urls only."""
    groups: defaultdict[str, set[str]] = defaultdict(set)
    for url in reach(truth, seeds).stored(truth):
        groups[truth[url]["md5"]].add(url)
    return {md5: urls for md5, urls in groups.items() if len(urls) > 1}


def check_against_truth(data: Path, truth: dict[str, dict], seeds: list[str],
                        on_damage: OnDamage | None = None) -> None:
    stored = stored_bodies(data, on_damage)
    bodies = Counter(stored.values())
    assert [md5 for md5, n in bodies.items() if n > 1] == []  # each distinct body once
    expected = reach(truth, seeds).stored(truth)
    mirrors = list(iter_mirrors(data))
    duplicates = [m.duplicate for m in mirrors]
    assert len(duplicates) == len(set(duplicates))  # one line per duplicate url
    # No page lost: each url a correct crawl stores is stored, or listed as a copy.
    assert set(stored) | set(duplicates) == expected
    assert set(stored) & set(duplicates) == set()
    groups = copy_groups(truth, seeds)
    assert groups, "the crawl met no mirrored page"
    table: defaultdict[str, set[str]] = defaultdict(set)
    for mirror in mirrors:
        assert stored[mirror.kept] == mirror.md5 == truth[mirror.duplicate]["md5"]
        table[mirror.md5] |= {mirror.kept, mirror.duplicate}
    assert table == groups
    degrees = {md5: len(urls) for md5, urls in groups.items()}
    assert {stored[url]: n for url, n in mirror_degrees(data).items()} == degrees


def test_each_body_stored_once_and_mirror_table_is_the_truths_copies(
    mirror_crawl: dict, mirror_web: TestWeb
) -> None:
    check_against_truth(mirror_crawl["data"], mirror_web.truth, mirror_crawl["seeds"])


def test_copies_in_the_table_are_the_truths_copy_of(
    mirror_crawl: dict, mirror_web: TestWeb
) -> None:
    kinds: Counter[str] = Counter()
    for mirror in iter_mirrors(mirror_crawl["data"]):
        pair = [mirror_web.truth[mirror.duplicate], mirror_web.truth[mirror.kept]]
        # One of the two copies the other (or both copy one original not stored under its url).
        originals = {page["copy_of"] or page["url"] for page in pair}
        assert len(originals) == 1
        copy = next(page for page in pair if page["copy_of"])
        kinds["default" if copy["url"].endswith("/default.htm") else
              "session" if "sessionid=" in copy["url"] else "host"] += 1
    assert set(kinds) == {"default", "session", "host"}


def test_duplicates_are_counted_not_logged_as_warnings(mirror_crawl: dict) -> None:
    lines = sum(1 for _ in iter_mirrors(mirror_crawl["data"]))
    assert f"'tianwang/dedup/duplicates': {lines}," in mirror_crawl["stderr"]
    assert "Dropped:" not in mirror_crawl["stderr"]


def kill_when_stored(command: list[str], env: dict, cwd: Path, data: Path, size: int) -> None:
    proc = start_until_stored(command, env, cwd, data, size, cwd / "killed.log")
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_kill_9_then_resume_loses_no_page_and_stores_no_body_twice(
    mirror_web: TestWeb, tmp_path: Path
) -> None:
    seeds = [url for url, page in mirror_web.truth.items() if page["kind"] == "home"]
    data = tmp_path / "data"
    settings = {
        "TIANWANG_PROXY": mirror_web.address,
        "TIANWANG_SESSION_PARAMS": "",  # the ?sessionid= copies are what is deduped here
        "TIANWANG_DATA_DIR": str(data),
        "JOBDIR": str(tmp_path / "job"),
        "CONCURRENT_REQUESTS": "4",  # slow enough to be killed midway
    }
    args = {"seeds": ",".join(seeds)}
    command, env = crawl_command("site", args, settings)
    kill_when_stored(command, env, tmp_path, data, 400_000)
    resumed = scrapy_crawl("site", args, settings, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    check_against_truth(data, mirror_web.truth, seeds)


def test_a_record_damaged_mid_file_costs_only_itself_and_its_page_is_stored_again(
    mirror_crawl: dict, mirror_web: TestWeb, tmp_path: Path
) -> None:
    # issue 16's reproduction: one header byte flipped in a record in the middle of a file,
    # then a crawl into the same tree. It used to cut every record after it and keep their
    # bodies "stored" in md5.sqlite, so those pages were refused as copies for good.
    data = tmp_path / "data"
    shutil.copytree(mirror_crawl["data"], data)
    files = {path: list(iter_records(path)) for path in record_files(data)}
    # A record with records before and after it, whose page other urls mirror: its loss
    # must also take its mirror lines (a copy of it is then the one stored).
    kept = {mirror.kept for mirror in iter_mirrors(data)}
    middle = [(file, record) for file, records in files.items() for record in records[1:-1]]
    path, victim = next(((f, r) for f, r in middle if r.url in kept), middle[0])
    assert victim.url in kept
    blob = bytearray(path.read_bytes())
    assert blob[victim.offset : victim.offset + 8] == b"version:"
    blob[victim.offset + 1] = ord("E")  # version -> vErsion
    path.write_bytes(bytes(blob))
    seeds = mirror_crawl["seeds"]
    settings = {"TIANWANG_PROXY": mirror_web.address, "TIANWANG_DATA_DIR": str(data)}
    result = scrapy_crawl("site", {"seeds": ",".join(seeds)}, settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    spans: list[RecordError] = []
    after = {(file, record.offset): record for file, record in iter_tree(data, spans.append)}
    assert [(span.path, span.offset) for span in spans] == [(str(path), victim.offset)]
    for file, records in files.items():  # every other record is where it was, unchanged
        for record in records:
            if (file, record.offset) != (path, victim.offset):
                assert after[file, record.offset] == record
    assert list(data.glob("data_*/*/page.dat.cut-*")) == []  # nothing cut
    # Every page of the truth stored exactly once: the damaged one fetched and stored again.
    check_against_truth(data, mirror_web.truth, seeds, on_damage=lambda span: None)
    again = [record for (file, _), record in after.items() if record.url == victim.url]
    assert len(again) == 1 and again[0].offset > victim.offset
    assert again[0].http.body == victim.http.body

    verify = tianwang_cli("records", "verify", str(data))
    assert verify.returncode == 1 and f"{path}: offset {victim.offset} (" in verify.stderr
    repair = tianwang_cli("records", "repair", str(data))
    assert repair.returncode == 0, repair.stderr
    assert tianwang_cli("records", "verify", str(data)).returncode == 0
    assert path.with_name(f"page.dat.cut-{victim.offset}").read_bytes().startswith(b"vErsion")
    check_against_truth(data, mirror_web.truth, seeds)  # strict: no damage left
    with MD5Store(data) as index:  # the index agrees with what the records hold
        for url, md5 in stored_bodies(data).items():
            assert index.kept(bytes.fromhex(md5)) == url


# -- the pipeline alone ------------------------------------------------------------------


def item(url: str, body: bytes) -> PageItem:
    return PageItem(url=url, requested_url=url, status=200, headers=[], body=body, ip=None,
                    fetched_at=0.0, level=1)


class Pipelines:
    """Dedup then storage, as the crawl orders them, with the item_scraped signal."""

    def __init__(self, data: Path) -> None:
        crawler = project_crawler(TIANWANG_DATA_DIR=str(data))
        crawler.stats.open_spider()
        self.stats = crawler.stats
        self.dedup = MD5DedupPipeline.from_crawler(crawler)
        self.storage = TianwangStoragePipeline.from_crawler(crawler)
        self.dedup.open_spider()
        self.storage.open_spider()

    def crawl(self, page: PageItem) -> bool:
        try:
            self.dedup.process_item(page)
        except DropItem:
            return False
        self.storage.process_item(page)
        self.dedup.item_scraped(page)
        return True

    def close(self) -> None:
        self.storage.close_spider()
        self.dedup.close_spider()


def test_a_copy_is_dropped_and_a_refetch_adds_no_mirror_line(tmp_path: Path) -> None:
    pipes = Pipelines(tmp_path)
    a, b = item("http://a.cn/", b"same"), item("http://b.cn/x", b"same")
    assert [pipes.crawl(a), pipes.crawl(b), pipes.crawl(b), pipes.crawl(a)] == [True] + [False] * 3
    pipes.close()
    assert [(m.duplicate, m.kept) for m in iter_mirrors(tmp_path)] == [("http://b.cn/x", "http://a.cn/")]
    assert pipes.stats.get_value("tianwang/dedup/duplicates") == 2
    assert pipes.stats.get_value("tianwang/dedup/refetched") == 1


def test_a_body_close_behind_an_unstored_one_is_still_a_copy(tmp_path: Path) -> None:
    pipes = Pipelines(tmp_path)
    first, second = item("http://a.cn/", b"x"), item("http://a.cn/default.htm", b"x")
    pipes.dedup.process_item(first)  # passed the check, not stored yet
    with pytest.raises(DropItem):
        pipes.dedup.process_item(second)
    pipes.storage.process_item(first)
    pipes.dedup.item_scraped(first)
    pipes.close()
    assert list(stored_bodies(tmp_path)) == ["http://a.cn/"]


def test_an_item_that_failed_before_storage_is_not_indexed(tmp_path: Path) -> None:
    pipes = Pipelines(tmp_path)
    page = item("http://a.cn/", b"x")
    pipes.dedup.process_item(page)
    pipes.dedup.item_failed(page)  # e.g. a disk full in storage: no record
    assert pipes.crawl(item("http://a.cn/", b"x"))  # so it is stored when it comes again
    pipes.close()
    assert list(stored_bodies(tmp_path)) == ["http://a.cn/"]


def test_a_record_stored_but_not_indexed_is_found_on_the_next_open(tmp_path: Path) -> None:
    pipes = Pipelines(tmp_path)
    page = item("http://a.cn/", b"x")
    pipes.dedup.process_item(page)
    pipes.storage.process_item(page)  # killed here: stored, never indexed
    pipes.close()
    pipes = Pipelines(tmp_path)
    assert pipes.stats.get_value("tianwang/dedup/caught_up") == 1
    assert not pipes.crawl(item("http://b.cn/", b"x"))
    pipes.close()
    assert [(m.duplicate, m.kept) for m in iter_mirrors(tmp_path)] == [("http://b.cn/", "http://a.cn/")]


def test_dedup_can_be_switched_off(tmp_path: Path) -> None:
    from scrapy.exceptions import NotConfigured

    crawler = project_crawler(TIANWANG_DATA_DIR=str(tmp_path), TIANWANG_DEDUP=False)
    with pytest.raises(NotConfigured):
        MD5DedupPipeline.from_crawler(crawler)


def test_a_bad_dedup_setting_stops_the_crawl_at_start(tmp_path: Path) -> None:
    settings = {"TIANWANG_PROXY": "http://127.0.0.1:9", "TIANWANG_DATA_DIR": str(tmp_path / "d"),
                "TIANWANG_DEDUP": "maybe"}
    result = scrapy_crawl("site", {"seeds": "www.example.com"}, settings, cwd=tmp_path, timeout=120)
    assert result.returncode != 0
    assert "TIANWANG_DEDUP" in result.stderr.strip().splitlines()[-1]
