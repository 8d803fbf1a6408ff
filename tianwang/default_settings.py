"""The Tianwang add-on's defaults: every setting the stack sets, as Scrapy's default_settings.

The add-on (tianwang/addon.py) applies each of these at add-on priority, so a project's own
settings, a spider's custom_settings and the command line all beat it; a component dict
(DOWNLOADER_MIDDLEWARES, ITEM_PIPELINES, ...) is merged component by component. Every
TIANWANG_* setting has its default here, and only here, with a one-line comment; the docs
(docs/settings.md) list them for users. A project's own identity (BOT_NAME, SPIDER_MODULES,
USER_AGENT, LOG_LEVEL, ADDONS) is in its settings module, not here: see tianwang/settings.py.

The Scrapy values are polite defaults for the real web (robots.txt obeyed, one connection
and one second per host); the demo, the tests and the benchmarks set their own.
"""

# The revisit policy's defaults are the analysis' own (said once, there); lowercase, so the
# add-on does not take the module for a setting.
from tianwang.analysis import revisits as _revisits

# --- Scrapy settings: politeness and order (docs/design.md section 3) ---
# Obey each site's robots.txt.
ROBOTSTXT_OBEY = True
# Requests in flight at once, over all hosts.
CONCURRENT_REQUESTS = 16
# Connections per host at once.
CONCURRENT_REQUESTS_PER_DOMAIN = 1
# Seconds between two requests to one host.
DOWNLOAD_DELAY = 1.0
# Outputs of one callback processed at once. Scrapy 2.19 starts this many asyncio tasks for
# every response's outputs however few they are (100 by default: 100 tasks a page, a tenth
# of the crawl's CPU in a profile); the pipelines here do not wait on anything, so a few do.
CONCURRENT_ITEMS = 4

