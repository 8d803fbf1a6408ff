"""The record tree: host buckets, directory names, and a store that bounds its open files."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tianwang.formats.record import Record, RecordError, encode_record, iter_records
from tianwang.formats.store import (
    RecordStore,
    host_bucket,
    host_dirname,
    iter_tree,
    page_path,
    record_files,
)

ROOT = Path(__file__).resolve().parent.parent
DATE = "Sun, 22 Nov 2026 05:16:17 GMT"


def md5_bucket(name: str) -> int:
    """The spec's rule, spelled out here rather than trusted to the code under test."""
    return int.from_bytes(hashlib.md5(name.encode("ascii")).digest()[:4], "big") % 256


def page(url: str) -> Record:
    return Record(url=url, data=b"HTTP/1.1 200 OK\r\n\r\n" + url.encode(), date=DATE)


def test_host_bucket_is_the_md5_rule() -> None:
    digest = hashlib.md5(b"www.pku.edu.cn").digest()
    first_four = digest[0] << 24 | digest[1] << 16 | digest[2] << 8 | digest[3]
    assert host_bucket("www.pku.edu.cn") == first_four % 256
    assert host_bucket("WWW.PKU.edu.cn") == first_four % 256  # hosts are case-insensitive
    assert host_bucket("www.pku.edu.cn", buckets=7) == first_four % 7


def test_host_bucket_is_the_same_in_another_process() -> None:
    # Python's hash() would differ between processes (PYTHONHASHSEED); md5 never does.
    code = "from tianwang.formats.store import host_bucket; print(host_bucket('a.test'))"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert runs == {str(md5_bucket("a.test"))}


@pytest.mark.parametrize(
    ("host", "dirname"),
    [
        ("example.com", "example.com"),
        ("Example.COM", "example.com"),
        ("example.com:8080", "example.com_8080"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]:8080", "[__1]_8080"),
    ],
)
def test_host_dirname(host: str, dirname: str) -> None:
    assert host_dirname(host) == dirname


@pytest.mark.parametrize(
    "host", ["", ".", "..", "a/b", "../etc", "a\\b", "a\x00b", "a b", "a\tb", "a\nb", "a\u3000b"]
)
def test_host_dirname_rejects_unsafe_names(host: str) -> None:
    with pytest.raises(ValueError):
        host_dirname(host)


def test_page_path(tmp_path: Path) -> None:
    assert page_path(tmp_path, "News.Example.com") == (
        tmp_path / f"data_{md5_bucket('news.example.com')}" / "news.example.com" / "page.dat"
    )
    with_port = page_path(tmp_path, "a.test:8080")
    assert with_port == tmp_path / f"data_{md5_bucket('a.test_8080')}" / "a.test_8080" / "page.dat"


def test_lru_store_with_two_open_files_writes_five_hosts_correctly(tmp_path: Path) -> None:
    hosts = [f"h{n}.test" for n in range(5)]
    written: dict[str, list[Record]] = {host: [] for host in hosts}
    store = RecordStore(tmp_path, max_open=2)
    for round_ in range(3):
        for host in hosts + hosts[::-1]:  # every host is evicted and reopened
            record = page(f"http://{host}/{round_}/{len(written[host])}")
            path, offset = store.write(host, record)
            assert store.open_files <= 2
            assert path == tmp_path / f"data_{md5_bucket(host)}" / host / "page.dat"
            assert offset == sum(len(encode_record(r)) for r in written[host])
            written[host].append(record)
    store.close()
    assert store.open_files == 0
    for host in hosts:
        path = tmp_path / f"data_{md5_bucket(host)}" / host / "page.dat"
        assert list(iter_records(path)) == written[host]
    assert store.records == 30
    assert store.hosts == set(hosts)
    assert store.bytes_written == sum(path.stat().st_size for path in record_files(tmp_path))


def test_store_repairs_a_crashed_file_before_appending(tmp_path: Path) -> None:
    path = page_path(tmp_path, "a.test")
    path.parent.mkdir(parents=True)
    good = encode_record(page("http://a.test/1"))
    path.write_bytes(good + encode_record(page("http://a.test/2"))[:30])
    with RecordStore(tmp_path) as store:
        assert store.write("a.test", page("http://a.test/3")) == (path, len(good))
    assert [r.url for r in iter_records(path)] == ["http://a.test/1", "http://a.test/3"]


def test_store_rejects_zero_open_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        RecordStore(tmp_path, max_open=0)


def test_record_files_and_iter_tree_are_sorted_and_skip_other_files(tmp_path: Path) -> None:
    with RecordStore(tmp_path, compress=False) as store:
        for host in ["b.test", "a.test", "c.test"]:
            store.write(host, page(f"http://{host}/"))
            store.write(host, page(f"http://{host}/2"))
    (tmp_path / "notes.txt").write_text("not a record file")
    (tmp_path / "data_1" / "x.test").mkdir(parents=True)  # a host dir with no page.dat yet
    files = record_files(tmp_path)
    assert files == sorted(files) and len(files) == 3
    tree = list(iter_tree(tmp_path))
    assert [path for path, _record in tree] == [f for f in files for _ in range(2)]
    assert sorted(record.url for _path, record in tree) == sorted(
        f"http://{h}/{s}" for h in ["a.test", "b.test", "c.test"] for s in ["", "2"]
    )


def test_iter_tree_names_the_bad_file(tmp_path: Path) -> None:
    with RecordStore(tmp_path) as store:
        store.write("a.test", page("http://a.test/"))
    path = page_path(tmp_path, "a.test")
    size = path.stat().st_size
    with path.open("ab") as file:
        file.write(b"version: 1.0\nurl: http://a.test/x\nlength: 99\n\nshort")
    with pytest.raises(RecordError) as caught:
        list(iter_tree(tmp_path))
    assert (caught.value.path, caught.value.offset) == (str(path), size)
