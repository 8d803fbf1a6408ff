"""The Tianwang add-on: the whole stack in any Scrapy project, and the vertical it crawls.

    ADDONS = {"tianwang.addon.Tianwang": 0}

It sets, at add-on priority (so a project's own settings and the command line beat it), the
frontier scheduler, the host and content filters, the dedup, storage and link graph
pipelines, the settings check, the polite defaults and every TIANWANG_* default, all taken
from tianwang/default_settings.py. A component the project already lists (even as None, to
turn it off) is left as the project has it; a component list given on the command line (`-s
ITEM_PIPELINES={}`) or by the spider is taken as the whole list. BOT_NAME, SPIDER_MODULES,
USER_AGENT and LOG_LEVEL stay the project's.

The settings say what runs: SCHEDULER is the local frontier, or the Redis one when
TIANWANG_REDIS_URL is set (unless the project chose its own SCHEDULER); the MD5 dedup is the
local index, or the Redis one in a shared crawl.

Then it applies TIANWANG_VERTICAL, also at add-on priority: a vertical's value replaces a
setting still at its tianwang default, and loses to one the project, the spider or the
command line chose.

Both run before the crawler is built (update_pre_crawler_settings) as well as in
update_settings: Scrapy creates the spider, which reads its settings in from_crawler,
before it calls update_settings.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.settings import default_settings as scrapy_defaults
from scrapy.utils.misc import load_object

import tianwang.default_settings as defaults
from tianwang.config import SettingError
from tianwang.config.names import EXTRA, OTHER_SETTINGS, check_names
from tianwang.config.shared_crawl import hide_password, is_shared
from tianwang.verticals import VERTICALS

logger = logging.getLogger(__name__)

ADDON = SETTINGS_PRIORITIES["addon"]
PROJECT = SETTINGS_PRIORITIES["project"]
COMPONENT_DICTS = frozenset(
    {"EXTENSIONS", "DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "ITEM_PIPELINES"}
)
PRIORITY_NAMES = {priority: name for name, priority in SETTINGS_PRIORITIES.items()}
REDIS_SCHEDULER = "tianwang.distributed.redisscheduler.RedisFrontierScheduler"
LOCAL_DEDUP = "tianwang.pipelines.dedup.MD5DedupPipeline"
REDIS_DEDUP = "tianwang.distributed.redisdedup.RedisMD5DedupPipeline"


def stack_defaults() -> dict[str, Any]:
    """What the add-on sets: every setting of tianwang/default_settings.py."""
    return {name: getattr(defaults, name) for name in dir(defaults) if name.isupper()}


class Tianwang:
    """Scrapy add-on: the tianwang stack, and the vertical named by TIANWANG_VERTICAL."""

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        try:
            apply(settings)
        except SettingError:
            # Raised again by update_settings, inside the crawl, where the crawl command
            # reports it as one line (here, before any command code runs, it would be a
            # traceback). The stack's defaults are in place by then.
            pass

    def update_settings(self, settings: BaseSettings) -> None:
        applied, kept = apply(settings)
        name = settings.get("TIANWANG_VERTICAL")
        if name:
            logger.info("vertical %s: set %s", name, ", ".join(applied) or "nothing")
        if kept:
            logger.info("vertical %s: kept %s", name, ", ".join(kept))


def apply(settings: BaseSettings) -> tuple[list[str], list[str]]:
    """Apply the stack, then the vertical; the vertical's settings set and those kept. A
    Redis url's password leaves the settings first: Scrapy logs them."""
    hide_password(settings)
    apply_stack(settings)
    applied_kept = apply_vertical(settings)
    users = [name for name in settings if (settings.getpriority(name) or 0) > ADDON]
    check_names(settings, known_settings(), users, _extra_names(settings))
    return applied_kept


def known_settings() -> set[str]:
    """Every setting name a crawl's components are known to read: Scrapy's own (its
    default_settings), the stack's, and those of tianwang.config.names.OTHER_SETTINGS."""
    scrapy_names = {name for name in dir(scrapy_defaults) if name.isupper()}
    return scrapy_names | set(stack_defaults()) | OTHER_SETTINGS


