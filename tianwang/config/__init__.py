"""Reading TIANWANG_* settings with errors that name the setting.

Scrapy's own getters raise a bare ValueError ("invalid literal for int()"); a crawl that
stops at start should say which setting is wrong and what it expects.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from tianwang.errors import StartupError


class SettingError(StartupError):
    """A setting whose value makes no sense; raised at start, before any request."""

    def __init__(self, name: str, value: Any, expected: str) -> None:
        super().__init__(f"setting {name}={value!r} is invalid: expected {expected}")
        self.name = name


def get_int(
    settings: Any, name: str, minimum: int | None = None, maximum: int | None = None
) -> int:
    value = settings.get(name)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SettingError(name, value, "a whole number") from None
    if isinstance(value, float) and value != number:
        raise SettingError(name, value, "a whole number")
    if minimum is not None and number < minimum:
        raise SettingError(name, value, f"a whole number >= {minimum}")
    if maximum is not None and number > maximum:
        raise SettingError(name, value, f"a whole number <= {maximum}")
    return number


def get_bool(settings: Any, name: str) -> bool:
    try:
        return settings.getbool(name)
    except ValueError:
        raise SettingError(name, settings.get(name), "true or false (1/0)") from None


def get_nonempty_str(settings: Any, name: str) -> str:
    value = settings.get(name)
    if not isinstance(value, str) or not value.strip():
        raise SettingError(name, value, "a non-empty string")
    return value


def get_str_list(settings: Any, name: str) -> list[str]:
    try:
        values = settings.getlist(name)
    except ValueError:
        raise SettingError(name, settings.get(name), "a list of strings") from None
    if not values or not all(isinstance(v, str) and v.strip() for v in values):
        raise SettingError(name, settings.get(name), "a non-empty list of strings")
    return [v.strip().lower() for v in values]


# A media type as Content-Type gives it (RFC 9110 token "/" token), without parameters.
_MEDIA_TYPE = re.compile(r"[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+\Z")


def get_media_types(settings: Any, name: str) -> list[str]:
    """Media types like text/html: a value that no Content-Type can equal ("abc", "html")
    would store nothing, without a word."""
    types = get_str_list(settings, name)
    wrong = [value for value in types if not _MEDIA_TYPE.match(value)]
    if wrong:
        raise SettingError(name, settings.get(name),
                           f"media types like text/html, not {', '.join(map(repr, wrong))}")
    return types


def get_proxy_url(settings: Any, name: str) -> str:
    """An http:// proxy URL, or "" for none."""
    value = settings.get(name) or ""
    if not value:
        return ""
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingError(name, value, "an http://host:port proxy URL or empty")
    return value


def get_seconds(settings: Any, name: str, minimum: float = 0,
                maximum: float | None = None) -> float:
    """A number of seconds within [minimum, maximum]; SettingError otherwise."""
    value = settings.get(name)
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise SettingError(name, value, "a number of seconds") from None
    if not minimum <= seconds <= (maximum if maximum is not None else float("inf")):
        bounds = f"from {minimum:g} to {maximum:g}" if maximum is not None else f">= {minimum:g}"
        raise SettingError(name, value, f"a number of seconds {bounds}")
    return seconds


def get_share(settings: Any, name: str) -> float:
    """A share, a number from 0 to 1."""
    value = settings.get(name)
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise SettingError(name, value, "a number from 0 to 1") from None
    if not 0 <= share <= 1:
        raise SettingError(name, value, "a number from 0 to 1")
    return share
