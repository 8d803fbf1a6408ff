"""Verticals: named settings profiles for one kind of site, chosen per crawl.

    scrapy crawl site -a seeds=seeds.txt -s TIANWANG_VERTICAL=news

A vertical is a dict of settings (any Scrapy or TIANWANG_* setting: seeds, allowed domains,
topical keywords, depth, revisit bounds, politeness). The Tianwang add-on (tianwang/addon.py)
applies it at add-on priority over the stack's defaults, so anything set on the command line
(or in a scrapyd job's `setting=`) beats it. A project adds its own with TIANWANG_VERTICALS.
No Scrapy import here.
"""

from __future__ import annotations

from typing import Any

# The papers' rules where the defaults depart from them (docs/design.md section 12): seed
# 000's url weight of directory depth and penalties alone, 1 sorted pick then 1 random pick,
# equal weights first come first served; the CWT200g thesis's 3 levels and no size limit per host.
PAPER: dict[str, Any] = {
    "TIANWANG_MAX_LEVELS": 3,
    "TIANWANG_SORTED_PICKS": 1,
    "TIANWANG_HOST_PICKS": 0,
    "TIANWANG_RANDOM_PICKS": 1,
    "TIANWANG_HOST_FIRST": 0,
    "TIANWANG_SEED_HOST_FIRST": 0,
    "TIANWANG_HOST_TURNS": 0,
    "TIANWANG_LINK_WEIGHT": 0,
    "TIANWANG_INDEX_PAGES": [],
    "TIANWANG_MAX_HOST_PAGES": 0,
    "TIANWANG_MAX_DOMAIN_PAGES": 0,
}

VERTICALS: dict[str, dict[str, Any]] = {
    # The paper-literal crawl: every default that departs from a paper's rule put back.
    "paper": PAPER,
    # The CWT200g thesis's crawl (docs/collection.md): every seed host breadth first, 3 levels
    # (the homepage level 1), in-host links, text/html and text/plain; no size limit per
    # host, so neither a host's nor a domain's pages are cut (what waits at once stays bounded
    # by TIANWANG_MAX_PENDING); every copy stored, for `tianwang dedup` to keep the shortest
    # url of each body; the Tianwang paper's order and weights as the paper states them.
    "collection": {
        **PAPER,
        "TIANWANG_MAX_LEVELS": 3,
        "TIANWANG_STAY_IN_HOST": True,
        "TIANWANG_STORE_TYPES": ["text/html", "text/plain"],
        "TIANWANG_MAX_HOST_PENDING": 0,
        "TIANWANG_MAX_DOMAIN_HOSTS": 0,
        "TIANWANG_DEDUP": False,
    },
    # News portals: articles sit two or three links below the homepage and go stale fast,
    # so the crawl stays shallow and follows pages about the news first.
    "news": {
        "TIANWANG_MAX_LEVELS": 3,
        "TIANWANG_KEYWORDS": ["新闻", "报道", "记者", "news", "headline"],
        "TIANWANG_KEYWORD_BOOST": 3,
        "DOWNLOAD_DELAY": 1.0,
        # Revisits (the refresh spider): at most every 15 minutes, at least once a day.
        "TIANWANG_MIN_REVISIT": 15 * 60,
        "TIANWANG_MAX_REVISIT": 86400,
    },
    # Forums (bbs.*): threads are dynamic urls several pages deep; their pages are built
    # per request, so each host gets one connection and a longer pause.
    "forum": {
        "TIANWANG_MAX_LEVELS": 5,
        "TIANWANG_KEYWORDS": ["帖子", "回复", "论坛", "thread", "reply"],
        "TIANWANG_KEYWORD_BOOST": 2,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 2.0,
        "TIANWANG_MIN_REVISIT": 3600,
        "TIANWANG_MAX_REVISIT": 7 * 86400,
    },
    # Government sites: only *.gov.cn, from the central portal, deep enough for the
    # documents that departments publish under their own directories.
    "government": {
        "TIANWANG_SEEDS": "http://www.gov.cn/",
        "TIANWANG_ALLOWED_DOMAINS": ["gov.cn"],
        "TIANWANG_STAY_IN_HOST": False,
        "TIANWANG_MAX_LEVELS": 4,
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": 2.0,
        "TIANWANG_MIN_REVISIT": 86400,
        "TIANWANG_MAX_REVISIT": 30 * 86400,
    },
}
