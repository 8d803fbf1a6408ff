"""Scrapy settings of the tianwang project, and the default of every TIANWANG_* setting.

The Scrapy values below are polite defaults for the real web (robots.txt obeyed, one
connection and one second per host); the demo, the tests and the benchmarks set their own.
"""

BOT_NAME = "tianwang"
SPIDER_MODULES = ["tianwang.spiders"]
NEWSPIDER_MODULE = "tianwang.spiders"
USER_AGENT = "tianwang/0.1 (research crawler; Scrapy)"
LOG_LEVEL = "INFO"

# Politeness (DESIGN.md section 3).
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 1
DOWNLOAD_DELAY = 1.0

# Breadth first, as the CWT200g per-host crawl (seed 004): FIFO queues, shallow levels first.
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
# The importance-first frontier (seed 000, DESIGN.md section 3). DEPTH_PRIORITY above only
# orders requests of equal weight there; the two queue settings apply to Scrapy's scheduler.
SCHEDULER = "tianwang.frontier.scheduler.FrontierScheduler"
EXTENSIONS = {
    # Checks the frontier's settings before the engine starts (a bad one stops the crawl with
    # one message naming it; Scrapy builds the scheduler too late for that).
    "tianwang.frontier.config.FrontierSettingsCheck": 0,
}

# A page that still answers 5xx after retries is the web's fault, not the crawl's: it is
# counted in stats (retry/max_reached) without an ERROR line per page.
RETRY_GIVE_UP_LOG_LEVEL = "INFO"

# Scrapy 2.19's RemoteControl extension and the telnet console both open a port that runs
# code; a crawler on a shared machine keeps them shut.
REMOTE_CONTROL_ENABLED = False
TELNETCONSOLE_ENABLED = False

DOWNLOADER_MIDDLEWARES = {
    # Before RobotsTxtMiddleware (100): a refused host gets no request at all, not even
    # one for its robots.txt.
    "tianwang.middlewares.hostfilter.HostFilterMiddleware": 90,
    # Site partition (-a partition= -a share=): a url of another share's key path is refused
    # before the host filter and robots.txt see it; a no-op for a crawl without a share.
    "tianwang.middlewares.partition.PartitionMiddleware": 85,
    # Before Scrapy's HttpProxyMiddleware (750), which reads request.meta["proxy"].
    "tianwang.middlewares.proxy.ProxyMiddleware": 740,
    # Nearest the downloader, so its process_exception turns a stopped download into
    # IgnoreRequest before any other middleware sees it.
    "tianwang.middlewares.contenttype.ContentTypeMiddleware": 950,
    # Counts and logs the certificate problems the https handler flagged on a response.
    "tianwang.middlewares.tlscheck.TLSCheckMiddleware": 960,
}
# https through a handler that checks certificates and fetches anyway (tianwang/tlscheck.py).
DOWNLOAD_HANDLERS = {"https": "tianwang.tlscheck.TLSCheckDownloadHandler"}
ITEM_PIPELINES = {
    # Change statistics before dedup: every visit is recorded, even of a page not stored
    # again; off unless TIANWANG_CHANGES (the refresh spider turns it on).
    "tianwang.pipelines.changes.ChangeStatsPipeline": 650,
    # Dedup first (a copy is never stored); the link graph only for what was stored.
    "tianwang.pipelines.dedup.MD5DedupPipeline": 700,
    "tianwang.pipelines.storage.TianwangStoragePipeline": 800,
    # In a crawl shared through Redis: mark the page stored at once (off in a local crawl).
    "tianwang.distributed.pipelines.StoredMarkPipeline": 810,
    "tianwang.pipelines.linkgraph.LinkGraphPipeline": 900,
}

# --- tianwang settings: every default lives here ------------------------------------------

# Root of the record tree: <dir>/data_<k>/<host>/page.dat.
TIANWANG_DATA_DIR = "data"
# Store DATA zlib-compressed (with unzip-length), as CWT200g did; False writes the plain form.
TIANWANG_COMPRESS = True
# zlib level, 1 (fastest) to 9 (smallest). Compression is most of what storing costs: on the
# test web level 1 took 128 us a page against 207 at zlib's default 6, for 5% more bytes.
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
# Largest body fetched, in bytes; a longer one is cut off, counted and never stored.
TIANWANG_MAX_PAGE_BYTES = 10 * 1024 * 1024
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
# Without a proxy, refuse hosts resolving to private, loopback, link-local or multicast IPs.
TIANWANG_BLOCK_PRIVATE = True

