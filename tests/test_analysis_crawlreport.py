"""The crawl report's sessions: which stats files are one run, which records it stored."""

from __future__ import annotations

from tianwang.analysis.crawlreport import CrawlReport, sessions, share_times


def run(start: str, finish: str, stored: int, **more: int) -> dict:
    return {"start_time": f"2024-05-01 {start}+00:00", "finish_time": f"2024-05-01 {finish}+00:00",
            "finish_reason": "finished", "tianwang/storage/records": stored,
            "tianwang/storage/hosts": 1, **more}


def test_processes_of_one_run_are_one_session_and_runs_after_it_others() -> None:
    found = sessions([
        run("10:00:00.5", "10:30:00", 5),  # TIANWANG_PROCESSES=2: two files, one run
        run("10:00:01", "10:29:00", 7, **{"tianwang/dedup/duplicates": 2}),
        run("12:00:00", "12:05:00", 0, **{"tianwang/dedup/refetched": 9}),  # resumed later
    ])
    assert [(s.processes, s.stored, s.kept_before) for s in found] == [(2, 12, 2), (1, 0, 9)]
    assert found[0].line == "crawl done (finished): stored 12, kept 2 already stored, " \
                            "refused 0, failed 0"
    assert found[1].line.startswith("crawl done (finished): stored 0, kept 9 already stored")


def test_records_go_to_their_session_in_order_when_the_counts_add_up() -> None:
    report = CrawlReport()
    report.sessions = sessions([run("10:00:00", "10:00:02", 2), run("10:00:02.5", "10:00:04", 1)])
    start = report.sessions[0].started
    # dated to the second: the first session's last record and the second's first share one
    report.times = [(start, 10), (start + 2, 20), (start + 2, 30)]
    share_times(report)
    assert [s.times for s in report.sessions] == [[(start, 10), (start + 2, 20)],
                                                  [(start + 2, 30)]]