def _extra_names(settings: BaseSettings) -> list[str]:
    try:
        names = settings.getlist(EXTRA)
    except ValueError:
        names = None
    if names is None or not all(isinstance(name, str) for name in names):
        raise SettingError(EXTRA, settings.get(EXTRA), "a list of setting names")
    return [name.strip() for name in names]


def apply_stack(settings: BaseSettings) -> None:
    for name, value in stack_defaults().items():
        if name in COMPONENT_DICTS:
            if (settings.getpriority(name) or 0) > PROJECT:
                continue  # given on the command line (or by the spider): the whole list
            for path, order in value.items():
                settings.setdefault_in_component_priority_dict(name, load_object(path), order)
        elif (settings.getpriority(name) or 0) < ADDON:
            settings.set(name, value, "addon")
    if is_shared(settings):
        if (settings.getpriority("SCHEDULER") or 0) <= ADDON:
            settings.set("SCHEDULER", REDIS_SCHEDULER, "addon")
        _share_dedup(settings)


def _share_dedup(settings: BaseSettings) -> None:
    """The nodes of a shared crawl dedup through Redis: the local index knows one tree."""
    local = load_object(LOCAL_DEDUP)
    enabled = settings.getdict("ITEM_PIPELINES")
    if any(load_object(path) is local and order is not None for path, order in enabled.items()):
        settings.replace_in_component_priority_dict("ITEM_PIPELINES", local,
                                                    load_object(REDIS_DEDUP))


def known_verticals(settings: BaseSettings) -> dict[str, dict[str, Any]]:
    """The built-in verticals and the project's own (TIANWANG_VERTICALS), by name."""
    try:
        extra = settings.getdict("TIANWANG_VERTICALS")
    except ValueError:
        raise SettingError(
            "TIANWANG_VERTICALS", settings.get("TIANWANG_VERTICALS"), '{"name": {"SETTING": value}}'
        ) from None
    profiles = {**VERTICALS, **{name: _plain(profile) for name, profile in extra.items()}}
    for name, profile in profiles.items():
        if not isinstance(profile, dict):
            raise SettingError("TIANWANG_VERTICALS", extra, f"a dict of settings for {name!r}")
    return profiles


def vertical_profile(settings: BaseSettings, name: str) -> dict[str, Any]:
    """The settings of vertical `name`; SettingError listing the known ones if none."""
    profiles = known_verticals(settings)
    if name not in profiles:
        raise SettingError("TIANWANG_VERTICAL", name, f"one of: {', '.join(sorted(profiles))}")
    profile = profiles[name]
    for key in profile:
        # A misspelt name would be set, read by nothing, and the vertical silently not work.
        if not isinstance(key, str) or key not in settings or key.startswith("TIANWANG_VERTICAL"):
            raise SettingError(
                "TIANWANG_VERTICAL", name, f"a vertical of known settings, not {key!r}"
            )
    return profile


def apply_vertical(settings: BaseSettings) -> tuple[list[str], list[str]]:
    name = settings.get("TIANWANG_VERTICAL") or ""
    if not name:
        return [], []
    applied, kept = [], []
    for key, value in vertical_profile(settings, str(name)).items():
        if _yields_to_vertical(settings, key):
            settings.set(key, value, "addon")
            applied.append(key)
        else:
            priority = settings.getpriority(key)
            kept.append(f"{key}={settings[key]!r} ({PRIORITY_NAMES.get(priority, priority)})")
    return applied, kept


def _yields_to_vertical(settings: BaseSettings, key: str) -> bool:
    """A setting still at a default (Scrapy's or the add-on's) takes the vertical's value."""
    return (settings.getpriority(key) or 0) <= ADDON


def _plain(value: Any) -> Any:
    """A settings value as it was written: BaseSettings (how Scrapy holds dicts) to dict."""
    if isinstance(value, BaseSettings):
        return {key: _plain(value[key]) for key in value}
    return value
