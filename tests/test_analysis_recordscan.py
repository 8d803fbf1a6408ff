"""The dedup's fast record scanner (libdeflate) against the format's reader (stdlib zlib)."""

from __future__ import annotations

import gzip
import hashlib
import random
import zlib
from pathlib import Path

import pytest

from tianwang.analysis.recordscan import scan_file, scan_urls
from tianwang.formats import build_http_response
from tianwang.formats.record import (
    Record,
    RecordError,
    encode_header,
    encode_record,
    header_fields,
    iter_records,
)

DATE = "Sun, 22 Nov 2026 05:16:17 GMT"


def response(body: bytes) -> bytes:
    return build_http_response(200, [(b"Content-Type", b"text/html")], body)


def gzip_record(record: Record) -> bytes:
    """A record whose DATA is a gzip stream (what the paper's format says), built by hand."""
    stored = gzip.compress(record.data)
    fields = header_fields(record) + [("unzip-length", str(len(record.data))),
                                      ("length", str(len(stored)))]
    return encode_header(fields) + stored + b"\n"


def bodies(count: int, seed: int = 3) -> list[bytes]:
    rng = random.Random(seed)
    words = [bytes(rng.choices(b"abcdefgh <>/", k=rng.randint(1, 9))) for _ in range(300)]
    return [b" ".join(rng.choices(words, k=rng.randint(0, 4000))) for _ in range(count)]


def mixed_file(path: Path) -> list[bytes]:
    """Records as every writer may store them: zlib at levels 1 and 9, gzip, uncompressed,
    DATA that is not an HTTP response, extra headers; returns each record's bytes."""
    raws = []
    for n, body in enumerate(bodies(24)):
        url = f"http://www.a.cn/p{n}.html"
        data = response(body) if n % 6 else body
        record = Record(url=url, data=data, date=DATE, ip="127.0.0.1",
                        extra={"x-tag": "t"} if n % 5 == 0 else {})
        kind = n % 4
        if kind == 0:
            raws.append(encode_record(record, compress=True, level=1))
        elif kind == 1:
            raws.append(encode_record(record, compress=True, level=9))
        elif kind == 2:
            raws.append(gzip_record(record))
        else:
            raws.append(encode_record(record, compress=False))
    path.write_bytes(b"".join(raws))
    return raws


def expected(path: Path, raws: list[bytes]) -> list[tuple]:
    """What a scan must give, from the reference reader and stdlib zlib/hashlib."""
    rows, offset = [], 0
    for record, raw in zip(iter_records(path), raws, strict=True):
        body = record.http.body if record.data.startswith(b"HTTP/") else record.data
        rows.append((offset, len(raw), record.url, record.date,
                     hashlib.md5(body).digest(), zlib.crc32(raw)))
        offset += len(raw)
    return rows


def test_the_fast_path_reads_every_well_formed_record_of_every_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Handing over to the reference reader gives the same answer, only twice as slowly:
    # here it must not happen, so a fast path that silently refused a form would show.
    path = tmp_path / "page.dat"
    raws = mixed_file(path)
    monkeypatch.setattr("tianwang.analysis.recordscan._reference_record", None)
    assert [scanned.length for scanned in scan_file(path)] == [len(raw) for raw in raws]


def test_scan_agrees_with_the_reference_reader_on_zlib_gzip_and_plain_records(
    tmp_path: Path,
) -> None:
    path = tmp_path / "page.dat"
    raws = mixed_file(path)
    assert [tuple(row) for row in scan_file(path)] == expected(path, raws)
    assert list(scan_urls(path)) == [record.url for record in iter_records(path)]


