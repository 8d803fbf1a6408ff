"""Refusing setting names that are no setting: a misspelt or lower-case name.

Scrapy keeps any name it is given: `-s TIANWANG_MAX_LEVEL=1` (for TIANWANG_MAX_LEVELS),
`-s DOWNLOAD_DELAYY=0` or `-s tianwang_max_levels=1` would be stored, read by nothing, and the
crawl would run with the default without a word. So the crawl stops at start naming the
first such name and the closest known one:

- a TIANWANG_* name without a default (every tianwang setting has one, in
  tianwang/default_settings.py), wherever it was set;
- a name the user gave (project settings, a spider's custom_settings, the command line) with
  lower-case letters, whose upper-case form is a known setting or a TIANWANG_* name: setting
  names are upper case;
- a name the user gave that is no known setting but a typo or two away from one (Scrapy's
  own, tianwang's, or those of the components listed in OTHER_SETTINGS).

Any other unknown name is left alone: it is another add-on's or extension's own setting
(ZYTE_API_KEY, PLAYWRIGHT_BROWSER_TYPE, ...), which this check cannot know. One that happens
to lie a typo away from a known name (USER_AGENTS, read by a random user-agent middleware)
is declared in TIANWANG_EXTRA_SETTINGS, as the refusal says.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from tianwang.config import SettingError

PREFIX = "TIANWANG_"
# Where a user lists settings of their own components that look like a misspelt known name.
EXTRA = "TIANWANG_EXTRA_SETTINGS"
# Settings renamed: the old name stops the crawl with the new one, rather than being ignored.
RENAMED = {"TIANWANG_VALIDATE_RETRIES": "TIANWANG_VALIDATE_TRIES (attempts in all, wget -t)"}
# Settings that components a tianwang crawl may run read, absent from Scrapy's
# default_settings: Scrapy's media pipelines and metacopy middleware, and scrapy-redis (a
# dependency, whose scheduler, dupefilter and item pipeline a project may enable).
OTHER_SETTINGS = frozenset({
    "CONCURRENT_REQUESTS_PER_IP", "FILES_EXPIRES", "FILES_RESULT_FIELD", "FILES_STORE",
    "FILES_URLS_FIELD", "IMAGES_EXPIRES", "IMAGES_MIN_HEIGHT", "IMAGES_MIN_WIDTH",
    "IMAGES_RESULT_FIELD", "IMAGES_STORE", "IMAGES_THUMBS", "IMAGES_URLS_FIELD",
    "MEDIA_ALLOW_REDIRECTS", "META_COPY_WARN_SKIP_KEYS",
    "DUPEFILTER_KEY", "MAX_IDLE_TIME_BEFORE_CLOSE", "REDIS_CLS", "REDIS_DB",
    "REDIS_DECODE_RESPONSES", "REDIS_ENCODING", "REDIS_HOST", "REDIS_ITEMS_KEY",
    "REDIS_ITEMS_SERIALIZER", "REDIS_PARAMS", "REDIS_PORT", "REDIS_START_URLS_AS_SET",
    "REDIS_START_URLS_AS_ZSET", "REDIS_START_URLS_BATCH_SIZE", "REDIS_START_URLS_KEY",
    "REDIS_URL", "SCHEDULER_DUPEFILTER_CLASS", "SCHEDULER_DUPEFILTER_KEY",
    "SCHEDULER_FLUSH_ON_START", "SCHEDULER_IDLE_BEFORE_CLOSE", "SCHEDULER_PERSIST",
    "SCHEDULER_QUEUE_CLASS", "SCHEDULER_QUEUE_KEY", "SCHEDULER_SERIALIZER", "STATS_KEY",
})


class UnknownSettingError(SettingError):
    """A setting name that is no setting."""

    def __init__(self, name: str, hint: str) -> None:
        ValueError.__init__(self, f"unknown setting {name}: {hint}")
        self.name = name


def check_names(given: Iterable[str], known: Iterable[str], users: Iterable[str] = (),
                extra: Iterable[str] = ()) -> None:
    """Raise UnknownSettingError for the first name of `given` that is no setting.

    known: every known name (Scrapy's, tianwang's, OTHER_SETTINGS); users: the names of
    `given` the user set (the project, a spider, the command line), the only ones checked
    for case and typos; extra: the user's own names (TIANWANG_EXTRA_SETTINGS), accepted.
    """
    known = set(known)
    ours = sorted(name for name in known if name.startswith(PREFIX))
    users, accepted = set(users), known | set(extra)
    for name in sorted(given):
        if name in known:
            continue
        if name.startswith(PREFIX):
            raise UnknownSettingError(name, _hint(name, ours))
        if name not in users or name in accepted:
            continue
        upper = name.upper()
        if upper != name and (upper in known or upper.startswith(PREFIX)):
            hint = f"did you mean {upper}? (setting names are upper case)" if upper in known \
                else _hint(upper, ours)
            raise UnknownSettingError(name, hint)
        close = closest(upper, known)
        if close is not None:
            raise UnknownSettingError(
                name, f"did you mean {close}? (if {name} is a setting of another component, "
                f"list it in {EXTRA})")


def _hint(name: str, ours: list[str]) -> str:
    if name in RENAMED:
        return f"renamed, give {RENAMED[name]}"
    close = difflib.get_close_matches(name, ours, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]}?"
    return "no such tianwang setting (they are listed in docs/settings.md)"


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name a typo or two away from `name` (one for names under 10 characters:
    JOBDIR and LOG_FILE are short), the nearest first; None if none is that close."""
    most = 1 if len(name) < 10 else 2
    best: tuple[int, str] | None = None
    for candidate in known:
        if abs(len(candidate) - len(name)) > most:
            continue
        distance = typos(name, candidate)
        if distance <= most and (best is None or (distance, candidate) < best):
            best = (distance, candidate)
    return best[1] if best is not None else None


def typos(a: str, b: str) -> int:
    """Edits from a to b: a character inserted, deleted, replaced, or two swapped (the
    restricted Damerau-Levenshtein distance)."""
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        before, row = row, current
    return row[len(b)]