# URL weight (seed 000): start weight, less 1 per directory level, "?" and "&" in the url.
TIANWANG_INITIAL_WEIGHT = 10
# Words (search pages, proxies, gateways) that cost a url weight each time they occur in it.
TIANWANG_PENALTY_WORDS = ["search", "proxy", "gate"]
# Weight lost per occurrence of a penalty word (case-insensitive, host included).
TIANWANG_PENALTY_WORD_WEIGHT = 2
# A directory's default documents: a url ending in one (no query) weighs as its directory,
# so /news/index.html (depth 2) is fetched with /news/ (depth 1), not after every depth-1
# page of its host. [] = seed 000's weight exactly (/news/index.html weighs 8, /news/ 9).
TIANWANG_INDEX_PAGES = [
    "index.html", "index.htm", "index.shtml", "index.shtm", "index.php", "index.asp",
    "index.aspx", "index.jsp", "default.htm", "default.html", "default.asp", "default.aspx",
]
# Topical crawl (seed 000): words whose presence in a page's text boosts its links; [] = off.
TIANWANG_KEYWORDS: list[str] = []
# Weight added to every link of a page whose text holds a keyword (>= 0).
TIANWANG_KEYWORD_BOOST = 2

# Frontier picks (seed 000): this many sorted picks (highest weight first), then ...
TIANWANG_SORTED_PICKS = 1
# ... this many random picks (any pending request, uniformly), repeating; both >= 1.
TIANWANG_RANDOM_PICKS = 1
# Among urls of equal weight, hosts take turns for their first this many urls (each host's
# k-th before any host's k+1-th), then first come first served; 0 = first come first served
# throughout, so the host whose links came first has its connection spent on all of them.
TIANWANG_HOST_TURNS = 16
# Seed of the random picks, for a repeatable order; None draws one from the system.
TIANWANG_FRONTIER_SEED = None
# Urls the request Bloom filter is sized for: 10 million at 1e-6 take 36 MB of memory.
TIANWANG_EXPECTED_URLS = 10_000_000
# False positive rate of that filter while it holds at most TIANWANG_EXPECTED_URLS urls.
TIANWANG_BLOOM_ERROR_RATE = 1e-6

# --- change frequency and revisits (issue 6, DESIGN.md sections 4 and 8) ---
# Record every visit (Date, MD5, content hash, ETag, Last-Modified) in <data dir>/changes.sqlite.
TIANWANG_CHANGES = False
# An entry page (subroot or path url) has at least this many in-host content/navigation links ...
TIANWANG_ENTRY_MIN_LINKS = 20
# ... of which at least this share (0..1) were not there at its previous visit.
TIANWANG_ENTRY_NEW_SHARE = 0.1
# The refresh spider's policy: "two-class" (seed 001's F1/F2), "optimal" or "uniform".
TIANWANG_REVISIT_POLICY = "two-class"
# Shortest time between two visits of a url, in seconds (caps every policy's frequency).
TIANWANG_MIN_REVISIT = 3600
# Longest time between two visits of a url, in seconds (no url is left unvisited longer).
TIANWANG_MAX_REVISIT = 30 * 86400
# Fetches a day the "optimal" and "uniform" policies share out; 0 = one per url a day.
TIANWANG_REVISIT_BUDGET = 0

# --- verticals and the Tianwang add-on (issue 10: tianwang/verticals.py, tianwang/addon.py) ---
# The project runs the stack through its own add-on, as any other Scrapy project can; the
# add-on takes its defaults from this file and applies the chosen vertical over them.
ADDONS = {"tianwang.addon.Tianwang": 0}
# The vertical (a named settings profile, tianwang/verticals.py) of this crawl; "" for none.
TIANWANG_VERTICAL = ""
# More verticals, {"name": {"SETTING": value, ...}}, beside (or replacing) the built-in ones.
TIANWANG_VERTICALS: dict[str, dict] = {}
# Seeds used when the spider gets no -a seeds (a file, or url,url,...); "" for none.
TIANWANG_SEEDS = ""
# Domains the crawl keeps to, each with its subdomains (Scrapy's offsite filter); [] = any.
TIANWANG_ALLOWED_DOMAINS: list[str] = []

# --- distributed crawl (issue 7, DESIGN.md section 10) ---
# Redis shared by the crawl's nodes (redis://host:port/db); "" crawls locally, alone.
TIANWANG_REDIS_URL = ""
# Name of the shared crawl in Redis; nodes with the same Redis and job crawl together ("" = spider).
TIANWANG_REDIS_JOB = ""
# This node's name, unique in the job; "" = hostname-pid.
TIANWANG_NODE_NAME = ""
# Buckets hosts are hashed into (phase one); the bucket table maps each to a node (phase two).
TIANWANG_BUCKETS = 1024
# Seconds without a heartbeat before a node counts as dead and its requests go to the others.
TIANWANG_LEASE_SECONDS = 30
# Requests a node takes from its Redis queue in one call (and pushes in one call, at most).
TIANWANG_REDIS_BATCH = 64

# --- collection building: the validate spider, D1 -> D2 (issue 9; seed 004's wget -T 20 -t 2) ---
# Seconds a homepage may take (sets DOWNLOAD_TIMEOUT for the validate spider).
TIANWANG_VALIDATE_TIMEOUT = 20
# Retries of a homepage that failed or answered 5xx/408/429 (sets RETRY_TIMES for validate).
TIANWANG_VALIDATE_RETRIES = 2
# Homepages fetched at once (sets CONCURRENT_REQUESTS for validate; seed 004 ran 200 threads).
TIANWANG_VALIDATE_CONCURRENCY = 200
