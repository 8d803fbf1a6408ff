"""Line tables: complete lines only are read, a cut last line is repaired on open."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tianwang.formats.lines import LineError, LineLog, complete_end, iter_lines

FIELD = st.text(st.characters(blacklist_characters="\t\n\r", blacklist_categories=("Cs",)))


def test_missing_table_reads_as_empty(tmp_path: Path) -> None:
    assert list(iter_lines(tmp_path / "none.tsv")) == []
    assert complete_end(tmp_path / "none.tsv") == 0


@given(st.lists(st.lists(FIELD, min_size=1, max_size=4), max_size=20))
def test_rows_read_back_as_written(rows: list[list[str]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.tsv"
        with LineLog(path) as log:
            log.append_many(rows[: len(rows) // 2])
            for row in rows[len(rows) // 2 :]:
                log.append(row)
        assert list(iter_lines(path)) == rows


def test_a_cut_last_line_is_skipped_then_repaired_and_kept_aside(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_bytes(b"a\tb\nc\td\npartial\tli")
    assert list(iter_lines(path)) == [["a", "b"], ["c", "d"]]
    with LineLog(path) as log:
        assert log.repaired_bytes == len(b"partial\tli")
        log.append(["e"])
    assert list(iter_lines(path)) == [["a", "b"], ["c", "d"], ["e"]]
    assert (tmp_path / "t.tsv.cut-8").read_bytes() == b"partial\tli"


def test_a_file_without_any_newline_is_cut_to_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_bytes(b"x" * 70000)  # longer than the backwards scan's block
    assert complete_end(path) == 0
    with LineLog(path):
        pass
    assert path.read_bytes() == b""


@pytest.mark.parametrize("field", ["a\tb", "a\nb", "a\rb"])
def test_a_field_that_would_break_the_table_is_refused_and_nothing_written(
    tmp_path: Path, field: str
) -> None:
    path = tmp_path / "t.tsv"
    with LineLog(path) as log, pytest.raises(LineError):
        log.append(["ok", field])
    assert path.read_bytes() == b""