# Shallow levels first among requests of equal weight (breadth first, as the CWT200g crawl).
DEPTH_PRIORITY = 1
# FIFO disk queue for Scrapy's own scheduler, if a project chooses it (breadth first).
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
# FIFO memory queue for Scrapy's own scheduler, if a project chooses it (breadth first).
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
# The importance-first frontier (seed 000, docs/design.md section 3). DEPTH_PRIORITY above only
# orders requests of equal weight there; the two queue settings apply to Scrapy's scheduler.
# The add-on replaces it with tianwang.distributed.redisscheduler.RedisFrontierScheduler when
# TIANWANG_REDIS_URL is set (a project's own SCHEDULER is left alone).
SCHEDULER = "tianwang.frontier.scheduler.FrontierScheduler"
# Scrapy's request fingerprint, the same bytes, computed directly for a GET of a canonical url.
REQUEST_FINGERPRINTER_CLASS = "tianwang.fingerprint.RequestFingerprinter"
EXTENSIONS = {
    # Checks the scheduler's settings before the engine starts (a bad one stops the crawl with
    # one message naming it; Scrapy builds the scheduler too late for that).
    "tianwang.frontier.settingscheck.FrontierSettingsCheck": 0,
    # The same for the download handlers, which Scrapy builds at their first request.
    "tianwang.extensions.handlercheck.DownloadSettingsCheck": 0,
    # No log record made that no handler would write (Scrapy builds each page's DEBUG lines
    # and drops them at LOG_LEVEL INFO).
    "tianwang.extensions.loglevel.LogLevels": 490,
    # Python's garbage collector paced for a crawl's heap (TIANWANG_GC_THRESHOLD).
    "tianwang.extensions.garbage.GarbageCollection": 495,
    # The progress line every TIANWANG_PROGRESS_INTERVAL seconds.
    "tianwang.extensions.progress.ProgressLog": 500,
    # The final stats to TIANWANG_DATA_DIR/stats/, for `tianwang report`.
    "tianwang.extensions.statsfile.StatsFile": 510,
    # Ends a close on time (TIANWANG_CLOSE_GRACE), and stops the crawl when storage fails.
    "tianwang.extensions.closing.CrawlCloser": 520,
    # spider.state under JOBDIR, written whole or not at all (a full disk cut Scrapy's short).
    "scrapy.extensions.spiderstate.SpiderState": None,
    "tianwang.extensions.spiderstate.SpiderState": 0,
    # The live view: counters in the Prometheus text format, if TIANWANG_METRICS_PORT is set.
    "tianwang.extensions.metrics.LiveView": 530,
}
# Seconds a close (CLOSESPIDER_*, Ctrl-C, SIGTERM, a full disk) lets the requests in flight
# finish; then they are given up (and fetched again when the job resumes).
TIANWANG_CLOSE_GRACE = 10.0
# gc.set_threshold while a crawl runs: a young generation of 50,000 objects instead of
# Python's 700, so requests waiting out a host's delay no longer fill the oldest generation
# and full collections (100-200 ms pauses of every download) become rare; empty: Python's.
TIANWANG_GC_THRESHOLD = (50000, 10, 10)
# Seconds between progress lines (stored, pages/s, pending by weight, refused, failed); 0: none.
TIANWANG_PROGRESS_INTERVAL = 60.0
# Port of the live view (/metrics, Prometheus text format); 0: off. With TIANWANG_PROCESSES=N
# process i listens on this port + i.
TIANWANG_METRICS_PORT = 0
# Address the live view listens on: this machine only; "0.0.0.0" for every interface.
TIANWANG_METRICS_ADDRESS = "127.0.0.1"
# Hosts in the live view's pending requests by host (those with most); 0: none.
TIANWANG_METRICS_HOSTS = 20
# Seconds the crawl waits at its end for a last scrape of its final counters; 0: none.
TIANWANG_METRICS_LINGER = 60.0
SPIDER_MIDDLEWARES = {
    # Says when the start requests are all out (the Redis scheduler waits for it); passes
    # every start request through unchanged.
    "tianwang.middlewares.startdone.StartDoneMiddleware": 0,
    # Start requests handed to the engine in turns of 100, the event loop served between (a
    # long seed list was scheduled in one turn of the loop: 10,000 seeds held it 0.8 s).
    "tianwang.middlewares.startturns.StartTurnsMiddleware": 10,
}

# A page that still answers 5xx after retries is the web's fault, not the crawl's: it is
# counted in stats (retry/max_reached) without an ERROR line per page.
RETRY_GIVE_UP_LOG_LEVEL = "INFO"

# Scrapy 2.19's RemoteControl extension opens a port that runs code: shut.
REMOTE_CONTROL_ENABLED = False
# The telnet console opens a port that runs code too: shut.
TELNETCONSOLE_ENABLED = False

