"""The error a crawl refuses to start with: one line naming the problem, no traceback.

Raised by the readers of settings, seeds, verticals and plans (pure logic, no Scrapy), and
reported by the crawl command (tianwang/commands/crawl.py) as `tianwang: error: ...` with
exit status 2.
"""


class StartupError(ValueError):
    """A setting, seed list, vertical, plan or data directory the crawl cannot start with."""
