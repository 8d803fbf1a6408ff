"""The distributed settings, read and checked in one place (defaults in default_settings.py;
what needs the server to check, the mode and the lease against a failover, is checked by
tianwang/distributed/connection.py's check_redis as the scheduler opens).

Only TIANWANG_REDIS_URL switches the mode, and only this module reads it (is_shared for the
add-on's choice of scheduler and the spider, redis_url for the url itself); the other
settings shape the shared crawl. The frontier's own settings (weights, picks, Bloom size)
are FrontierConfig's, read in tianwang/config/frontier.py.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from tianwang.config import SettingError, get_bool, get_int


@dataclass(frozen=True)
class RedisConfig:
    url: str
    job: str  # the crawl's name in Redis: nodes with the same url and job share one crawl
    node: str  # this node's name, unique among the job's nodes
    buckets: int
    lease_seconds: int
    batch: int  # requests taken from Redis in one call
    quorum: int  # nodes in the bucket table before any node takes a request
    cluster: bool  # url is a node of a Redis Cluster
    window: int  # requests of a node's queue kept unpacked in Redis; 0: no bound
    outage_seconds: int  # how long a node waits for a Redis gone before it stops; 0: no bound
    shards: int  # the job's keys split over this many hash tags; 0: one per cluster master

    @classmethod
    def from_settings(cls, settings: Any, spider_name: str = "") -> RedisConfig:
        config = cls(
            url=redis_url(settings),
            job=_name(settings, "TIANWANG_REDIS_JOB") or spider_name or "crawl",
            node=_name(settings, "TIANWANG_NODE_NAME") or f"{socket.gethostname()}-{os.getpid()}",
            buckets=get_int(settings, "TIANWANG_BUCKETS", minimum=1, maximum=1 << 20),
            lease_seconds=get_int(settings, "TIANWANG_LEASE_SECONDS", minimum=1),
            batch=get_int(settings, "TIANWANG_REDIS_BATCH", minimum=1),
            quorum=get_int(settings, "TIANWANG_REDIS_QUORUM", minimum=1, maximum=1 << 16),
            cluster=get_bool(settings, "TIANWANG_REDIS_CLUSTER"),
            window=get_int(settings, "TIANWANG_REDIS_WINDOW", minimum=0),
            outage_seconds=get_int(settings, "TIANWANG_REDIS_OUTAGE_SECONDS", minimum=0),
            shards=get_int(settings, "TIANWANG_REDIS_SHARDS", minimum=0, maximum=1024),
        )
        if config.shards > config.buckets:  # a shard is a group of buckets
            raise SettingError("TIANWANG_REDIS_SHARDS", config.shards,
                               f"at most TIANWANG_BUCKETS ({config.buckets}), or 0")
        return config


def is_shared(settings: Any) -> bool:
    """Whether the crawl is shared through Redis (a url given; redis_url checks it)."""
    return bool(settings.get("TIANWANG_REDIS_URL"))


def redis_url(settings: Any) -> str:
    """The Redis url with its password (for a client only: show safe_url of it), or "" for a
    local crawl; SettingError for one that is no Redis url."""
    value = settings.get("TIANWANG_REDIS_URL") or ""
    if not value:
        return ""
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("redis", "rediss", "unix") or not (
        parts.hostname or parts.path
    ):
        shown = safe_url(value) if isinstance(value, str) else value
        raise SettingError("TIANWANG_REDIS_URL", shown, "a redis://host:port/db url, or empty")
    return with_password(value)


# A Redis password is kept out of what a crawl shows: the settings (Scrapy logs them), its
# log lines and errors, its child processes' command lines (`ps` shows them to every user).
# It lives in this environment variable, which child processes inherit and only their user
# may read (/proc/<pid>/environ); the add-on moves a url's password there (hide_password).
PASSWORD_ENV = "TIANWANG_REDIS_PASSWORD"


def hide_password(settings: Any) -> None:
    """Move the password of TIANWANG_REDIS_URL into PASSWORD_ENV, the url left without it."""
    value = settings.get("TIANWANG_REDIS_URL")
    if not isinstance(value, str) or not value:
        return
    try:
        password = urlsplit(value).password
    except ValueError:
        return  # no url: redis_url says so
    if password:
        bare, os.environ[PASSWORD_ENV] = split_password(value)
        settings.set("TIANWANG_REDIS_URL", bare,
                     priority=settings.getpriority("TIANWANG_REDIS_URL") or "project")


def with_password(url: str) -> str:
    """The url with the password of PASSWORD_ENV, if it has none of its own."""
    password = os.environ.get(PASSWORD_ENV)
    parts = urlsplit(url)
    if not password or parts.password or not parts.hostname:
        return url
    user = quote(unquote(parts.username or ""), safe="")
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))


def safe_url(url: str) -> str:
    """The url to show: its password, if any, as ***."""
    try:
        parts = urlsplit(url)
        if not parts.password:
            return url
    except ValueError:
        return url.split("@")[-1] if "@" in url else url
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{parts.netloc.rsplit('@', 1)[-1]}"))


def split_password(url: str) -> tuple[str, str | None]:
    """(the url without its password, the password or None)."""
    password = urlsplit(url).password
    return (_without_password(url), unquote(password)) if password else (url, None)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=user + parts.netloc.rsplit("@", 1)[-1]))


def _name(settings: Any, name: str) -> str:
    value = settings.get(name) or ""
    if not isinstance(value, str) or any(c in value for c in ": \t\n"):
        raise SettingError(name, value, "a name without spaces or ':', or empty")
    return value
