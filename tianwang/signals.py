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

# The live view (extensions/metrics.py) is being scraped. No arguments. The frontier
# schedulers answer with this process's pending requests by host (a Counter): only they can
# count them, and only then (it walks the queue).
pending_hosts_wanted = object()
