"""PageFile: appends, and repair of a file whose last record a crash cut short."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tianwang.formats.pagefile import PageFile, repair_file
from tianwang.formats.record import Record, encode_record, iter_records

ROOT = Path(__file__).resolve().parent.parent
DATE = "Sun, 22 Nov 2026 05:16:17 GMT"


def page(n: int, body: bytes = b"") -> Record:
    data = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + (body or b"page %d" % n)
    return Record(url=f"http://h.test/{n}", data=data, date=DATE, ip="127.0.0.1")


def test_append_writes_encoded_records_and_returns_their_offsets(tmp_path: Path) -> None:
    path = tmp_path / "data_1" / "h.test" / "page.dat"  # parents are created
    with PageFile(path) as pages:
        offsets = [pages.append(page(n)) for n in range(3)]
        # Written through at once: another reader sees each record before close.
        assert path.read_bytes() == b"".join(encode_record(page(n)) for n in range(3))
    first, second = (len(encode_record(page(n))) for n in range(2))
    assert offsets == [0, first, first + second]
    assert pages.closed


def test_plain_form_when_compress_is_false(tmp_path: Path) -> None:
    with PageFile(tmp_path / "page.dat", compress=False) as pages:
        pages.append(page(1))
    assert (tmp_path / "page.dat").read_bytes() == encode_record(page(1), compress=False)


def test_reopening_appends_after_existing_records(tmp_path: Path) -> None:
    path = tmp_path / "page.dat"
    with PageFile(path) as pages:
        pages.append(page(1))
    with PageFile(path) as pages:
        assert pages.repaired_bytes == 0
        assert pages.append(page(2)) == len(encode_record(page(1)))
    assert [r.url for r in iter_records(path)] == ["http://h.test/1", "http://h.test/2"]


def test_repair_cuts_a_partial_record_logs_it_and_keeps_the_cut_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "page.dat"
    good = encode_record(page(1))
    partial = encode_record(page(2))[:-9]
    path.write_bytes(good + partial)
    with caplog.at_level(logging.WARNING, logger="tianwang.formats.pagefile"):
        pages = PageFile(path)
    pages.close()
    assert path.read_bytes() == good
    assert pages.repaired_bytes == len(partial)
    (message,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert str(path) in message
    assert f"offset {len(good)}" in message and f"{len(partial)} bytes" in message
    assert (tmp_path / f"page.dat.cut-{len(good)}").read_bytes() == partial


def test_a_failed_write_leaves_no_partial_record(tmp_path: Path) -> None:
    path = tmp_path / "page.dat"
    pages = PageFile(path)
    pages.append(page(1))
    real_file = pages._file

    class DiskFull:
        def write(self, data: memoryview) -> int:
            real_file.write(data[:10])
            raise OSError(28, "No space left on device")

        def fileno(self) -> int:
            return real_file.fileno()

    pages._file = DiskFull()  # type: ignore[assignment]
    with pytest.raises(OSError):
        pages.append(page(2))
    pages._file = real_file
    assert pages.append(page(3)) == len(encode_record(page(1)))
    pages.close()
    assert [r.url for r in iter_records(path)] == ["http://h.test/1", "http://h.test/3"]


@settings(max_examples=150, deadline=None)
@given(
    bodies=st.lists(st.binary(max_size=400), min_size=1, max_size=6),
    compress=st.booleans(),
    cut=st.integers(min_value=0),
)
def test_truncated_file_is_repaired_keeping_every_complete_record(
    bodies: list[bytes], compress: bool, cut: int
) -> None:
    records = [page(n, body) for n, body in enumerate(bodies)]
    encoded = [encode_record(record, compress) for record in records]
    blob = b"".join(encoded)
    cut %= len(blob) + 1
    # The records that end at or before the cut are complete and must all survive.
    ends = [sum(len(e) for e in encoded[: i + 1]) for i in range(len(encoded))]
    complete = [record for record, end in zip(records, ends, strict=True) if end <= cut]
    with tempfile.TemporaryDirectory() as tmp:  # hypothesis reruns: no function-scoped fixture
        path = Path(tmp) / "page.dat"
        path.write_bytes(blob[:cut])
        with PageFile(path, compress=compress) as pages:
            assert pages.repaired_bytes == cut - max([0] + [e for e in ends if e <= cut])
            pages.append(page(99))
        assert list(iter_records(path)) == [*complete, page(99)]


WRITER = """
import sys
from tianwang.formats.pagefile import PageFile, repair_file
from tianwang.formats.record import Record
pages = PageFile(sys.argv[1], compress=False)
body = bytes(range(256)) * 32768  # 8 MiB, stored plain: a kill may land inside the write
n = 0
while True:
    pages.append(Record(url=f"http://h.test/{n}", data=b"HTTP/1.1 200 OK\\r\\n\\r\\n" + body,
                        date="d"))
    n += 1
    print(n, flush=True)
"""


def test_kill_9_mid_write_loses_nothing_before_the_cut(tmp_path: Path) -> None:
    path = tmp_path / "page.dat"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, env=env
    )
    assert writer.stdout is not None
    for _ in range(3):  # three records are known complete
        writer.stdout.readline()
    time.sleep(0.05)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    with PageFile(path, compress=False) as pages:
        pages.append(Record(url="http://h.test/after", data=b"HTTP/1.1 200 OK\r\n\r\n", date="d"))
    urls = [record.url for record in iter_records(path)]
    assert len(urls) >= 4
    assert urls[:-1] == [f"http://h.test/{n}" for n in range(len(urls) - 1)]
    assert urls[-1] == "http://h.test/after"


def test_damage_mid_file_is_left_in_place_and_records_go_after_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "page.dat"
    records = [encode_record(page(n)) for n in range(4)]
    damaged = records[1].replace(b"version", b"vErsion", 1)
    path.write_bytes(records[0] + damaged + records[2] + records[3])
    with caplog.at_level(logging.WARNING, logger="tianwang.formats.pagefile"):
        with PageFile(path) as pages:
            pages.append(page(9))
    assert pages.repaired_bytes == 0  # nothing cut: only a tail is unfinished
    assert path.read_bytes().startswith(records[0] + damaged + records[2] + records[3])
    assert "left in place" in caplog.text
    spans: list = []
    urls = [record.url for record in iter_records(path, on_damage=spans.append)]
    assert urls == ["http://h.test/0", "http://h.test/2", "http://h.test/3", "http://h.test/9"]
    assert [(span.offset, span.length) for span in spans] == [(len(records[0]), len(damaged))]


def test_repair_file_takes_out_every_damaged_span_and_keeps_each_aside(tmp_path: Path) -> None:
    path = tmp_path / "page.dat"
    records = [encode_record(page(n)) for n in range(5)]
    garbage, tail = b"\x00garbage\n", records[4][:-3]
    path.write_bytes(records[0] + garbage + records[1] + records[2][:40] + records[3] + tail)
    spans = repair_file(path)
    assert path.read_bytes() == records[0] + records[1] + records[3]
    first, second, third = (span.offset for span in spans)
    assert (tmp_path / f"page.dat.cut-{first}").read_bytes() == garbage
    assert (tmp_path / f"page.dat.cut-{second}").read_bytes() == records[2][:40]
    assert (tmp_path / f"page.dat.cut-{third}").read_bytes() == tail
    assert repair_file(path) == []  # a clean file is not rewritten
    assert not list(tmp_path.glob(".page.dat.*"))  # no temp file left behind