DOWNLOADER_MIDDLEWARES = {
    # Scrapy's offsite filter (allowed_domains), at its 50, skipping its work for a spider
    # that allows every domain: it parsed every scheduled url to match it against "".
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "tianwang.middlewares.offsite.OffsiteMiddleware": 50,
    # Before RobotsTxtMiddleware (100): a refused host gets no request at all, not even
    # one for its robots.txt.
    "tianwang.middlewares.hostfilter.HostFilterMiddleware": 90,
    # Site partition (-a partition= -a share=): a url of another share's key path is refused
    # before the host filter and robots.txt see it; a no-op for a crawl without a share.
    "tianwang.middlewares.partition.PartitionMiddleware": 85,
    # Before Scrapy's HttpProxyMiddleware (750), which reads request.meta["proxy"].
    "tianwang.middlewares.proxy.ProxyMiddleware": 740,
    # robots.txt by RFC 9309 (4xx allow, 5xx wait, cached for a while) and its Crawl-delay
    # (tianwang/middlewares/robots.py), in place of Scrapy's RobotsTxtMiddleware.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "tianwang.middlewares.robots.RobotsMiddleware": 100,
    # After RetryMiddleware (550) in process_response order: a 429/503 with Retry-After
    # pauses the host and goes back to the scheduler without spending a retry.
    "tianwang.middlewares.backoff.BackoffMiddleware": 560,
    # Nearest the downloader, so its process_exception turns a stopped download into
    # IgnoreRequest before any other middleware sees it.
    "tianwang.middlewares.contenttype.ContentTypeMiddleware": 950,
    # Scrapy's decompression, with the decoded body held to TIANWANG_MAX_PAGE_BYTES
    # (robots.txt too): takes the place of Scrapy's HttpCompressionMiddleware, at its 590.
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "tianwang.middlewares.decompression.BoundedDecompressionMiddleware": 590,
    # Crawler traps (url length, repeated path segments, pages per host): before robots.txt
    # (100), so a refused url costs nothing.
    "tianwang.middlewares.traps.TrapFilterMiddleware": 95,
    # Before RedirectMiddleware (600): a Location no request can be made of is refused,
    # counted and logged once per host, not a traceback from the redirect middleware.
    "tianwang.middlewares.location.BadLocationMiddleware": 610,
    # Scrapy's meta refresh, with a refresh to no url (javascript:, a port out of range)
    # ignored as browsers do, the page kept: not a traceback, the page lost.
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "tianwang.middlewares.refresh.CheckedMetaRefreshMiddleware": 580,
    # After RetryMiddleware (550) gave up: a download error (timeout, refused connection,
    # DNS) is counted and logged once per host and reason, not a traceback per url.
    "tianwang.middlewares.failures.FailureMiddleware": 540,
    # Counts and logs the certificate problems the https handler flagged on a response.
    "tianwang.middlewares.tlscheck.TLSCheckMiddleware": 960,
    # Scrapy's cookies, bounded as a browser bounds them, the Public Suffix List read from
    # the bundled snapshot (Scrapy's downloads it at the first Set-Cookie): at its 700.
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": None,
    "tianwang.middlewares.cookies.BoundedCookiesMiddleware": 700,
}
# No url length limit of Scrapy's own (its 2083 would drop links uncounted): the limit is
# TIANWANG_MAX_URL_LENGTH, counted as tianwang/filter/url_length.
URLLENGTH_LIMIT = 0
# Download errors retried: Scrapy's list less DownloadTimeoutError (a slow server is slow
# again on a retry: a body dripped at 1 byte/s held its url 3 x DOWNLOAD_TIMEOUT).
RETRY_EXCEPTIONS = [
    "scrapy.exceptions.CannotResolveHostError",
    "scrapy.exceptions.DownloadConnectionRefusedError",
    "scrapy.exceptions.DownloadFailedError",
    "scrapy.exceptions.ResponseDataLossError",
    "twisted.internet.error.ConnectionDone",
    "twisted.internet.error.ConnectError",
    "twisted.internet.error.ConnectionLost",
    "builtins.OSError",
    "scrapy.core.downloader.handlers.http11.TunnelError",
]
# Scrapy's HTTP/1.1 handler whose downloads a close can end (tianwang/httphandler.py); https
# through one that checks certificates and fetches anyway (tianwang/tlshandler.py).
DOWNLOAD_HANDLERS = {
    "http": "tianwang.httphandler.HTTPDownloadHandler",
    "https": "tianwang.tlshandler.TLSCheckDownloadHandler",
}
# Seconds a download may go without receiving a byte (wget's -T), 0 = no idle timeout.
TIANWANG_IDLE_TIMEOUT = 0
ITEM_PIPELINES = {
    # Change statistics before dedup: every visit is recorded, even of a page not stored
    # again; off unless TIANWANG_CHANGES (the refresh spider turns it on).
    "tianwang.pipelines.changes.ChangeStatsPipeline": 650,
    # Dedup first (a copy is never stored); the link graph only for what was stored.
    "tianwang.pipelines.dedup.MD5DedupPipeline": 700,
    # Sends tianwang.signals.page_stored for each record written (the Redis scheduler marks
    # the page stored in Redis at once).
    "tianwang.pipelines.storage.TianwangStoragePipeline": 800,
    "tianwang.pipelines.linkgraph.LinkGraphPipeline": 900,
}

