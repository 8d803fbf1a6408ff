"""Tianwang records: the exact bytes written, and a reader that fails loudly and precisely."""

from __future__ import annotations

import calendar
import gzip
import io
import random
import zlib
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.spec_reader import read_records
from tianwang.formats.record import (
    MAX_DATA,
    Record,
    RecordError,
    encode_record,
    format_date,
    iter_records,
    valid_end,
)

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>hi</html>"
DATE = "Sun, 22 Nov 2026 05:16:17 GMT"


def make(url: str = "http://a.example/", **fields: object) -> Record:
    fields.setdefault("date", DATE)
    return Record(url=url, data=fields.pop("data", RESPONSE), **fields)  # type: ignore[arg-type]


def raw_record(header: bytes, data: bytes) -> bytes:
    """A record assembled by hand, to feed the reader what our writer would never produce."""
    return header + b"\n" + data + b"\n"


def test_format_date_is_rfc_1123_gmt() -> None:
    assert format_date(calendar.timegm((2026, 11, 22, 5, 16, 17))) == DATE
    assert format_date(0) == "Thu, 01 Jan 1970 00:00:00 GMT"
    second = calendar.timegm((2026, 11, 22, 5, 16, 17))
    assert format_date(second + 0.999) == DATE  # to the second, as the email module writes it
    assert format_date(second + 1) != DATE
    assert format_date(-0.5) == "Wed, 31 Dec 1969 23:59:59 GMT"


def test_plain_record_bytes() -> None:
    expected = (
        b"version: 1.0\n"
        b"url: http://a.example/\n"
        b"date: " + DATE.encode() + b"\n"
        b"ip: 10.0.0.7\n"
        b"length: " + str(len(RESPONSE)).encode() + b"\n"
        b"\n" + RESPONSE + b"\n"
    )
    assert encode_record(make(ip="10.0.0.7"), compress=False) == expected


def test_compressed_record_bytes_put_unzip_length_just_before_length() -> None:
    stored = zlib.compress(RESPONSE)
    expected = (
        b"version: 1.0\n"
        b"url: http://b.example/x\n"
        b"origin: http://b.example/old\n"
        b"date: " + DATE.encode() + b"\n"
        b"ip: 10.0.0.8\n"
        b"unzip-length: " + str(len(RESPONSE)).encode() + b"\n"
        b"length: " + str(len(stored)).encode() + b"\n"
        b"\n" + stored + b"\n"
    )
    record = make("http://b.example/x", origin="http://b.example/old", ip="10.0.0.8")
    assert encode_record(record) == expected


def test_header_is_lf_only_with_version_first_and_length_last() -> None:
    record = make(origin="http://a.example/start", ip="1.2.3.4", extra={"charset": "gbk"})
    head = encode_record(record).split(b"\n\n", 1)[0]
    assert b"\r" not in head
    names = [line.split(b": ", 1)[0] for line in head.split(b"\n")]
    assert names == [b"version", b"url", b"origin", b"date", b"ip", b"charset", b"unzip-length",
                     b"length"]  # fmt: skip
    assert head.startswith(b"version: 1.0\n")


def test_origin_only_after_a_redirect_and_ip_only_when_known() -> None:
    head = encode_record(make(origin="http://a.example/")).split(b"\n\n", 1)[0]
    assert b"origin:" not in head and b"ip:" not in head


def test_a_record_without_a_date_gets_the_time_it_is_written() -> None:
    head = encode_record(make(date=None)).decode("latin-1").split("\n")
    date = next(line for line in head if line.startswith("date: "))[len("date: ") :]
    assert date.endswith(" GMT") and parsedate_to_datetime(date).year >= 2024


def test_the_independent_spec_reader_reads_what_we_write() -> None:
    records = [make(ip="1.1.1.1"), make("http://c.example/", origin="http://c.example/o")]
    blob = encode_record(records[0]) + encode_record(records[1], compress=False)
    parsed = read_records(blob)
    assert [p["data"] for p in parsed] == [RESPONSE, RESPONSE]
    assert parsed[1]["header"]["origin"] == "http://c.example/o"


