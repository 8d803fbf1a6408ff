"""Whether a crawl did its job, from its stats: the exit status and the closing summary line.

A crawl did its job when it ended by itself or was stopped on purpose (finished, a
CLOSESPIDER limit, Ctrl-C: a stopped job resumes), and, when it stores pages (the storage
pipeline runs) and made requests, it has pages to show for them: a page stored, or found
already stored (a duplicate, an unchanged revisit). A spider that stores nothing
(validate) is judged by how it ended alone; one with nothing due (a refresh run) did its
job. A crawl whose every request failed (dead seeds, refused https, all filtered) ends with
status 1, as does one stopped by an error. A resumed job with nothing left pending did its
job earlier: status 0, saying so. Refusals at start (a bad setting or seed file) end with
status 2 before any crawl, as Scrapy's usage errors do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OK, FAILED, REFUSED = 0, 1, 2
# finish_reason values of a crawl that ended as it should, or was stopped by its operator.
GOOD_ENDS = ("finished", "shutdown")
# A page stored, or found stored already (by its MD5, a 304, an unchanged revisit).
KEPT = ("tianwang/storage/records", "tianwang/dedup/duplicates", "tianwang/dedup/refetched",
        "tianwang/refresh/not_modified", "tianwang/changes/unchanged")
REFUSAL_PREFIXES = ("tianwang/filter/", "tianwang/partition/refused",
                    "tianwang/robots/unavailable_dropped")
# The failure middleware's reasons; Scrapy's exception counts only in a crawl without it
# (they count the same failures).
FAILURE_PREFIXES = ("tianwang/error/",)
SCRAPY_FAILURES = ("downloader/exception_type_count/",)
# Put by the storage pipeline as the spider closes: the crawl stored pages, or meant to.
STORING = "tianwang/storage/hosts"


@dataclass(frozen=True)
class Outcome:
    status: int
    line: str


def outcome(stats: Mapping[str, Any], storing: bool) -> Outcome:
    """The outcome of a crawl with these final stats; `storing`: the storage pipeline ran."""
    reason = str(stats.get("finish_reason") or "unknown")
    stored = _count(stats, "tianwang/storage/records")
    kept = sum(_count(stats, key) for key in KEPT)
    refused, failed = refusals(stats), failures(stats)
    summary = (f"stored {stored:,}, kept {kept - stored:,} already stored, "
               f"refused {_total(refused)}, failed {_total(failed)}")
    not_stored = _count(stats, "tianwang/storage/not_stored")
    if not_stored:
        summary += f", not stored {not_stored:,}"
    abandoned = _count(stats, "tianwang/close/abandoned")
    if abandoned:
        summary += f", given up in flight {abandoned:,}"
    if not (reason in GOOD_ENDS or reason.startswith("closespider_")):
        return Outcome(FAILED, f"crawl FAILED (stopped: {reason}): {summary}")
    tried = _count(stats, "downloader/request_count") or refused or failed
    if not kept and stats.get("tianwang/redis/job_had_finished"):
        return Outcome(OK, "nothing to do: this Redis job had finished; give a new "
                           "TIANWANG_REDIS_JOB or reset it (tianwang feed --reset) to crawl "
                           "afresh")
    if not kept and not tried:
        if stats.get("tianwang/frontier/resumed_pending") == 0:
            return Outcome(OK, "nothing to do: this job (JOBDIR) had finished; give a new "
                               "JOBDIR or remove it to crawl afresh")
        return Outcome(OK, f"nothing to do ({reason}): no request was due")
    if kept or not storing:
        return Outcome(OK, f"crawl done ({reason}): {summary}")
    return Outcome(FAILED, f"crawl FAILED (no page stored): {summary}")


def refusals(stats: Mapping[str, Any]) -> dict[str, int]:
    """Requests refused, by the reason the closing line gives ("robots.txt", "spam", ...)."""
    refused = _reasons(stats, REFUSAL_PREFIXES)
    if "robotstxt/forbidden" in stats:
        refused["robots.txt"] = _count(stats, "robotstxt/forbidden")
    return refused


def failures(stats: Mapping[str, Any]) -> dict[str, int]:
    """Requests failed, by the reason the closing line gives (an exception's class name)."""
    failed = _reasons(stats, FAILURE_PREFIXES) or _reasons(stats, SCRAPY_FAILURES)
    failed.pop("IgnoreRequest", None)  # a middleware's refusal, counted as refused
    failed.pop("Abandoned", None)  # given up by a close: pending again, said apart
    return failed


def kept_before(stats: Mapping[str, Any]) -> dict[str, int]:
    """Pages found stored already, by how ("kept N already stored" in the closing line):
    the stats keys of KEPT but the pages stored now."""
    return {key.rsplit("/", 1)[-1]: _count(stats, key) for key in KEPT[1:]
            if _count(stats, key)}


def summed(stats: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The stats of processes that ran as one crawl: counts summed, and the worst way a
    process ended as the finish_reason (the first that ended badly, else the first that did
    not finish)."""
    total: dict[str, Any] = {}
    for one in stats:
        for key, value in one.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    reasons = [str(one.get("finish_reason")) for one in stats]
    bad = [reason for reason in reasons if reason not in GOOD_ENDS
           and not reason.startswith("closespider_")]
    unfinished = [reason for reason in reasons if reason != "finished"]
    total["finish_reason"] = (bad or unfinished or reasons)[0]
    return total


def combined(stats: list[Mapping[str, Any]]) -> Outcome:
    """The outcome of a crawl run as processes: their stats summed; pages asked for when
    the storage pipeline ran (it leaves its figures in the stats)."""
    return outcome(summed(stats), storing=any(STORING in one for one in stats))


def _count(stats: Mapping[str, Any], key: str) -> int:
    value = stats.get(key)
    return int(value) if isinstance(value, (int, float)) else 0


def _reasons(stats: Mapping[str, Any], prefixes: tuple[str, ...]) -> dict[str, int]:
    """Counts by reason: the key's last part after the prefix (an exception's class name)."""
    counts: dict[str, int] = {}
    for key, value in stats.items():
        if key.endswith("_bytes") or not isinstance(value, int):
            continue
        for prefix in prefixes:
            if key.startswith(prefix):
                name = key[len(prefix):].rsplit(".", 1)[-1] or prefix.strip("/").rsplit("/", 1)[-1]
                counts[name] = counts.get(name, 0) + value
    return counts


def _total(counts: dict[str, int]) -> str:
    """"12 (robots.txt 10, type 2)": the total, then each reason, largest first."""
    total = sum(counts.values())
    if not total:
        return "0"
    parts = ", ".join(f"{name} {n:,}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"{total:,} ({parts})"