# Scrapy's in-memory stats without its deprecation shim's cost on every call (tianwang/
# statscollector.py).
STATS_CLASS = "tianwang.statscollector.StatsCollector"

# --- tianwang settings ----------------------------------------------------------------------

# Root of the record tree: <dir>/data_<k>/<host>/page.dat.
TIANWANG_DATA_DIR = "data"
# Bytes the data directory's file system must keep free: below it no record is written and
# the crawl stops (status 1); the same command stores the rest once there is room. 0: none.
TIANWANG_MIN_FREE_DISK = 100 * 1024 * 1024
# Store DATA zlib-compressed (with unzip-length), as CWT200g did; False writes the plain form.
TIANWANG_COMPRESS = True
# Level of the zlib stream (written by libdeflate), 1 (fastest) to 9 (smallest). On real pages
# (40 KB) level 1 took 120 us a page (zlib's own 244) for 19% of the size; level 6 241 us, 17%.
TIANWANG_COMPRESS_LEVEL = 1
# Record files kept open at once; the least recently used is closed past this. A breadth
# first crawl writes to every host in turn, so this wants to exceed the hosts crawled at once.
TIANWANG_MAX_OPEN_FILES = 256
# Levels per host, the seed page being level 1 (3 = link distance <= 2); 0 for no limit.
TIANWANG_MAX_LEVELS = 3
# Follow only links to the page's own host; False follows links to other hosts too.
TIANWANG_STAY_IN_HOST = True
# Media types whose pages are stored; any other type's download is stopped at its headers.
TIANWANG_STORE_TYPES = ["text/html", "text/plain"]
# Drop a page whose body MD5 the tree already holds; mirrors.tsv maps it to the kept url.
TIANWANG_DEDUP = True
# Write each stored page's parent and out-links to links.tsv beside its records.
TIANWANG_LINK_GRAPH = True
# HTTP proxy for every request (e.g. the test web); "" uses the http_proxy variable, if any.
TIANWANG_PROXY = ""
# Largest body fetched, in bytes; a longer one is cut off, counted and never stored. It
# bounds the decoded body too (gzip, deflate, br, zstd), of every request but robots.txt
# (its first 500 KiB are always read: RFC 9309).
TIANWANG_MAX_PAGE_BYTES = 10 * 1024 * 1024
# Largest response head read (status line and headers, interim 1xx answers included), in
# bytes; past it the download fails as bad_response (tianwang/responsehead.py). Chromium's.
TIANWANG_MAX_HEAD_BYTES = 256 * 1024
# Refuse hosts on a port other than 80 (443 for https): test servers, as seed 004 found.
TIANWANG_DROP_OTHER_PORTS = True
# Check https certificates (chain, dates, name); a failure is counted and the page fetched.
TIANWANG_TLS_CHECK = True
# A PEM file of CA certificates trusted besides the system's (e.g. the test web's --ca-file).
TIANWANG_CA_FILE = ""
# Refuse hosts whose first label starts with a digit (seed 004: mostly generated spam hosts).
TIANWANG_DROP_DIGIT_HOSTS = True
# File of spam domains (each also refusing its subdomains) and host regexes; "" for none.
TIANWANG_SPAM_LIST = ""
# Refuse names of this machine or its network (localhost, *.local, *.internal...) and, without
# a proxy, hosts resolving to private, loopback, link-local or multicast IPs.
TIANWANG_BLOCK_PRIVATE = True

