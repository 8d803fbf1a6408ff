from pathlib import Path

from tests.accesslog import complete_lines, line_count, served_since, urls_since


def test_a_line_still_being_written_is_not_read(tmp_path: Path) -> None:
    log = tmp_path / "access.jsonl"
    log.write_text('{"url": "http://a/"}\n{"url": "http://b/"}\n{"url": "ht', encoding="utf-8")
    assert complete_lines(log) == ['{"url": "http://a/"}', '{"url": "http://b/"}']
    assert line_count(log) == 2
    assert [line["url"] for line in served_since(log, 1)] == ["http://b/"]
    assert urls_since(log, 0) == ["http://a/", "http://b/"]


def test_an_empty_or_unfinished_first_line_reads_as_nothing(tmp_path: Path) -> None:
    log = tmp_path / "access.jsonl"
    log.write_text("", encoding="utf-8")
    assert complete_lines(log) == []
    log.write_text('{"url"', encoding="utf-8")
    assert served_since(log, 0) == []
