"""The request log's records: read back with their ids and fields, damage skipped with the
ids it hid told, a compacted log's head and gaps, the format before read as it was, done ids."""

from __future__ import annotations

import struct
from array import array
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tianwang.formats.requestlog import (
    HEADER_SIZE,
    MAGIC,
    MIN_RECORD,
    Head,
    is_current,
    pack,
    pack_head,
    read_done,
    read_head,
    scan_log,
    v1_records,
)

FIELDS = [(i, i % 7 - 3, 100 * i, bytes([i]) * 20 if i % 2 else None, f"h{i % 3}".encode(),
           b"body %d " % i * (i % 5)) for i in range(40)]


def write(path: Path, records=FIELDS) -> list[tuple[int, int]]:
    """The log of these records; (start, end) of each."""
    spans, blob = [], bytearray(MAGIC)
    for fields in records:
        record = pack(*fields)
        spans.append((len(blob), len(blob) + len(record)))
        blob += record
    path.write_bytes(bytes(blob))
    return spans


def scanned(path: Path) -> tuple[list[tuple], list[tuple[int, int, int]]]:
    damage: list[tuple[int, int, int]] = []
    records = [(r.item, r.weight, r.priority, r.fingerprint, r.slot.encode(), r.length)
               for r in scan_log(path, lambda *span: damage.append(span))]
    return records, damage


def expected(ids) -> list[tuple]:
    return [(i, w, p, fp, slot, len(body)) for i, w, p, fp, slot, body in FIELDS if i in ids]


def test_the_header_layout_is_fixed() -> None:
    # checksum, id, body length, weight, priority, has fingerprint, slot length
    assert HEADER_SIZE == 21 and MIN_RECORD == 41 and len(MAGIC) == 8


def test_every_record_reads_back_with_its_id_and_fields(tmp_path: Path) -> None:
    write(tmp_path / "requests.log")
    assert scanned(tmp_path / "requests.log") == (expected(range(40)), [])


def test_a_changed_byte_hides_its_record_only_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "requests.log"
    spans = write(path)
    blob = bytearray(path.read_bytes())
    blob[spans[17][0] + 6] ^= 0x80  # the high byte of record 17's body length
    path.write_bytes(bytes(blob))
    records, damage = scanned(path)
    assert records == expected(set(range(40)) - {17})
    assert damage == [(spans[17][0], spans[18][0], 1)]


def test_garbage_between_records_hides_nothing(tmp_path: Path) -> None:
    path = tmp_path / "requests.log"
    spans = write(path)
    blob = path.read_bytes()
    at = spans[5][1]
    path.write_bytes(blob[:at] + b"\x07" * 100 + blob[at:])
    assert scanned(path) == (expected(range(40)), [(at, at + 100, 0)])


def test_a_cut_tail_is_no_damage(tmp_path: Path) -> None:
    path = tmp_path / "requests.log"
    spans = write(path)
    path.write_bytes(path.read_bytes()[: spans[-1][1] - 3])
    assert scanned(path) == (expected(range(39)), [])


@settings(max_examples=60, deadline=None)
@given(hits=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 400), st.binary(min_size=1,
                                                                                max_size=30)),
                     min_size=1, max_size=4))
def test_whatever_bytes_are_overwritten_every_untouched_record_reads_with_its_own_id(
        tmp_path_factory, hits) -> None:
    path = tmp_path_factory.mktemp("log") / "requests.log"
    spans = write(path)
    blob = bytearray(path.read_bytes())
    touched = set()
    for record, offset, garbage in hits:
        start = min(spans[record][0] + offset, len(blob) - len(garbage))
        blob[start : start + len(garbage)] = garbage
        touched |= {i for i, (a, b) in enumerate(spans) if a < start + len(garbage) and start < b}
    path.write_bytes(bytes(blob))
    records, damage = scanned(path)
    untouched = set(range(40)) - touched
    # A record whose bytes were overwritten with themselves still reads: allowed.
    assert set(expected(untouched)) <= set(records) <= set(expected(range(40)))
    last_read = max((r[0] for r in records), default=-1)
    assert sum(hidden for _s, _e, hidden in damage) == last_read + 1 - len(records)