# URL weight (the Tianwang paper): start weight, less 1 per directory level, "?" and "&" in the url.
TIANWANG_INITIAL_WEIGHT = 10
# Words (search pages, proxies, gateways) that cost a url weight each time they occur in it.
TIANWANG_PENALTY_WORDS = ["search", "proxy", "gate"]
# Weight lost per occurrence of a penalty word (case-insensitive, host included).
TIANWANG_PENALTY_WORD_WEIGHT = 2
# A directory's default documents: a url ending in one (no query) weighs as its directory,
# so /news/index.html (depth 2) is fetched with /news/ (depth 1), not after every depth-1
# page of its host. [] = the Tianwang paper's weight exactly (/news/index.html weighs 8, /news/ 9).
TIANWANG_INDEX_PAGES = [
    "index.html", "index.htm", "index.shtml", "index.shtm", "index.php", "index.asp",
    "index.aspx", "index.jsp", "default.htm", "default.html", "default.asp", "default.aspx",
]
# Topical crawl (the Tianwang paper): words whose presence in a page's text boosts its
# links; [] = off.
TIANWANG_KEYWORDS: list[str] = []
# Weight added to every link of a page whose text holds a keyword (>= 0).
TIANWANG_KEYWORD_BOOST = 2

# Frontier picks (seed 000; 7:1:1 measured, docs/design.md section 12): this many sorted
# picks (highest weight first), then ...
TIANWANG_SORTED_PICKS = 7
# ... this many host picks (hosts take turns, each giving its best pending request: every
# host found gets a share of the fetches, as under breadth first), then ...
TIANWANG_HOST_PICKS = 1
# ... this many random picks (any pending request, uniformly: a low weight does not mean
# unimportant), repeating; a shared crawl's take leases this share at random. Sorted picks
# >= 1; host and random picks >= 0, not both 0. The Tianwang paper's alternation: 1 sorted,
# 1 random.
TIANWANG_RANDOM_PICKS = 1
# Among urls of equal weight, hosts take turns for their first this many urls (each host's
# k-th before any host's k+1-th), then first come first served; 0 = first come first served
# throughout, as seed 000 (with host picks and first requests the turns measured no gain).
TIANWANG_HOST_TURNS = 0
# A host's first this many requests go before every weight, hosts taking turns (each host's
# k-th before any host's k+1-th; the higher weight first within a turn): every host found
# gets a look at its home page and main sections. 0 to 16; 0 = the weights alone.
TIANWANG_HOST_FIRST = 2
# The same for the host of a seed (a request no page linked to): the sites the crawl was
# given take turns for this many pages, as breadth first's round robin over hosts does.
TIANWANG_SEED_HOST_FIRST = 8
# Link relations (seed 000, OPIC cash): weight per doubling of a url's cash from the pages
# linking to it (frontier/linkscore.py); 0 = the Tianwang paper's depth-only weight.
TIANWANG_LINK_WEIGHT = 0.75
# Shares of a page's cash a link to another host carries (a vote of another site); >= 1.
TIANWANG_LINK_OTHER_HOST = 8
# How much of a url's first share the link bonus discounts, 0 to 1: 0 = plain OPIC cash;
# 1 = only the links beyond the one that found it count (no host's pages set above another's).
TIANWANG_LINK_RELATIVE = 0
# Seed of the random picks, for a repeatable order; None draws one from the system.
TIANWANG_FRONTIER_SEED = None
# Urls the request Bloom filter's first stage is sized for: 10 million at 1e-6 take 36 MB of
# memory. Past them a stage twice as large is added, and so on (a warning says each).
TIANWANG_EXPECTED_URLS = 10_000_000
# False positive rate of that filter's first stage; the stages after it keep the whole under
# twice this.
TIANWANG_BLOOM_ERROR_RATE = 1e-6
# Under JOBDIR, the request log is rewritten without the requests done once they take more
# than this many megabytes and three times what the pending ones take: its size and a
# resume's time follow what is pending, not the crawl's length (the Bloom filter is saved
# first, as the log no longer holds their urls).
TIANWANG_LOG_COMPACT_MB = 64

