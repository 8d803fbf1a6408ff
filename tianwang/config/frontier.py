"""The frontier's settings, read and checked in one place (defaults in default_settings.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from tianwang.config import SettingError, get_int, get_seconds, get_str_list
from tianwang.order import MAX_FIRST, MAX_TURNS
from tianwang.urls import url_weight

# A host's first requests that go before the weights, at most (TIANWANG_HOST_FIRST): the
# shared frontier's score has 4 bits for their turn (tianwang/order.py).
MAX_HOST_FIRST = MAX_FIRST


@dataclass(frozen=True, slots=True)
class HostRules:
    """What a host's politeness is made of, as the settings give it (politeness.py)."""

    concurrency: int = 1  # requests at once (CONCURRENT_REQUESTS_PER_DOMAIN)
    delay: float = 0.0  # seconds between the starts of two requests (DOWNLOAD_DELAY)
    jitter: float = 0.0  # the delay drawn from delay * (1 +- jitter), as Scrapy's slots do


@dataclass(frozen=True, slots=True)
class Limits:
    """What the frontier may hold (frontier/limits.py); 0 = no limit."""

    pending: int = 0  # TIANWANG_MAX_PENDING: pending requests in all
    host_pending: int = 0  # TIANWANG_MAX_HOST_PENDING: pending requests of one host
    domain_hosts: int = 0  # TIANWANG_MAX_DOMAIN_HOSTS: hosts of one registered domain
    domain_pages: int = 0  # TIANWANG_MAX_DOMAIN_PAGES: requests of one, over the crawl

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        return cls(
            pending=get_int(settings, "TIANWANG_MAX_PENDING", minimum=0),
            host_pending=get_int(settings, "TIANWANG_MAX_HOST_PENDING", minimum=0),
            domain_hosts=get_int(settings, "TIANWANG_MAX_DOMAIN_HOSTS", minimum=0),
            domain_pages=get_int(settings, "TIANWANG_MAX_DOMAIN_PAGES", minimum=0),
        )