@pytest.mark.parametrize("compress", [True, False])
def test_round_trip_through_a_file_with_offsets(tmp_path: Path, compress: bool) -> None:
    records = [
        make("http://a.example/1", ip="1.2.3.4"),
        make(
            "http://a.example/2",
            origin="http://a.example/two",
            data=b"HTTP/1.1 404 Not Found\r\n\r\n",
        ),
        make("http://a.example/3", extra={"x-note": "kept", "charset": "gb2312"}, data=b""),
    ]
    encoded = [encode_record(record, compress) for record in records]
    path = tmp_path / "page.dat"
    path.write_bytes(b"".join(encoded))
    read = list(iter_records(path))
    assert read == records
    assert [r.offset for r in read] == [0, len(encoded[0]), len(encoded[0]) + len(encoded[1])]
    assert valid_end(path) == path.stat().st_size


def test_reading_from_a_file_object_counts_offsets_from_where_it_starts() -> None:
    first, second = encode_record(make("http://a/1")), encode_record(make("http://a/2"))
    stream = io.BytesIO(first + second)
    stream.seek(len(first))
    assert [(r.url, r.offset) for r in iter_records(stream)] == [("http://a/2", len(first))]


def test_non_utf8_bytes_in_a_url_survive_a_round_trip() -> None:
    raw = raw_record(b"version: 1.0\nurl: http://a/\xc4\xe3\nlength: 0\n", b"")
    (record,) = iter_records(io.BytesIO(raw))
    assert encode_record(record, compress=False).startswith(
        b"version: 1.0\nurl: http://a/\xc4\xe3\n"
    )


def test_a_gzip_stream_is_accepted_as_compressed_data() -> None:
    stored = gzip.compress(RESPONSE)
    header = b"version: 1.0\nurl: http://g/\nunzip-length: %d\nlength: %d\n" % (
        len(RESPONSE),
        len(stored),
    )
    (record,) = iter_records(io.BytesIO(raw_record(header, stored)))
    assert record.data == RESPONSE
    assert record.http.body == b"<html>hi</html>"


def test_headers_are_a_map_read_in_any_order_and_unknown_names_are_kept() -> None:
    header = b"version: 1.0\nip: 9.9.9.9\nX-Tool: old\nurl: http://m/\ndate: d\nlength: 2\n"
    (record,) = iter_records(io.BytesIO(raw_record(header, b"ab")))
    assert (record.url, record.ip, record.date, record.origin) == (
        "http://m/",
        "9.9.9.9",
        "d",
        None,
    )
    assert record.extra == {"x-tool": "old"}
    assert record.data == b"ab"