# --- change frequency and revisits (issue 6, docs/design.md sections 4 and 8) ---
# Record every visit (Date, MD5, content hash, ETag, Last-Modified) in <data dir>/changes.sqlite.
TIANWANG_CHANGES = False
# An entry page (subroot or path url) has at least this many in-host content/navigation links ...
TIANWANG_ENTRY_MIN_LINKS = 20
# ... of which at least this share (0..1) were not there at its previous visit.
TIANWANG_ENTRY_NEW_SHARE = 0.1
# The refresh spider's policy: "two-class" (the page-types paper's F1/F2), "optimal" or "uniform".
TIANWANG_REVISIT_POLICY = _revisits.TWO_CLASS
# Shortest time between two visits of a url, in seconds (caps every policy's frequency).
TIANWANG_MIN_REVISIT = _revisits.MIN_INTERVAL
# Longest time between two visits of a url, in seconds (no url is left unvisited longer).
TIANWANG_MAX_REVISIT = _revisits.MAX_INTERVAL
# Fetches a day the "optimal" and "uniform" policies share out; 0 = one per url a day.
TIANWANG_REVISIT_BUDGET = 0
# Revisit classes by the page-types paper's page types: entry pages F1, stable pages F2
# (refresh spider).
TIANWANG_PAGE_TYPES = True
# In-host block links that make a page that is never an entry page a link page (type 3).
TIANWANG_LINK_PAGE_MIN_LINKS = 10

# --- verticals (tianwang/verticals.py, applied by tianwang/addon.py) ---
# The vertical (a named settings profile, tianwang/verticals.py) of this crawl; "" for none.
TIANWANG_VERTICAL = ""
# More verticals, {"name": {"SETTING": value, ...}}, beside (or replacing) the built-in ones.
TIANWANG_VERTICALS: dict[str, dict] = {}
# Seeds used when the spider gets no -a seeds (a file, or url,url,...); "" for none.
TIANWANG_SEEDS = ""
# Domains the crawl keeps to, each with its subdomains (Scrapy's offsite filter); [] = any.
TIANWANG_ALLOWED_DOMAINS: list[str] = []

# --- distributed crawl (issue 7, docs/design.md section 10) ---
# Redis shared by the crawl's nodes (redis://host:port/db); "" crawls locally, alone.
TIANWANG_REDIS_URL = ""
# Name of the shared crawl in Redis; nodes with the same Redis and job crawl together ("" = spider).
TIANWANG_REDIS_JOB = ""
# TIANWANG_REDIS_URL is a node of a Redis Cluster: each shard's keys live on the master of its
# slot, and each write reaches its replica before the node acts on it (a failover loses none).
TIANWANG_REDIS_CLUSTER = False
# Shards of the job's keys (hash tags), each a bucket group on its own slot, so that a
# cluster's masters share one job; 0 = one per master on a cluster, one on a redis-server.
# Chosen by the job's first node: a later node asking another count stops at start.
TIANWANG_REDIS_SHARDS = 0
# This node's name, unique in the job; "" = hostname-pid.
TIANWANG_NODE_NAME = ""
# Buckets hosts are hashed into (phase one); the bucket table maps each to a node (phase two).
TIANWANG_BUCKETS = 1024
# Seconds without a heartbeat before a node counts as dead and its requests go to the others.
TIANWANG_LEASE_SECONDS = 30
# Requests a node takes from its Redis queue in one call: about what it holds.
TIANWANG_REDIS_BATCH = 16
# Nodes that must have joined before any takes a request, so that no host changes node (and
# has robots.txt fetched again) as the crawl starts; 1 = each node starts at once.
TIANWANG_REDIS_QUORUM = 1
# Requests of a node's queue kept as they are in Redis; past it the worst are packed, a
# thousand to a compressed chunk, and come back as the queue drains; 0 = no bound.
TIANWANG_REDIS_WINDOW = 100_000
# Seconds a node waits for a Redis that stopped answering (going on with what it holds) before
# it stops with status 1; 0 = waits as long as it takes.
TIANWANG_REDIS_OUTAGE_SECONDS = 600
# Processes of this machine running the crawl (one core each), sharing a redis-server the
# crawl command starts (or TIANWANG_REDIS_URL's); 1 = one process, no Redis.
TIANWANG_PROCESSES = 1