@dataclass(frozen=True)
class FrontierConfig:
    sorted_picks: int
    random_picks: int
    host_picks: int  # the slots' best requests in turn (queue.py), after the sorted picks
    seed: int | None
    expected_urls: int
    error_rate: float
    log_compact_bytes: int  # under JOBDIR: records done the request log holds at least
    initial_weight: int
    penalty_words: tuple[str, ...]
    word_penalty: int
    index_pages: frozenset[str]
    host_turns: int
    host_first: int  # a host's first requests, before the weights (queue.py)
    seed_host_first: int  # the same for a seed's host
    levels: bool  # a level limit is set: crawl each host level by level (levels.py)
    link_weight: float = 0.0  # weight per doubling of a url's link cash; 0 = depth only
    link_other_host: float = 1.0  # shares a link to another host carries
    link_relative: float = 0.0  # how much of the first link's share the bonus discounts
    limits: Limits = Limits()  # what the frontier may hold per host, domain and in all
    # Each host's concurrency, delay and jitter (politeness.py), and DOWNLOAD_SLOTS' own.
    host_rules: HostRules = HostRules()
    download_slots: dict[str, dict[str, Any]] | None = None

    @property
    def links(self) -> bool:
        """Link relations count in the weight (frontier/linkscore.py)."""
        return self.link_weight > 0

    @classmethod
    def from_settings(cls, settings: Any) -> FrontierConfig:
        """The config, or SettingError naming the first setting that makes no sense."""
        if settings.getint("CONCURRENT_REQUESTS_PER_IP"):
            raise SettingError(
                "CONCURRENT_REQUESTS_PER_IP",
                settings.get("CONCURRENT_REQUESTS_PER_IP"),
                "0 (the frontier's host awareness works per domain slot)",
            )
        if settings.getbool("AUTOTHROTTLE_ENABLED"):
            raise SettingError(
                "AUTOTHROTTLE_ENABLED", settings.get("AUTOTHROTTLE_ENABLED"),
                "False (the frontier keeps each host's delay: DOWNLOAD_DELAY, Crawl-delay, "
                "Retry-After; AutoThrottle's delays in the downloader would hold its slots)")
        host_picks = get_int(settings, "TIANWANG_HOST_PICKS", minimum=0)
        return cls(
            sorted_picks=get_int(settings, "TIANWANG_SORTED_PICKS", minimum=1),
            random_picks=get_int(settings, "TIANWANG_RANDOM_PICKS",
                                 minimum=0 if host_picks else 1),
            host_picks=host_picks,
            seed=_optional_int(settings, "TIANWANG_FRONTIER_SEED"),
            expected_urls=get_int(settings, "TIANWANG_EXPECTED_URLS", minimum=1),
            error_rate=_error_rate(settings, "TIANWANG_BLOOM_ERROR_RATE"),
            log_compact_bytes=get_int(settings, "TIANWANG_LOG_COMPACT_MB", minimum=0) << 20,
            initial_weight=get_int(settings, "TIANWANG_INITIAL_WEIGHT", minimum=0),
            penalty_words=_penalty_words(settings, "TIANWANG_PENALTY_WORDS"),
            word_penalty=get_int(settings, "TIANWANG_PENALTY_WORD_WEIGHT", minimum=0),
            index_pages=_index_pages(settings, "TIANWANG_INDEX_PAGES"),
            host_turns=get_int(settings, "TIANWANG_HOST_TURNS", minimum=0, maximum=MAX_TURNS),
            host_first=get_int(settings, "TIANWANG_HOST_FIRST", minimum=0, maximum=MAX_HOST_FIRST),
            seed_host_first=get_int(settings, "TIANWANG_SEED_HOST_FIRST", minimum=0,
                                    maximum=MAX_HOST_FIRST),
            levels=get_int(settings, "TIANWANG_MAX_LEVELS", minimum=0) > 0,
            link_weight=_number(settings, "TIANWANG_LINK_WEIGHT", minimum=0, maximum=16),
            link_other_host=_number(settings, "TIANWANG_LINK_OTHER_HOST", minimum=1,
                                    maximum=1e6),
            link_relative=_number(settings, "TIANWANG_LINK_RELATIVE", minimum=0, maximum=1),
            limits=Limits.from_settings(settings),
            host_rules=HostRules(
                concurrency=get_int(settings, "CONCURRENT_REQUESTS_PER_DOMAIN", minimum=1),
                delay=get_seconds(settings, "DOWNLOAD_DELAY", minimum=0),
                jitter=_jitter(settings)),
            download_slots=settings.getdict("DOWNLOAD_SLOTS"),
        )

    def weigher(self) -> Callable[[str], int]:
        """url -> weight with these settings (shared by the local and the Redis frontier)."""
        return partial(
            url_weight,
            initial=self.initial_weight,
            words=self.penalty_words,
            word_penalty=self.word_penalty,
            index_pages=self.index_pages,
        )


def _jitter(settings: Any) -> float:
    """DOWNLOAD_DELAY_JITTER, or the deprecated RANDOMIZE_DOWNLOAD_DELAY when set above it
    (as Scrapy's downloader reads them)."""
    randomize = settings.getpriority("RANDOMIZE_DOWNLOAD_DELAY") or 0
    if randomize > (settings.getpriority("DOWNLOAD_DELAY_JITTER") or 0):
        return 0.5 if settings.getbool("RANDOMIZE_DOWNLOAD_DELAY") else 0.0
    return _number(settings, "DOWNLOAD_DELAY_JITTER", minimum=0, maximum=1)


def _penalty_words(settings: Any, name: str) -> tuple[str, ...]:
    """The words, or () for none (get_str_list refuses an empty list)."""
    return tuple(get_str_list(settings, name)) if settings.get(name) else ()


def _index_pages(settings: Any, name: str) -> frozenset[str]:
    """Lowercase file names, or none ([] or ""): a name holding "/" or "?" is no file name."""
    names = get_str_list(settings, name) if settings.get(name) else []
    if any("/" in page or "?" in page for page in names):
        raise SettingError(name, settings.get(name), 'file names like "index.html", or []')
    return frozenset(names)


def _optional_int(settings: Any, name: str) -> int | None:
    return None if settings.get(name) in (None, "") else get_int(settings, name)


def _error_rate(settings: Any, name: str) -> float:
    value = settings.get(name)
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = math.nan
    if not 0 < rate < 1:
        raise SettingError(name, value, "a number between 0 and 1, e.g. 1e-6")
    return rate


def _number(settings: Any, name: str, minimum: float, maximum: float) -> float:
    value = settings.get(name)
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not minimum <= number <= maximum:  # NaN fails too
        raise SettingError(name, value, f"a number from {minimum:g} to {maximum:g}")
    return number