def test_a_log_whose_mark_is_damaged_is_still_of_this_format(tmp_path: Path) -> None:
    path = tmp_path / "requests.log"
    write(path)
    path.write_bytes(b"\x00" * len(MAGIC) + path.read_bytes()[len(MAGIC):])
    assert is_current(path)
    assert scanned(path)[0] == expected(range(40))


def test_a_log_of_the_format_before_reads_with_ids_by_position(tmp_path: Path) -> None:
    v1 = struct.Struct("<IhiBH")
    path = tmp_path / "requests.log"
    path.write_bytes(b"".join(v1.pack(len(body), w, p, fp is not None, len(slot))
                              + (fp or bytes(20)) + slot + body
                              for _i, w, p, fp, slot, body in FIELDS))
    assert not is_current(path)
    assert scanned(path) == (expected(range(40)), [])
    assert [body for _record, body in v1_records(path)] == [f[5] for f in FIELDS]


def test_done_ids_are_read_sorted_and_one_no_record_could_have_is_dropped(
        tmp_path: Path) -> None:
    ids = [7, 3, 7, 2**40, 2**63, 5]  # 2**40, 2**63: damage; reading them must not allocate
    (tmp_path / "done.log").write_bytes(struct.pack("<6Q", *ids) + b"\x01\x02")  # a torn id
    done = read_done(tmp_path / "done.log")
    assert len(done) == 3 and [i for i in range(10) if i in done] == [3, 5, 7]
    assert list(done.between(4, 8)) == [5, 7] and 2**40 not in done


def compacted(path: Path, kept: list[int], mark: int, after: int) -> list[int]:
    """A compacted log: the head, the records kept below mark, then ids mark.. after."""
    ids = kept + list(range(mark, after))
    blob = pack_head(mark, array("I", kept))
    path.write_bytes(blob + b"".join(pack(*FIELDS[i]) for i in ids))
    return ids


def test_a_compacted_log_reads_its_records_and_its_gaps_are_no_damage(tmp_path: Path) -> None:
    path = tmp_path / "requests.log"
    ids = compacted(path, [2, 3, 9, 17], 20, 26)
    assert is_current(path)
    head, start = read_head(path)
    assert head == Head(20, array("I", [2, 3, 9, 17])) and start == len(MAGIC) + 20 + 16
    assert scanned(path) == (expected(ids), [])


def test_a_compacted_log_whose_head_is_damaged_reads_its_records_and_says_so(
        tmp_path: Path) -> None:
    path = tmp_path / "requests.log"
    ids = compacted(path, [2, 3, 9, 17], 20, 26)
    blob = bytearray(path.read_bytes())
    blob[len(MAGIC) + 10] ^= 0xFF  # in the mark
    path.write_bytes(bytes(blob))
    head, start = read_head(path)
    assert head is not None and not head.known and start == len(MAGIC)
    assert not any(head.may_be_pending(i) for i in range(30)) and head.count_pending(0, 30) == 0
    records, damage = scanned(path)
    assert records == expected(ids) and len(damage) == 1 and damage[0][0] == len(MAGIC)


@given(st.lists(st.integers(0, 60), unique=True), st.integers(0, 80), st.integers(0, 90),
       st.integers(0, 90))
def test_a_head_counts_as_pending_the_ids_it_kept_and_those_after_its_mark(
        kept, mark, low, high) -> None:
    head = Head(mark, array("I", sorted(i for i in kept if i < mark)))
    pending = [i for i in range(low, high) if i >= mark or i in kept]
    assert [i for i in range(low, high) if head.may_be_pending(i)] == pending
    assert head.count_pending(low, high) == len(pending)
