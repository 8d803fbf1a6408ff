"""The md5 index of a record tree: queries, mirror lines once, catching up with the files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tianwang.formats import Record, RecordStore, build_http_response, page_path
from tianwang.formats.md5store import INDEX_FILE, MD5Store
from tianwang.formats.mirrors import iter_mirrors


def md5(body: bytes) -> bytes:
    return hashlib.md5(body).digest()


def store_pages(data: Path, pages: list[tuple[str, str, bytes]]) -> None:
    """(host, url, body) records appended to the tree, as the storage pipeline writes them."""
    with RecordStore(data) as store:
        for host, url, body in pages:
            store.write(host, Record(url, build_http_response(200, [], body)))


def test_a_new_tree_is_empty_and_bodies_added_are_found(tmp_path: Path) -> None:
    with MD5Store(tmp_path) as index:
        assert index.kept(md5(b"a")) is None and index.caught_up == 0
        index.add(md5(b"a"), "http://a.cn/", "data_1/a.cn/page.dat", 120)
        assert index.kept(md5(b"a")) == "http://a.cn/"
        assert index.indexed_end("data_1/a.cn/page.dat") == 120
    assert (tmp_path / INDEX_FILE).exists()


def test_a_duplicate_url_gets_one_mirror_line(tmp_path: Path) -> None:
    with MD5Store(tmp_path) as index:
        assert index.add_mirror(md5(b"a"), "http://b.cn/", "http://a.cn/")
        assert not index.add_mirror(md5(b"a"), "http://b.cn/", "http://a.cn/")
    with MD5Store(tmp_path) as index:  # remembered across opens
        assert index.is_mirrored("http://b.cn/")
        assert not index.add_mirror(md5(b"a"), "http://b.cn/", "http://a.cn/")
    assert [m.duplicate for m in iter_mirrors(tmp_path)] == ["http://b.cn/"]


def test_records_never_indexed_are_indexed_on_open(tmp_path: Path) -> None:
    store_pages(tmp_path, [("a.cn", "http://a.cn/", b"one"), ("b.cn", "http://b.cn/", b"two")])
    with MD5Store(tmp_path) as index:
        assert index.caught_up == 2
        assert index.kept(md5(b"two")) == "http://b.cn/"
    store_pages(tmp_path, [("a.cn", "http://a.cn/x", b"three")])
    with MD5Store(tmp_path) as index:
        assert index.caught_up == 1  # only what lies past the indexed offset is read
        assert index.kept(md5(b"three")) == "http://a.cn/x"
        assert index.kept(md5(b"one")) == "http://a.cn/"


def test_an_unfinished_last_record_is_not_indexed(tmp_path: Path) -> None:
    store_pages(tmp_path, [("a.cn", "http://a.cn/", b"one"), ("a.cn", "http://a.cn/x", b"two")])
    path = page_path(tmp_path, "a.cn")
    path.write_bytes(path.read_bytes()[:-5])  # a kill in the middle of the second write
    with MD5Store(tmp_path) as index:
        assert index.caught_up == 1
        assert index.kept(md5(b"two")) is None


def test_mirror_lines_not_yet_committed_are_found_on_open(tmp_path: Path) -> None:
    line = f"{md5(b'a').hex()}\thttp://b.cn/\thttp://a.cn/\n"
    (tmp_path / "mirrors.tsv").write_text(line)
    with MD5Store(tmp_path) as index:
        assert index.is_mirrored("http://b.cn/") and index.caught_up == 1


def test_a_mirror_line_that_is_not_utf8_is_skipped_as_damage(tmp_path: Path) -> None:
    good = f"{md5(b'a').hex()}\thttp://b.cn/\thttp://a.cn/\n".encode()
    (tmp_path / "mirrors.tsv").write_bytes(b"\x8f\xe3\t\xff\xfe\t\x80\n" + good)
    with MD5Store(tmp_path) as index:
        assert index.is_mirrored("http://b.cn/") and index.caught_up == 1


def test_a_tree_changed_behind_its_back_is_indexed_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store_pages(tmp_path, [("a.cn", "http://a.cn/", b"one"), ("a.cn", "http://a.cn/x", b"two")])
    MD5Store(tmp_path).close()
    path = page_path(tmp_path, "a.cn")
    path.unlink()
    store_pages(tmp_path, [("a.cn", "http://a.cn/y", b"three")])  # shorter than indexed
    with MD5Store(tmp_path) as index:
        assert index.kept(md5(b"two")) is None
        assert index.kept(md5(b"three")) == "http://a.cn/y"
    assert "rebuilding the md5 index" in caplog.text


def test_commits_come_in_batches(tmp_path: Path) -> None:
    with MD5Store(tmp_path, commit_every=2) as index:
        index.add(md5(b"a"), "http://a.cn/", "data_1/a.cn/page.dat", 10)
        assert index._uncommitted == 1
        index.add(md5(b"b"), "http://a.cn/b", "data_1/a.cn/page.dat", 20)
        assert index._uncommitted == 0
    with pytest.raises(ValueError, match="commit_every"):
        MD5Store(tmp_path, commit_every=0)


def test_an_index_that_is_not_a_database_is_set_aside_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store_pages(tmp_path, [("a.cn", "http://a.cn/", b"one")])
    (tmp_path / INDEX_FILE).write_bytes(b"not a database" * 100)
    with MD5Store(tmp_path) as index:
        assert index.kept(md5(b"one")) == "http://a.cn/"
    assert (tmp_path / f"{INDEX_FILE}.bad").exists()
    assert "rebuilding it from the records" in caplog.text


def test_an_index_that_cannot_be_opened_is_an_os_error_not_damage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """sqlite's "unable to open database file" (here: a directory in its place; in a crawl:
    a data directory that cannot be written) is no damaged index: nothing is moved aside."""
    (tmp_path / INDEX_FILE).mkdir()
    with pytest.raises(OSError, match="unable to open database file"):
        MD5Store(tmp_path)
    assert not (tmp_path / f"{INDEX_FILE}.bad").exists() and (tmp_path / INDEX_FILE).is_dir()
    assert "moved to" not in caplog.text


def test_damage_done_in_place_is_found_and_its_body_is_no_longer_stored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pages = [("a.cn", f"http://a.cn/{n}", b"body %d" % n) for n in range(3)]
    store_pages(tmp_path, pages + [("b.cn", "http://b.cn/", b"copy")])
    with MD5Store(tmp_path) as index:
        index.add_mirror(md5(b"body 1"), "http://b.cn/1", "http://a.cn/1")
        index.add_mirror(md5(b"copy"), "http://b.cn/2", "http://b.cn/")
    path = page_path(tmp_path, "a.cn")
    blob = path.read_bytes()
    second = blob.index(b"version", 1)
    path.write_bytes(blob[:second] + b"vErsion" + blob[second + 7:])  # same size, in place
    with MD5Store(tmp_path) as index:
        assert index.kept(md5(b"body 1")) is None  # lost: fetched and stored again
        assert index.kept(md5(b"body 2")) == "http://a.cn/2"
        assert not index.is_mirrored("http://b.cn/1") and index.is_mirrored("http://b.cn/2")
    assert "newly damaged" in caplog.text
    # The mirror line of the lost page is dropped (kept aside), the other stays.
    assert [m.duplicate for m in iter_mirrors(tmp_path)] == ["http://b.cn/2"]
    assert "http://b.cn/1" in (tmp_path / "mirrors.tsv.cut-pruned").read_text()
    caplog.clear()
    with MD5Store(tmp_path) as index:  # known damage: no second rebuild
        assert index.caught_up == 0
    assert "rebuilding" not in caplog.text


def test_damage_to_the_last_indexed_record_is_found_too(tmp_path: Path) -> None:
    store_pages(tmp_path, [("a.cn", "http://a.cn/", b"one"), ("a.cn", "http://a.cn/x", b"two")])
    MD5Store(tmp_path).close()
    path = page_path(tmp_path, "a.cn")
    blob = bytearray(path.read_bytes())
    blob[-3] ^= 0xFF  # the last record's compressed DATA: a tail the writer will cut
    path.write_bytes(bytes(blob))
    with MD5Store(tmp_path) as index:
        assert index.kept(md5(b"two")) is None and index.kept(md5(b"one")) == "http://a.cn/"


def test_a_mirror_line_added_after_a_prune_lands_in_the_table(tmp_path: Path) -> None:
    store_pages(tmp_path, [("a.cn", "http://a.cn/", b"one"), ("a.cn", "http://a.cn/x", b"two"),
                           ("a.cn", "http://a.cn/y", b"three")])
    with MD5Store(tmp_path) as index:
        index.add_mirror(md5(b"two"), "http://b.cn/x", "http://a.cn/x")
    path = page_path(tmp_path, "a.cn")
    blob = path.read_bytes()
    second = blob.index(b"version", 1)
    path.write_bytes(blob[:second] + b"vErsion" + blob[second + 7:])
    with MD5Store(tmp_path) as index:  # rebuilt, the line of the lost page pruned
        assert index.add_mirror(md5(b"two"), "http://b.cn/x", "http://c.cn/x")
    assert [(m.duplicate, m.kept) for m in iter_mirrors(tmp_path)] == [
        ("http://b.cn/x", "http://c.cn/x")]