# --- collection building: the validate spider, D1 -> D2 (the CWT200g thesis's wget -T 20 -t 2) ---
# Seconds a homepage may go without a byte, wget's -T (sets TIANWANG_IDLE_TIMEOUT for validate).
TIANWANG_VALIDATE_TIMEOUT = 20
# Seconds a homepage that keeps trickling may take in all (sets DOWNLOAD_TIMEOUT for validate).
TIANWANG_VALIDATE_MAX_SECONDS = 300
# Fetches of a homepage in all, the first included, as wget -t counts (seed 004: -t 2);
# a failure or 5xx/408/429 answer is retried up to tries - 1 times (sets RETRY_TIMES), a
# refused connection or a name that does not resolve never (wget's fatal errors).
TIANWANG_VALIDATE_TRIES = 2
# Homepages fetched at once (sets CONCURRENT_REQUESTS for validate; seed 004 ran 200 threads).
TIANWANG_VALIDATE_CONCURRENCY = 200

# --- the protocols of real sites (robots.txt, sitemaps, back-off) ---
# Longest Crawl-delay honoured, in seconds: a longer one in a robots.txt is cut to this.
TIANWANG_MAX_CRAWL_DELAY = 30
# Seconds a host's robots.txt is kept before it is fetched again (RFC 9309: at most a day).
TIANWANG_ROBOTS_TTL = 86400
# Seconds before asking again for a robots.txt that answered 429/5xx or not at all ...
TIANWANG_ROBOTS_RETRY_DELAY = 60
# ... and how many times; then the waiting request is dropped (unavailable = disallow all).
TIANWANG_ROBOTS_RETRIES = 2
# Longest pause, in seconds, a 429/503 Retry-After gets; a longer one is cut to this.
TIANWANG_MAX_RETRY_AFTER = 600
# Times one request is sent back after a pause before it goes to Scrapy's retries as usual.
TIANWANG_BACKOFF_MAX_PAUSES = 5
# Crawl the urls of each host's sitemaps (robots.txt Sitemap: lines and /sitemap.xml).
TIANWANG_SITEMAPS = False
# Urls taken from one sitemap at most (the sitemaps protocol's own limit is 50,000).
TIANWANG_SITEMAP_MAX_URLS = 50000
# Sitemap files fetched per host at most (index files and the sitemaps they list).
TIANWANG_SITEMAP_MAX_FILES = 50
# Nesting of sitemap indexes followed: 1 = an index's sitemaps, not an index in an index.
TIANWANG_SITEMAP_MAX_DEPTH = 2

# --- crawler traps (tianwang/middlewares/traps.py, tianwang/urls.py) ---
# Session ids dropped from every link before dedup (case-insensitive; [] keeps them): `name`
# (any value), `prefix*`, `name=REGEX` (a value REGEX matches whole); a name also as /name/<id>/.
TIANWANG_SESSION_PARAMS = [
    "jsessionid", "phpsessid", "aspsessionid*", "sessionid", "session_id",
    "sid=[0-9a-z]{16}[0-9a-z]*", "cfid", "cftoken", "zenid", "oscsid", "sessid",
    "s=[0-9a-f]{32}", "utm_*",
]
# Longest url requested, in characters (a url past it is refused as url_length); 0 = none.
TIANWANG_MAX_URL_LENGTH = 2048
# A path segment (or a run of up to 3) repeated more than this in a row (/a/a/a/...) is
# refused as repeated_path; 0 = never. Not 2 (Heritrix's): date paths (/2003/01/01/) and
# the test web's random directory names repeat up to 3 times in pages that exist.
TIANWANG_MAX_PATH_REPEATS = 5
# Requests per host in one crawl process (robots.txt and retries not counted); past it,
# refused as host_budget; 0 = no budget. Bounds a calendar's endless "next month".
TIANWANG_MAX_HOST_PAGES = 10000