GOOD = encode_record(make("http://good/"))
BODY = b"HTTP/1.1 200 OK\r\n\r\nx"
Z = zlib.compress(BODY)


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"url: http://a/\nversion: 1.0\nlength: 1\n\nx\n", "version"),
        (b"\nversion: 1.0\nurl: http://a/\nlength: 1\n\nx\n", "version"),
        (b"version: 1.0\nurl: http://a/\n\nx\n", "length"),
        (b"version: 1.0\nurl: http://a/\nlength: one\n\nx\n", "length"),
        (b"version: 1.0\nurl: http://a/\nlength: -1\n\nx\n", "length"),
        (b"version: 1.0\nurl: http://a/\nlength: 1\nip: 1.1.1.1\n\nx\n", "not the last"),
        (b"version: 1.0\nurl: http://a/\nlength: 500\n\nshort\n", "truncated"),
        (b"version: 1.0\nurl: http://a/\nlength: 1\n\nxy", "newline"),
        (b"version: 1.0\nurl: http://a/\nlength: 1\n\nx", "truncated"),
        (b"version: 1.0\nurl: http://a/\nlen", "truncated"),
        (b"version: 1.0\r\nurl: http://a/\nlength: 1\n\nx\n", "CR"),
        (b"version: 1.0\nurl http://a/\nlength: 1\n\nx\n", "name: value"),
        (b"version: 1.0\nurl: http://a/\nurl: http://b/\nlength: 1\n\nx\n", "duplicate"),
        (b"version: 1.0\ndate: d\nlength: 1\n\nx\n", "url"),
        (b"version: 2.0\nurl: http://a/\nlength: 1\n\nx\n", "version"),
        (b"version: 1.0\nurl: http://a/\nunzip-length: 3\nlength: 3\n\nabc\n", "compressed"),
        (b"version: 1.0\nurl: http://a/\nunzip-length: %d\nlength: %d\n\n%s\n"
         % (len(BODY) + 1, len(Z), Z), "unzip-length"),
        (b"version: 1.0\nurl: http://a/\nunzip-length: %d\nlength: %d\n\n%s\n"
         % (len(BODY) - 1, len(Z), Z), "unzip-length"),
        (b"version: 1.0\nurl: http://a/\nunzip-length: %d\nlength: %d\n\n%s\n"
         % (len(BODY), len(Z) - 2, Z[:-2]), "ends before"),
        (b"version: 1.0\nurl: http://a/\nunzip-length: x\nlength: %d\n\n%s\n" % (len(Z), Z),
         "unzip-length"),
        (b"\x00" * 40, "version"),
    ],
)  # fmt: skip
def test_malformed_record_raises_with_path_and_offset(
    tmp_path: Path, bad: bytes, reason: str
) -> None:
    path = tmp_path / "page.dat"
    # A cut-short record can only be the last one; any other is followed by a good record.
    path.write_bytes(GOOD + bad + (b"" if reason == "truncated" else GOOD))
    records = iter_records(path)
    assert next(records).url == "http://good/"
    with pytest.raises(RecordError) as caught:
        next(records)
    error = caught.value
    assert (error.path, error.offset) == (str(path), len(GOOD))
    assert reason in error.reason
    assert str(error).startswith(f"{path}: offset {len(GOOD)}: ")
    # Only a tail of damage is unfinished; damage before a good record is left in place.
    truncated = reason == "truncated"
    assert valid_end(path) == (len(GOOD) if truncated else path.stat().st_size)
    # A reader that goes on reports the span and reads the good record after it.
    damaged: list[RecordError] = []
    urls = [record.url for record in iter_records(path, on_damage=damaged.append)]
    assert urls[0] == urls[-1] == "http://good/"
    assert len(urls) == (1 if truncated else 2) or bad.startswith(b"\nversion")
    assert damaged[0].offset == len(GOOD) and reason in damaged[0].reason
    end = len(GOOD + bad) if not bad.startswith(b"\nversion") else len(GOOD) + 1
    assert damaged[0].offset + damaged[0].length == end


# A DATA over a MiB is checked in bounded steps, then inflated in one allocation: the same
# checks must hold on that path. Zeros after a random MiB: 3 MiB that zlib shrinks to one.
BIG = b"HTTP/1.1 200 OK\r\n\r\n" + random.Random(16).randbytes(1 << 20) + bytes(2 << 20)
BIG_Z = zlib.compress(BIG)


