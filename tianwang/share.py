"""One crawler's share of a site partition plan: `-a partition=PLAN -a share=i` (docs/design.md 9).

Pure python. A share starts at every planned site's homepage and its own supplementary seeds,
and may fetch any url except those in key paths the plan gives to other crawlers; hosts the
plan does not name are crawled as usual.
"""

from __future__ import annotations

from dataclasses import dataclass

from tianwang.analysis.sitepartition import in_scope
from tianwang.errors import StartupError
from tianwang.formats.partitionplan import PlanFile, PlanFileError, SitePlan, load_plan
from tianwang.urls import url_host


class ShareError(StartupError):
    """The partition arguments cannot be used; the message names the argument and why."""


@dataclass(frozen=True)
class Share:
    index: int  # crawlers are numbered from 0, as in the plan file
    plan_file: PlanFile

    def site(self, url: str) -> SitePlan | None:
        try:
            return self.plan_file.sites.get(url_host(url))
        except ValueError:  # no host or a bad port: not a planned site's url
            return None

    def allows(self, url: str, redirected_from: str | None = None) -> bool:
        """The whole scope rule of a crawl, over every planned site: a url of no planned site
        is allowed; a site's homepage (the seed the paper gives every crawler) and where it
        redirects to (`redirected_from`: the first url of the chain) are every share's, even
        in another share's key path; any other url goes by in_scope, the key-path half."""
        site = self.site(url)
        if site is None:
            return True
        home = _without_scheme(site.homepage)  # http and https alike: sites move between them
        if home in (_without_scheme(url), _without_scheme(redirected_from or "")):
            return True
        return in_scope(site.plan, self.index, url)

    def start_urls(self) -> list[str]:
        """Each planned site's homepage, then this share's supplementary seeds of that site."""
        urls: dict[str, None] = {}
        for _, site in sorted(self.plan_file.sites.items()):
            urls[site.homepage] = None
            urls.update(dict.fromkeys(site.plan.seeds[self.index]))
        return list(urls)


def _without_scheme(url: str) -> str:
    return url.partition("://")[2]


def load_share(partition: str | None, share: str | None) -> Share | None:
    """The share the two spider arguments name, None when neither is given."""
    if partition is None and share is None:
        return None
    if partition is None:
        raise ShareError(f"-a share={share} needs -a partition=PLAN_FILE, the plan it shares")
    if share is None:
        raise ShareError(f"-a partition={partition} needs -a share=i (this crawler's number)")
    try:
        plan_file = load_plan(partition)
    except PlanFileError as exc:
        raise ShareError(f"-a partition={partition}: {exc}") from None
    try:
        index = int(share)
    except ValueError:
        raise ShareError(f"-a share={share!r} is not a whole number") from None
    if not 0 <= index < plan_file.crawlers:
        raise ShareError(
            f"-a share={share} is outside 0..{plan_file.crawlers - 1}: the plan {partition} "
            f"has {plan_file.crawlers} crawlers, numbered from 0"
        )
    return Share(index, plan_file)