# --- bounds per crawl: what one page, host or domain may take (tianwang/frontier/limits.py) ---
# Links taken from one page, in document order (Heritrix keeps 6,000); 0 = all.
TIANWANG_MAX_PAGE_LINKS = 6000
# Requests the frontier holds at once (about 300 bytes each in memory, less under JOBDIR);
# a link past it is refused (pending) and taken when linked again later; 0 = no bound.
TIANWANG_MAX_PENDING = 1_000_000
# Requests of one host the frontier holds at once (refused as host_pending); 0 = no bound.
TIANWANG_MAX_HOST_PENDING = 10_000
# Hosts of one registered domain (the Public Suffix List's eTLD+1) a crawl takes requests
# for: a subdomain farm's next host is refused as domain_hosts; 0 = no bound.
TIANWANG_MAX_DOMAIN_HOSTS = 1000
# Requests of one registered domain the frontier takes over the crawl (domain_pages); 0 = all.
TIANWANG_MAX_DOMAIN_PAGES = 100_000
# Bytes of a cookie's name and value kept at most (browsers: 4096).
TIANWANG_MAX_COOKIE_SIZE = 4096
# Cookies kept per registered domain (Chrome: 180); a new one past it is not kept.
TIANWANG_COOKIES_PER_DOMAIN = 180
# Bytes of the Cookie header sent (Apache's and nginx's default limit; longer gets a 400).
TIANWANG_MAX_COOKIE_HEADER = 8190
# Bytes of cookies kept in all; past it the domains used longest ago are forgotten.
TIANWANG_MAX_COOKIE_BYTES = 16 * 1024 * 1024
# --- DNS (tianwang/resolver.py) ---
# The crawl's resolver: asks the name servers itself, any number of names at once, and keeps
# each answer for its DNS TTL (Scrapy's runs getaddrinfo in 10 threads and keeps no TTL).
TWISTED_DNS_RESOLVER = "tianwang.resolver.CachingResolver"
# Names whose answers are kept (least recently used first out): every host of a large crawl.
DNSCACHE_SIZE = 100_000
# Name servers asked ("10.0.0.2", "10.0.0.2:5353", "[::1]:53"); [] = those of /etc/resolv.conf.
TIANWANG_DNS_SERVERS: list[str] = []
# Names answered from this hosts(5) file first (read again when it changes); "" = none.
TIANWANG_DNS_HOSTS_FILE = "/etc/hosts"
# Seconds an address is kept at least, whatever its TTL (Heritrix keeps one 6 hours).
TIANWANG_DNS_MIN_TTL = 3600
# Seconds a name that did not resolve (no such name, no address, no answer) stays unresolved.
TIANWANG_DNS_FAILURE_TTL = 300

# Timeouts in a row (no answer between) after which a host is given up: its later requests
# fail at once as tianwang/error/timeout_host (tianwang/middlewares/failures.py). 0 = never.
TIANWANG_MAX_HOST_TIMEOUTS = 3

# Kept-alive connections left idle at most, over all hosts (tianwang/connections.py); past it
# the one idle longest is closed. 0 = none kept (Connection: close).
TIANWANG_IDLE_CONNECTIONS = 256

# --- setting names (tianwang/config/names.py) ---
# Names of your own components' settings that lie a typo or two from a Scrapy or tianwang
# setting (USER_AGENTS beside USER_AGENT): accepted, where a misspelt name stops the crawl.
TIANWANG_EXTRA_SETTINGS = []