def big_record(declared: int, stored: bytes) -> bytes:
    return raw_record(b"version: 1.0\nurl: http://a/\nunzip-length: %d\nlength: %d\n"
                      % (declared, len(stored)), stored)


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (big_record(len(BIG) - 1, BIG_Z), "more than unzip-length"),
        (big_record(len(BIG) + 1, BIG_Z), f"inflates to {len(BIG)} bytes"),
        (big_record(len(BIG), BIG_Z[:-2]), "ends before"),
        (big_record(len(BIG), BIG_Z[: len(BIG_Z) // 2]), "ends before"),
        (big_record(len(BIG), BIG_Z + b"xx"), "bytes after"),
        (big_record(len(BIG), BIG_Z + b"x" * (2 << 20)), "bytes after"),
        (big_record(len(BIG), BIG_Z[:100] + b"\xff" * 8 + BIG_Z[108:]), "bad compressed"),
    ],
)  # fmt: skip
def test_a_big_compressed_record_gets_the_same_checks(bad: bytes, reason: str) -> None:
    with pytest.raises(RecordError, match=reason):
        list(iter_records(io.BytesIO(bad)))
    gzipped = gzip.compress(BIG)
    for good in (big_record(len(BIG), BIG_Z), big_record(len(BIG), gzipped)):
        assert [record.data for record in iter_records(io.BytesIO(good))] == [BIG]


def test_data_zlib_cannot_shrink_enough_is_written_plain_and_reads_back() -> None:
    # 11 MiB of random bytes: compressed it would be over the reader's limit (and with DATA,
    # more than a reader should hold at once), so the writer stores it as it is.
    data = b"HTTP/1.1 200 OK\r\n\r\n" + random.Random(5).randbytes(MAX_DATA - 19)
    encoded = encode_record(make(data=data))
    assert b"unzip-length" not in encoded and len(encoded) < MAX_DATA + 200
    assert [record.data for record in iter_records(io.BytesIO(encoded))] == [data]


def test_error_message_for_a_short_record_gives_both_lengths() -> None:
    error = RecordError("page.dat", 1234, "truncated record (length 500, only 17 bytes left)")
    assert str(error) == "page.dat: offset 1234: truncated record (length 500, only 17 bytes left)"
    data = b"version: 1.0\nurl: http://a/\nlength: 500\n\n" + b"x" * 17
    with pytest.raises(
        RecordError, match=r"^offset 0: truncated record \(length 500, only 17 bytes"
    ):
        list(iter_records(io.BytesIO(data)))


def test_a_corrupt_huge_length_is_reported_not_allocated() -> None:
    data = b"version: 1.0\nurl: http://a/\nlength: 999999999999999999\n\nabc\n"
    with pytest.raises(RecordError, match="over the reader's limit"):
        list(iter_records(io.BytesIO(data)))
    with pytest.raises(RecordError, match="only 4 bytes left"):
        list(iter_records(io.BytesIO(data), limit=10**18))


def test_valid_end_of_empty_and_wholly_bad_files(tmp_path: Path) -> None:
    empty, bad, tail = tmp_path / "empty.dat", tmp_path / "bad.dat", tmp_path / "tail.dat"
    empty.write_bytes(b"")
    bad.write_bytes(b"garbage\n")
    tail.write_bytes(b"garbage\n" + GOOD + GOOD[:-5])
    assert (valid_end(empty), valid_end(bad)) == (0, 0)
    assert valid_end(tail) == len(b"garbage\n" + GOOD)
    assert list(iter_records(empty)) == []


@pytest.mark.parametrize(
    "record",
    [
        make("http://a/\nversion: 9"),
        make("http://a/\r"),
        make(""),
        make(origin="http://o/\n"),
        make(ip="1.2.3.4\n"),
        make(date="today\r\n"),
        make(extra={"note": "two\nlines"}),
        make(extra={"Note": "upper case"}),
        make(extra={"with space": "x"}),
        make(extra={"": "x"}),
        make(extra={"length": "5"}),
        make(extra={"url": "http://other/"}),
    ],
)
def test_encode_rejects_fields_that_would_break_the_header(record: Record) -> None:
    with pytest.raises(ValueError):
        encode_record(record)


records_strategy = st.lists(
    st.builds(
        make,
        url=st.from_regex(r"http://[a-z]{1,8}\.test/[ -~]{0,20}", fullmatch=True),
        data=st.binary(max_size=200),
        ip=st.none() | st.just("127.0.0.1"),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(
    records=records_strategy,
    compress=st.booleans(),
    position=st.integers(min_value=0),
    byte=st.integers(0, 255),
)
def test_a_corrupted_byte_gives_records_or_a_record_error_never_a_crash(
    records: list[Record], compress: bool, position: int, byte: int
) -> None:
    blob = bytearray(b"".join(encode_record(record, compress) for record in records))
    blob[position % len(blob)] = byte
    try:
        read = list(iter_records(io.BytesIO(bytes(blob))))
    except RecordError as exc:
        assert 0 <= exc.offset < len(blob)
    else:
        assert all(isinstance(record, Record) for record in read)
