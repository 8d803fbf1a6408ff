"""What a crawl report shows, read from a data directory (pure logic: no Scrapy).

From the records: pages and bytes over time, status codes, media types, pages per host, the
directory depth of the urls stored; from mirrors.tsv: the other urls of a body stored; from
the crawl's stats files (stats/*.json, written at the end of each run by the StatsFile
extension): its sessions, refusals and failures by reason, the pages found already stored,
and Scrapy's status counts of every response, stored or not. A damaged record is counted
and skipped.

The counts by reason are named as the crawl's closing line names them (tianwang/outcome.py:
"robots.txt", "kept N already stored"), so the report and the log agree. A data directory
crawled more than once (a JOBDIR resumed, a second run into it) holds a session per run:
the stats files of one run's processes overlap in time, those of two runs do not.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import urlsplit

from tianwang.formats.http import parse_http_head
from tianwang.formats.mirrors import iter_mirrors
from tianwang.formats.record import RecordError
from tianwang.formats.store import iter_tree
from tianwang.outcome import STORING, failures, kept_before, outcome, refusals, summed

STATS_DIR = "stats"
HOSTS = "tianwang/hosts"  # per host: responses, summed latency, refused (StatsFile)
STATUS = "downloader/response_status_count/"


@dataclass
class Session:
    """One run of the crawl: its processes' stats, and the records stored while it ran."""

    started: float | None  # POSIX time, None when its stats do not say
    finished: float | None
    processes: int
    line: str  # the closing line the crawl's log gave (tianwang/outcome.py)
    stored: int
    kept_before: int
    times: list[tuple[float, int]] = field(default_factory=list)  # (crawl time, body bytes)


@dataclass
class CrawlReport:
    pages: int = 0
    body_bytes: int = 0
    damaged: int = 0
    times: list[tuple[float, int]] = field(default_factory=list)  # (crawl time, body bytes)
    statuses: Counter[str] = field(default_factory=Counter)  # of stored pages
    fetched_statuses: Counter[str] = field(default_factory=Counter)  # of every response
    media_types: Counter[str] = field(default_factory=Counter)
    hosts: Counter[str] = field(default_factory=Counter)
    host_bytes: Counter[str] = field(default_factory=Counter)
    depths: Counter[int] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    kept_before: Counter[str] = field(default_factory=Counter)  # how: duplicates, refetched...
    duplicates: int = 0  # lines of mirrors.tsv: another url of a body stored
    mirrored_hosts: Counter[str] = field(default_factory=Counter)
    host_responses: Counter[str] = field(default_factory=Counter)
    host_latency: Counter[str] = field(default_factory=Counter)  # seconds, summed
    host_refused: Counter[str] = field(default_factory=Counter)
    stats_files: int = 0  # one a crawl process (TIANWANG_PROCESSES=N leaves N a run)
    sessions: list[Session] = field(default_factory=list)

    def slowest_hosts(self, top: int) -> list[tuple[str, float]]:
        """(host, mean download latency in seconds), slowest first."""
        means = {host: self.host_latency[host] / n for host, n in self.host_responses.items()
                 if n}
        return sorted(means.items(), key=lambda kv: -kv[1])[:top]


def read_report(data_dir: str | os.PathLike[str]) -> CrawlReport:
    report = CrawlReport()

    def damaged(_error: RecordError) -> None:
        report.damaged += 1

    for _path, record in iter_tree(data_dir, on_damage=damaged):
        _add_record(report, record.url, record.date, record.data)
    for mirror in iter_mirrors(data_dir):
        report.duplicates += 1
        report.mirrored_hosts[urlsplit(mirror.duplicate).hostname or ""] += 1
    runs = read_stats(data_dir)
    for stats in runs:
        _add_stats(report, stats)
    report.times.sort()
    report.sessions = sessions(runs)
    share_times(report)
    return report


def sessions(runs: list[dict]) -> list[Session]:
    """The runs of a crawl, oldest first: stats files whose spans overlap are the processes
    of one run (TIANWANG_PROCESSES=N), the others runs of their own."""
    spans = sorted(((_time(stats.get("start_time")), _time(stats.get("finish_time")), index)
                    for index, stats in enumerate(runs)),
                   key=lambda span: (span[0] if span[0] is not None else float("-inf"), span[2]))
    groups: list[list[int]] = []
    end: float | None = None  # when the run of the last group ended, as far as known
    for start, finish, index in spans:
        if groups and start is not None and end is not None and start <= end:
            groups[-1].append(index)
            end = max(end, finish) if finish is not None else end
        else:
            groups.append([index])
            end = finish
    return [_session([runs[i] for i in group]) for group in groups]


