"""tianwang's own signals, sent through the crawler's SignalManager as Scrapy's are.

A component that needs to know what another did listens to a signal here rather than call
into it, so data flows one way (spider -> middlewares -> pipelines -> records) and a
component never holds a reference to another.
"""

# TianwangStoragePipeline wrote a page's record. Arguments: item (the PageItem). The Redis
# scheduler marks the leased request stored, so a node that takes it after a kill parses it
# for links without storing it again.
page_stored = object()

# The spider's start requests are all handed to the engine (StartDoneMiddleware, through
# Scrapy's public process_start hook). No arguments. The Redis scheduler then tells the other
# nodes this node's seeds are all pushed.
start_requests_done = object()

# The site spider's share of a site partition (or None), once it is open. Arguments: share.
# PartitionMiddleware filters requests by it.
share_opened = object()

# A downloader middleware refused a request (host filter, crawler trap, type or size).
# Arguments: request, reason (the tianwang/filter/<reason> stat's reason). The StatsFile
# extension counts refusals per host for `tianwang report`.
request_refused = object()

# Something the crawl keeps could not be written: a full disk or quota, a read-only or
# failing file system, or the free space below TIANWANG_MIN_FREE_DISK. Arguments: reason
# ("disk_full" or "storage_error", tianwang.formats.diskspace), message (one line naming
# what, where and why). The closing extension stops the crawl with that reason; the
# schedulers mark no request done from then on, so every page not stored is fetched again
# when the same command runs once there is room.
storage_failed = object()

# A close has waited TIANWANG_CLOSE_GRACE seconds and requests are still in flight: they are
# given up, and fetched again when the job resumes. No arguments. The schedulers mark no
# request done from then on; the robots.txt and back-off waits end; the download handlers
# cancel their downloads (tianwang.httphandler.Abandoned).
abandon_in_flight = object()

# The live view (extensions/metrics.py) is being scraped. No arguments. The frontier
# schedulers answer with this process's pending requests by host (a Counter): only they can
# count them, and only then (it walks the queue).
pending_hosts_wanted = object()

# A host may not be sent a request before `until` (time.monotonic() seconds; math.inf:
# until host_go) for a reason ("robots", "retry_after"); a wait for the same reason replaces
# the one before. Arguments: key (the host's downloader slot key), until, reason. Sent by
# RobotsMiddleware while the host's robots.txt is fetched or unavailable, and by
# BackoffMiddleware on a 429/503 Retry-After; the frontier keeps the host's requests
# meanwhile (tianwang/frontier/slots.py), none waits in the downloader.
host_wait = object()

# The host's wait for a reason is over (its robots.txt was read). Arguments: key, reason.
host_go = object()

# The host's robots.txt gives it a Crawl-delay (one request at a time, this long from the
# end of each answer to the next request), or none any more (None). Arguments: key, seconds.
host_delay = object()
