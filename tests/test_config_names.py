"""Setting names that are no setting: which are refused, with what hint, and which are left
to other components (the crawl's own refusal is in tests/test_commands_crawl.py)."""

from __future__ import annotations

import pytest

from tianwang.addon import known_settings
from tianwang.config.names import UnknownSettingError, check_names, closest, typos

KNOWN = known_settings()


def _refusal(*names: str, users: tuple[str, ...] | None = None, extra: tuple[str, ...] = ()):
    given = set(names) | {"DOWNLOAD_DELAY", "TIANWANG_MAX_LEVELS"}
    try:
        check_names(given, KNOWN, names if users is None else users, extra)
    except UnknownSettingError as error:
        return str(error)
    return None


@pytest.mark.parametrize(("name", "message"), [
    ("DOWNLOAD_DELAYY", "unknown setting DOWNLOAD_DELAYY: did you mean DOWNLOAD_DELAY?"),
    ("DOWNLAOD_DELAY", "unknown setting DOWNLAOD_DELAY: did you mean DOWNLOAD_DELAY?"),
    ("CONCURENT_REQUESTS", "unknown setting CONCURENT_REQUESTS: did you mean "
                           "CONCURRENT_REQUESTS?"),
    ("ITEM_PIPELINE", "unknown setting ITEM_PIPELINE: did you mean ITEM_PIPELINES?"),
    ("JOBDIRS", "unknown setting JOBDIRS: did you mean JOBDIR?"),
    ("SCHEDULER_PERSISTS", "unknown setting SCHEDULER_PERSISTS: did you mean SCHEDULER_PERSIST?"),
    ("tianwang_max_levels", "unknown setting tianwang_max_levels: did you mean "
                            "TIANWANG_MAX_LEVELS? (setting names are upper case)"),
    ("download_delay", "unknown setting download_delay: did you mean DOWNLOAD_DELAY? "
                       "(setting names are upper case)"),
    ("tianwang_max_level", "unknown setting tianwang_max_level: did you mean "
                           "TIANWANG_MAX_LEVELS?"),
    ("TIANWANG_MAX_LEVEL", "unknown setting TIANWANG_MAX_LEVEL: did you mean "
                           "TIANWANG_MAX_LEVELS?"),
])
def test_a_misspelt_or_lower_case_name_is_refused_naming_the_setting(name: str,
                                                                      message: str) -> None:
    refusal = _refusal(name)
    assert refusal is not None and refusal.startswith(message), refusal


@pytest.mark.parametrize("name", [
    # Other add-ons' own settings, far from every known name.
    "ZYTE_API_KEY", "PLAYWRIGHT_BROWSER_TYPE", "SPLASH_URL", "ROTATING_PROXY_LIST",
    "MONGO_URI", "SPIDERMON_ENABLED", "FAKEUSERAGENT_PROVIDERS",
    # Settings of Scrapy's media pipelines and of scrapy-redis, absent from default_settings.
    "IMAGES_STORE", "FILES_URLS_FIELD", "REDIS_URL", "SCHEDULER_PERSIST", "DUPEFILTER_KEY",
    # Lower-case names that are no setting's.
    "my_own_flag",
])
def test_another_components_setting_is_left_alone(name: str) -> None:
    assert _refusal(name) is None


def test_a_look_alike_name_is_accepted_once_declared() -> None:
    assert "did you mean USER_AGENT?" in _refusal("USER_AGENTS")
    assert "list it in TIANWANG_EXTRA_SETTINGS" in _refusal("USER_AGENTS")
    assert _refusal("USER_AGENTS", extra=("USER_AGENTS",)) is None


def test_names_set_by_code_are_checked_only_under_the_tianwang_prefix() -> None:
    # Another add-on sets its own names (not the user's): only TIANWANG_* ones are checked.
    assert _refusal("DOWNLOAD_DELAYY", users=()) is None
    assert _refusal("TIANWANG_MAX_LEVEL", users=()) is not None


def test_the_first_name_in_order_is_named() -> None:
    assert _refusal("ROBOTSTXT_OBEYY", "DOWNLOAD_DELAYY").startswith(
        "unknown setting DOWNLOAD_DELAYY")


def test_typos_count_insertions_deletions_replacements_and_swaps() -> None:
    assert typos("DOWNLOAD_DELAY", "DOWNLOAD_DELAY") == 0
    assert typos("DOWNLOAD_DELAYY", "DOWNLOAD_DELAY") == 1
    assert typos("DOWNLAOD_DELAY", "DOWNLOAD_DELAY") == 1
    assert typos("DOWNLOAD_DELEY", "DOWNLOAD_DELAY") == 1
    assert typos("DONWLOAD_DELEY", "DOWNLOAD_DELAY") == 2
    assert typos("", "ABC") == 3


def test_a_short_name_is_close_at_one_typo_a_long_one_at_two() -> None:
    assert closest("LOG_FLIE", KNOWN) == "LOG_FILE"
    assert closest("LOG_FLEE", KNOWN) is None  # two typos in 8 characters: too far to guess
    assert closest("DONWLOAD_DELEY", KNOWN) == "DOWNLOAD_DELAY"
