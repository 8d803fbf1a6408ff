"""The partition plan file: what `tianwang partition plan` writes and a share's crawl loads.

    {"format": "tianwang-partition-plan", "version": 1, "crawlers": N, "share": 0.9,
     "sites": {"<host>": {"homepage": "<url>", "pages": U,
                          "key_paths": {"<path key>": <crawler 0..N-1>, ...},
                          "seeds": [["<url>", ...], ...]}}}

`key_paths` maps each key path (a path key as tianwang.urls.path_key gives it) to the crawler
that owns it; `seeds[i]` are crawler i's supplementary seeds (two per key path it owns).
Crawlers are numbered from 0, as `-a share=i` counts them. Pure python.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tianwang.formats.atomic import write_atomic

FORMAT = "tianwang-partition-plan"
VERSION = 1


@dataclass(frozen=True)
class Plan:
    """One site's partition: which crawler owns each key path, and each crawler's seeds."""

    crawlers: int
    owner: dict[str, int]  # key path -> crawler index (0-based)
    seeds: tuple[tuple[str, ...], ...]  # per crawler: its key paths' supplementary seeds

    def key_paths_of(self, crawler: int) -> list[str]:
        return sorted(key for key, owner in self.owner.items() if owner == crawler)



class PlanFileError(ValueError):
    """A plan file that cannot be read: the message names the file and what is wrong."""


@dataclass(frozen=True)
class SitePlan:
    homepage: str
    pages: int  # the site's pages in the graph the plan was made from (U)
    plan: Plan


@dataclass(frozen=True)
class PlanFile:
    crawlers: int
    share: float  # the key paths' share of a site's urls
    sites: dict[str, SitePlan]


def dump_plan(path: str | os.PathLike[str], plan_file: PlanFile) -> None:
    """Write the plan file whole or not at all (a temp file, then rename)."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "crawlers": plan_file.crawlers,
        "share": plan_file.share,
        "sites": {host: _site_json(site) for host, site in sorted(plan_file.sites.items())},
    }
    text = json.dumps(document, ensure_ascii=False, indent=1, sort_keys=False) + "\n"
    write_atomic(Path(path), text.encode("utf-8"))


def _site_json(site: SitePlan) -> dict[str, Any]:
    return {
        "homepage": site.homepage,
        "pages": site.pages,
        "key_paths": dict(sorted(site.plan.owner.items())),
        "seeds": [list(seeds) for seeds in site.plan.seeds],
    }


def load_plan(path: str | os.PathLike[str]) -> PlanFile:
    """Read a plan file; PlanFileError naming the file and the fault if it is not one."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanFileError(f"cannot read partition plan {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PlanFileError(f"partition plan {path} is not JSON: {exc}") from None
    try:
        return _parse(document)
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanFileError(f"partition plan {path} is malformed: {exc}") from None


def _parse(document: Any) -> PlanFile:
    if not isinstance(document, Mapping) or document.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} document")
    if document.get("version") != VERSION:
        raise ValueError(f"version {document.get('version')!r}, this tianwang reads {VERSION}")
    crawlers = _whole(document["crawlers"], "crawlers")
    if crawlers < 1:
        raise ValueError(f"crawlers must be >= 1, got {crawlers}")
    sites = {str(host): _site(site, crawlers) for host, site in document["sites"].items()}
    return PlanFile(crawlers, float(document["share"]), sites)


def _site(site: Mapping[str, Any], crawlers: int) -> SitePlan:
    owner = {str(key): _whole(value, "key path owner") for key, value in site["key_paths"].items()}
    bad = sorted(key for key, value in owner.items() if not 0 <= value < crawlers)
    if bad:
        raise ValueError(f"key path {bad[0]!r} is owned by a crawler outside 0..{crawlers - 1}")
    seeds = tuple(tuple(str(url) for url in share) for share in site["seeds"])
    if len(seeds) != crawlers:
        raise ValueError(f"{len(seeds)} seed lists for {crawlers} crawlers")
    plan = Plan(crawlers, owner, seeds)
    return SitePlan(str(site["homepage"]), _whole(site["pages"], "pages"), plan)


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return value
