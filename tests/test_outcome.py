"""The crawl's outcome from its stats, by the rules written in docs/crawling.md (exit status)."""

from __future__ import annotations

from tianwang.outcome import FAILED, OK, outcome


def test_a_crawl_that_stored_pages_did_its_job() -> None:
    stats = {"finish_reason": "finished", "tianwang/storage/records": 3,
             "tianwang/dedup/duplicates": 2, "tianwang/filter/type": 4,
             "tianwang/filter/type_bytes": 999, "robotstxt/forbidden": 1,
             "tianwang/error/timeout": 2, "tianwang/error/refused": 5,
             "downloader/exception_type_count/twisted.internet.error.TimeoutError": 2}
    result = outcome(stats, storing=True)
    assert result.status == OK
    assert result.line == ("crawl done (finished): stored 3, kept 2 already stored, "
                           "refused 5 (type 4, robots.txt 1), failed 7 (refused 5, timeout 2)")


def test_nothing_stored_is_a_failure_only_for_a_storing_crawl() -> None:
    stats = {"finish_reason": "finished",
             "downloader/exception_type_count/scrapy.exceptions.DownloadTimeoutError": 2}
    assert outcome(stats, storing=True).status == FAILED
    assert outcome(stats, storing=True).line == (
        "crawl FAILED (no page stored): stored 0, kept 0 already stored, refused 0, "
        "failed 2 (DownloadTimeoutError 2)")
    assert outcome(stats, storing=False).status == OK


def test_an_unchanged_revisit_counts_as_kept() -> None:
    stats = {"finish_reason": "closespider_pagecount", "tianwang/refresh/not_modified": 4}
    assert outcome(stats, storing=True).status == OK


def test_a_crawl_stopped_by_an_error_failed_whatever_it_stored() -> None:
    stats = {"finish_reason": "memusage_exceeded", "tianwang/storage/records": 10}
    result = outcome(stats, storing=True)
    assert result.status == FAILED
    assert result.line.startswith("crawl FAILED (stopped: memusage_exceeded): stored 10,")


def test_a_finished_job_resumed_says_so() -> None:
    stats = {"finish_reason": "finished", "tianwang/frontier/resumed_pending": 0}
    result = outcome(stats, storing=True)
    assert result.status == OK
    assert "had finished" in result.line and "JOBDIR" in result.line


def test_a_second_run_over_a_stored_tree_kept_its_pages_and_refusals_are_not_failures() -> None:
    stats = {"finish_reason": "finished", "tianwang/dedup/refetched": 39,
             "tianwang/filter/host_budget": 53,
             "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest": 53}
    result = outcome(stats, storing=True)
    assert result.status == OK
    assert result.line == ("crawl done (finished): stored 0, kept 39 already stored, "
                           "refused 53 (host_budget 53), failed 0")


def test_a_full_disk_is_a_failure_that_says_what_was_not_stored() -> None:
    stats = {"finish_reason": "disk_full", "tianwang/storage/records": 191,
             "tianwang/storage/not_stored": 48, "tianwang/storage/failed/disk_full": 1}
    result = outcome(stats, storing=True)
    assert result.status == FAILED
    assert result.line == ("crawl FAILED (stopped: disk_full): stored 191, kept 0 already "
                           "stored, refused 0, failed 0, not stored 48")


def test_requests_a_close_gave_up_are_said_and_are_no_failures() -> None:
    stats = {"finish_reason": "closespider_timeout", "tianwang/storage/records": 5,
             "tianwang/close/abandoned": 3,
             "downloader/exception_type_count/tianwang.httphandler.Abandoned": 3}
    result = outcome(stats, storing=True)
    assert result.status == OK
    assert result.line == ("crawl done (closespider_timeout): stored 5, kept 0 already "
                           "stored, refused 0, failed 0, given up in flight 3")