@pytest.mark.parametrize("damage", ["flipped byte", "trailing bytes", "cut stream", "cut file"])
def test_damaged_data_is_reported_by_file_and_offset_after_the_good_records(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "page.dat"
    raws = mixed_file(path)
    good = expected(path, raws)
    bad = 8  # a zlib record (kind 0)
    start = sum(map(len, raws[:bad]))
    head = raws[bad].index(b"\n\n") + 2
    record = bytearray(raws[bad])
    if damage == "flipped byte":
        record[head + 40] ^= 0xFF
    elif damage == "trailing bytes":  # stream then junk, the length field counting both
        stored = bytes(record[head:-1]) + b"junk"
        record = bytearray(record[:head].replace(
            f"length: {len(stored) - 4}\n".encode(), f"length: {len(stored)}\n".encode())
            + stored + b"\n")
    elif damage == "cut stream":  # the stream ends early, the framing still whole
        stored = bytes(record[head:-1])[:-20]
        record = bytearray(record[:head].replace(
            f"length: {len(stored) + 20}\n".encode(), f"length: {len(stored)}\n".encode())
            + stored + b"\n")
    data = b"".join(raws[:bad]) + bytes(record) + b"".join(raws[bad + 1:])
    if damage == "cut file":
        data = data[: start + head + 100]
    path.write_bytes(data)
    with pytest.raises(RecordError) as reference:
        list(iter_records(path))
    scanned = []
    with pytest.raises(RecordError) as fast:
        scanned.extend(scan_file(path))
    assert (fast.value.path, fast.value.offset, fast.value.reason) == (
        str(path), start, reference.value.reason)
    assert reference.value.offset == start
    assert [tuple(row) for row in scanned] == good[:bad]
    # Going on: the fast scan reports the reader's span and reads every record after it.
    spans: list[RecordError] = []
    reference_spans: list[RecordError] = []
    rest = [tuple(row) for row in scan_file(path, on_damage=spans.append)]
    list(iter_records(path, on_damage=reference_spans.append))
    assert [(s.offset, s.length, s.reason) for s in spans] == [
        (s.offset, s.length, s.reason) for s in reference_spans]
    assert spans[0].offset == start
    after = [] if damage == "cut file" else good[bad + 1:]
    assert rest[:bad] == good[:bad]
    assert [row[1:] for row in rest[bad:]] == [row[1:] for row in after]  # offsets moved
    # scan_urls reads headers only (a bad DATA is not seen there), but never stops early.
    urls = list(scan_urls(path, on_damage=spans.append))
    assert urls[:bad] == [row[2] for row in good[:bad]]
    assert urls[-len(after):] == [row[2] for row in after] or not after


def test_spellings_the_spec_allows_read_alike_by_both(tmp_path: Path) -> None:
    path = tmp_path / "page.dat"
    data = response(b"<p>hi</p>")
    path.write_bytes(
        b"version:1.0\nURL:http://a.cn/x\nx-new-thing:\t whatever\nlength:  %d\n\n%s\n"
        % (len(data), data) + encode_record(Record("http://a.cn/y", data, DATE))
        + b"version: 1.0\nurl:  http://a.cn/z\ndate:  %s\nlength: %d\n\n%s\n"
        % (DATE.encode(), len(data), data)
        + b"version: 1.0\nurl: \thttp://a.cn/w\nx: y\nlength: %d\n\n%s\n" % (len(data), data))
    records = list(iter_records(path))
    urls = ["http://a.cn/x", "http://a.cn/y", "http://a.cn/z", "http://a.cn/w"]
    assert [r.url for r in records] == urls and records[2].date == DATE
    assert [(s.url, s.date) for s in scan_file(path)][2] == ("http://a.cn/z", DATE)
    assert records[0].extra == {"x-new-thing": "whatever"}  # unknown: kept, never an error
    assert [s.url for s in scan_file(path)] == [r.url for r in records]
    assert list(scan_urls(path)) == [r.url for r in records]


def test_a_declared_size_over_the_limit_is_damage_not_an_allocation(tmp_path: Path) -> None:
    path = tmp_path / "page.dat"
    bomb = zlib.compress(b"\0" * (2 << 20))
    hostile = b"version: 1.0\nurl: http://a.cn/b\nunzip-length: 3221225516\nlength: %d\n\n%s\n" % (
        len(bomb), bomb)
    good = encode_record(Record("http://a.cn/y", response(b"ok"), DATE))
    path.write_bytes(good + hostile + good)
    spans: list[RecordError] = []
    assert [s.url for s in scan_file(path, on_damage=spans.append)] == ["http://a.cn/y"] * 2
    assert [list(scan_urls(path, on_damage=spans.append))] == [["http://a.cn/y"] * 2]
    assert [(s.offset, s.length) for s in spans] == [(len(good), len(hostile))] * 2
    assert "over the reader's limit" in spans[0].reason
