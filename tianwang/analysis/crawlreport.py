"""What a crawl report shows, read from a data directory (pure logic: no Scrapy).

From the records: pages and bytes over time, status codes, media types, pages per host, the
directory depth of the urls stored; from mirrors.tsv: the duplicates not stored; from the
crawl's stats files (stats/*.json, written at the end of each run by the StatsFile
extension): refusals and failures by reason and Scrapy's status counts of every response,
stored or not. A damaged record is counted and skipped.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import urlsplit

from tianwang.formats.http import parse_http_head
from tianwang.formats.mirrors import iter_mirrors
from tianwang.formats.record import RecordError
from tianwang.formats.store import iter_tree

STATS_DIR = "stats"
HOSTS = "tianwang/hosts"  # per host: responses, summed latency, refused (StatsFile)
REFUSALS = ("tianwang/filter/", "tianwang/partition/refused", "robotstxt/forbidden",
            "tianwang/robots/unavailable_dropped")
FAILURES = ("tianwang/error/",)
STATUS = "downloader/response_status_count/"


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
    duplicates: int = 0
    mirrored_hosts: Counter[str] = field(default_factory=Counter)
    host_responses: Counter[str] = field(default_factory=Counter)
    host_latency: Counter[str] = field(default_factory=Counter)  # seconds, summed
    host_refused: Counter[str] = field(default_factory=Counter)
    stats_files: int = 0  # one a crawl process (TIANWANG_PROCESSES=N leaves N a run)

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
    for stats in read_stats(data_dir):
        _add_stats(report, stats)
    report.times.sort()
    return report


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
        if not isinstance(value, int) or key.endswith("_bytes"):
            continue
        if key.startswith(STATUS):
            report.fetched_statuses[key[len(STATUS):]] += value
        for prefix in REFUSALS:
            if key.startswith(prefix):
                report.refusals[key[len(prefix):] or prefix.rsplit("/", 1)[-1]] += value
        for prefix in FAILURES:
            if key.startswith(prefix):
                report.failures[key[len(prefix):]] += value