def _session(runs: list[dict]) -> Session:
    total = summed(runs)
    starts = [t for t in (_time(one.get("start_time")) for one in runs) if t is not None]
    ends = [t for t in (_time(one.get("finish_time")) for one in runs) if t is not None]
    return Session(
        started=min(starts) if starts else None, finished=max(ends) if ends else None,
        processes=len(runs), line=outcome(total, any(STORING in one for one in runs)).line,
        stored=int(total.get("tianwang/storage/records", 0)),
        kept_before=sum(kept_before(total).values()))


def share_times(report: CrawlReport) -> None:
    """Each record's time to the session it was stored in. A record is dated to the second
    and sessions follow each other: when the sessions' stored counts add up to the records,
    the oldest records are the first session's, and so on; else (a run that wrote no stats)
    a record goes to the last session started by its second."""
    if not report.sessions:
        return
    if sum(session.stored for session in report.sessions) == len(report.times):
        at = 0
        for session in report.sessions:
            session.times = report.times[at:at + session.stored]
            at += session.stored
        return
    starts = [math.ceil(session.started) if session.started is not None else float("-inf")
              for session in report.sessions]
    for moment, size in report.times:
        at = max(bisect.bisect_right(starts, moment) - 1, 0)
        report.sessions[at].times.append((moment, size))


def _time(value: object) -> float | None:
    """A stats file's start_time or finish_time ("2024-05-01 12:00:00.123456+00:00")."""
    try:
        return datetime.fromisoformat(str(value)).timestamp() if value else None
    except ValueError:
        return None


def _add_record(report: CrawlReport, url: str, date: str | None, data: bytes) -> None:
    try:
        head, body_at = parse_http_head(data)
    except ValueError:
        report.damaged += 1
        return
    size = len(data) - body_at
    host = urlsplit(url).hostname or ""
    report.pages += 1
    report.body_bytes += size
    report.statuses[str(head.status)] += 1
    kind = (head.header("Content-Type") or "unknown").split(";")[0].strip().lower()
    report.media_types[kind or "unknown"] += 1
    report.hosts[host] += 1
    report.host_bytes[host] += size
    report.depths[url_depth(url)] += 1
    moment = _timestamp(date)
    if moment is not None:
        report.times.append((moment, size))


def url_depth(url: str) -> int:
    """Directories below the root: "/" and "/a.html" 0, "/a/" and "/a/b.html" 1."""
    path = urlsplit(url).path or "/"
    return max(path.count("/") - 1, 0)


def _timestamp(date: str | None) -> float | None:
    try:
        return parsedate_to_datetime(date).timestamp() if date else None
    except (TypeError, ValueError):
        return None


def stats_path(data_dir: str | os.PathLike[str], started: str, pid: int) -> Path:
    """Where a run's stats go: STATS_DIR/<start time>-<pid>.json."""
    return Path(data_dir, STATS_DIR, f"{started}-{pid}.json")


def stats_of_process(data_dir: str | os.PathLike[str], pid: int) -> dict | None:
    """The stats the process `pid` wrote into data_dir (its last run), or None."""
    for path in sorted(Path(data_dir, STATS_DIR).glob(f"*-{pid}.json"), reverse=True):
        stats = _read(path)
        if stats is not None:
            return stats
    return None


def read_stats(data_dir: str | os.PathLike[str]) -> list[dict]:
    """The stats of each run, oldest first; a file that does not read is skipped."""
    runs = [_read(path) for path in sorted(Path(data_dir, STATS_DIR).glob("*.json"))]
    return [stats for stats in runs if stats is not None]


def _read(path: Path) -> dict | None:
    try:
        stats = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stats if isinstance(stats, dict) else None


def _add_stats(report: CrawlReport, stats: dict) -> None:
    report.stats_files += 1
    hosts = stats.get(HOSTS)
    for host, counts in (hosts.items() if isinstance(hosts, dict) else ()):
        if isinstance(counts, dict):
            report.host_responses[host] += int(counts.get("responses") or 0)
            report.host_latency[host] += float(counts.get("latency") or 0.0)
            report.host_refused[host] += int(counts.get("refused") or 0)
    for key, value in stats.items():
        if isinstance(value, int) and key.startswith(STATUS):
            report.fetched_statuses[key[len(STATUS):]] += value
    report.refusals.update(refusals(stats))
    report.failures.update(failures(stats))
    report.kept_before.update(kept_before(stats))
