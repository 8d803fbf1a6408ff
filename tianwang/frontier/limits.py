"""How much of the frontier one host, one registered domain or the whole crawl may hold.

A page of 700,000 links, or a site whose links redirect to new subdomains without end,
would grow the frontier until the machine runs out of memory: per-page and per-host limits
of the fetches do not bound what waits. So a request is admitted to the frontier only while

- the crawl holds fewer than TIANWANG_MAX_PENDING pending requests ("pending");
- its host holds fewer than TIANWANG_MAX_HOST_PENDING ("host_pending");
- its host is one of the first TIANWANG_MAX_DOMAIN_HOSTS of its registered domain
  ("domain_hosts": a subdomain farm);
- its registered domain has had fewer than TIANWANG_MAX_DOMAIN_PAGES requests admitted
  ("domain_pages": the domain's budget for the crawl).

A refused url is not remembered as seen: a later link to it may be admitted once there is
room. A request the crawl already admitted once (dont_filter: a retry, a request sent back
after a Retry-After pause) is never refused. Each limit is off at 0.

Pure python (no Scrapy): the schedulers count with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from tianwang.config.frontier import Limits
from tianwang.domains import registered_domain


class FrontierLimits:
    """Counts what the frontier holds per host and domain, and says which limit refuses."""

    def __init__(self, limits: Limits,
                 domain_of: Callable[[str], str] = registered_domain) -> None:
        self.limits = limits
        self.domain_of = domain_of
        self.pending = 0
        self.host_pending: Counter[str] = Counter()
        self.domain_pages: Counter[str] = Counter()
        self.domain_hosts: Counter[str] = Counter()
        self._hosts: set[str] = set()  # hosts admitted so far (counted in domain_hosts)

    def refusal(self, host: str) -> str | None:
        """The limit a new request of `host` would break, or None to admit it."""
        limits = self.limits
        if limits.pending and self.pending >= limits.pending:
            return "pending"
        if limits.host_pending and self.host_pending[host] >= limits.host_pending:
            return "host_pending"
        if not (limits.domain_hosts or limits.domain_pages):
            return None
        domain = self.domain_of(host)
        if (limits.domain_hosts and host not in self._hosts
                and self.domain_hosts[domain] >= limits.domain_hosts):
            return "domain_hosts"
        if limits.domain_pages and self.domain_pages[domain] >= limits.domain_pages:
            return "domain_pages"
        return None

    def admitted(self, host: str) -> None:
        """A request of `host` joined the frontier."""
        self.pending += 1
        self.host_pending[host] += 1
        if self.limits.domain_hosts or self.limits.domain_pages:
            domain = self.domain_of(host)
            self.domain_pages[domain] += 1
            if host not in self._hosts:
                self._hosts.add(host)
                self.domain_hosts[domain] += 1

    def readmitted(self, host: str) -> None:
        """A request of `host` the frontier held before is back (sent back to wait): it
        waits again, and counts once in its domain's budget."""
        self.pending += 1
        self.host_pending[host] += 1

    def left(self, host: str) -> None:
        """A request of `host` left the frontier (handed to the downloader)."""
        self.pending = max(0, self.pending - 1)
        left = self.host_pending.get(host, 0) - 1
        if left > 0:
            self.host_pending[host] = left
        else:
            self.host_pending.pop(host, None)
