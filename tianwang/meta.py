"""The request.meta keys tianwang's components pass to each other, defined once.

Data flows one way, spider -> scheduler -> downloader -> spider: the spider sets a key on a
request, the scheduler (or a middleware) reads it; a key set by the scheduler travels with
the request back to the spider's callback. Scrapy's own keys the stack reads are named here
too, so a rename in Scrapy is one line to change.
"""

# Set by the site spider on the requests of a page whose text holds a keyword (seed 000's
# topical crawl): the frontier adds it to the url's weight.
BOOST = "tianwang_boost"
# Set by RobotsMiddleware on a request it sends back to wait for its host's robots.txt: how
# many fetches of it were done then. Once one more is done the request goes by its rules, even
# if they expired meanwhile (a wait longer than TIANWANG_ROBOTS_TTL would otherwise start a
# fetch and a wait again, for ever).
ROBOTS_FETCHES = "tianwang_robots_fetches"

# Set by the Redis scheduler on a request whose page a dead node already stored: the spider
# parses it for its links only.
STORED = "tianwang_stored"
# Set by the site spider: the url of the page whose link made the request (survives
# redirects, as Referer does not); the link graph's parent.
PARENT = "tianwang_parent"
# Set by the site spider on a link to the host of one of its seeds: the frontier gives that
# host a seed's first requests from this request on. Scrapy feeds start requests lazily, so
# a page's link often reaches a seed's host before the seed itself reaches the frontier.
SEED_HOST = "tianwang_seed_host"
# Set by the site spider beside PARENT: how many links its page has (out-degree), so the
# frontier hands each its share of the page's cash (frontier/linkscore.py).
OUTLINKS = "tianwang_outlinks"
# Set by the sitemap reader (spiders/sitemaps.py) on a sitemap request: (the host it speaks
# for, its index depth).
SITEMAP = "tianwang_sitemap"
# Set by the sitemap reader on a url a sitemap listed: the sitemap's lastmod for it.
LASTMOD = "tianwang_lastmod"
# Set by the validate spider on a homepage request: the site (D1 line) it checks.
SITE = "tianwang_site"
# Set by RobotsMiddleware on its own robots.txt requests.
ROBOTS = "tianwang_robots"
# Set by RobotsMiddleware on its robots.txt requests (RFC 9309: the first 500 KiB are
# parsed): ContentTypeMiddleware reads at most this many bytes of the body and keeps them,
# BoundedDecompressionMiddleware decodes at most this many, never refusing a longer body.
KEEP_FIRST = "tianwang_keep_first"
# Set by BackoffMiddleware: times this request was sent back after a Retry-After pause.
BACKOFF_PAUSES = "tianwang_backoff_pauses"

# Set by the schedulers on a request they hand out: (its url, the weight it was queued at,
# its host's first-request turn or None, its link cash). A copy sent back to the frontier
# (robots.txt still to come, a Retry-After pause: dont_filter, the same url) is queued again
# as it was, not as a new url of its host.
QUEUED = "tianwang_queued"

# Set by RobotsMiddleware and BackoffMiddleware on a request they send back to the frontier
# to wait (robots.txt to come, a Retry-After): it was counted when it first came (the host's
# page budget), not again.
SENT_BACK = "tianwang_sent_back"
# Set beside SENT_BACK: the request's own dont_filter. A request sent back passes the
# frontier's filter again with dont_filter set; the frontier gives it its own back as it
# queues it again, or a redirect made from it would inherit dont_filter and queue its target
# past the dedup (after a node's death, the target stored again). Both set by
# tianwang/sendback.py.
DONT_FILTER = "tianwang_dont_filter"

# Set by RobotsMiddleware on a request it sends back to wait for its host's robots.txt: how
# many fetches of it were done then. Once one more is done the request goes by its rules, even
# if they expired meanwhile (a wait longer than TIANWANG_ROBOTS_TTL would otherwise start a
# fetch and a wait again, for ever).
ROBOTS_FETCHES = "tianwang_robots_fetches"

# Set by the Redis scheduler on a request it hands out: the member of the lease it holds. A
# copy sent back keeps the lease and waits in the node's own queue, not in Redis again.
LEASE = "tianwang_lease"

# Scrapy's own keys (scrapy.core.downloader.Downloader.DOWNLOAD_SLOT, DepthMiddleware,
# RedirectMiddleware).
DOWNLOAD_SLOT = "download_slot"
DEPTH = "depth"
REDIRECT_URLS = "redirect_urls"
