"""Online MD5 dedup for a crawl shared through Redis: a body stored by any node is stored once.

The add-on puts it in place of the local MD5DedupPipeline when TIANWANG_REDIS_URL is set.
The local pipeline's index (md5.sqlite) knows one data directory; the nodes of a shared crawl
write several (one a machine), or one directory from several processes (TIANWANG_PROCESSES),
so the index is a hash in Redis, `tianwang:{<job>}:md5`: body MD5 -> the url that claimed it
(split over the job's shards by the MD5's first bytes, `tianwang:{<shard tag>}:md5`, when it
has several: shards.py).

A page claims its body's MD5 (HSETNX) before it is stored, so of two nodes fetching the same
body at once exactly one stores it. A page whose body another url claimed is dropped (stats
`tianwang/dedup/duplicates`) and (md5, its url, the kept url) goes to the node's
`<data dir>/mirrors.tsv`, one line a write, so nodes sharing a directory append whole lines.
A page whose own url holds the claim (fetched again after a node died before its ack) is
stored: the Redis scheduler's stored mark, not this index, says whether it was stored.

What can be lost: a node killed between the claim and the record leaves the body claimed by a
url not stored; the url's lease goes back to the queue, a node fetches it again, finds its
own claim and stores it. Only when that fetch fails is the body absent from the tree while
its mirrors were dropped, the same window the local pipeline has between check and commit.

Memory in Redis: one hash field (16 bytes of MD5) and one value (the url) a stored page,
about 130 bytes with urls of 50 (MEMORY USAGE of 200,000).

The claims go in batches, without blocking the crawl: an item waits (process_item is a
coroutine) while one batch is out, and the items that came meanwhile go in the next, one
script call (lua/claim.lua) for all. A blocking round trip a page cost a node a tenth of its
time (profiled: bench/RESULTS-archive.md, issue 19).

Redis away: a batch whose round trip fails (after the client's own retries) is sent again
every PROBE_INTERVAL seconds (the clock is outage.py's), its items waiting, so a page fetched
during an outage is stored once Redis is back; its request is not acked before. Past
TIANWANG_REDIS_OUTAGE_SECONDS the items are dropped without a record (not acked either:
another node fetches them again), and the pipeline says how many as it closes.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError
from scrapy.exceptions import DropItem, NotConfigured

from tianwang.config import get_bool, get_nonempty_str
from tianwang.config.shared_crawl import RedisConfig
from tianwang.distributed.connection import connect_async, job_tags
from tianwang.distributed.faults import fault_of
from tianwang.distributed.outage import PROBE_INTERVAL, Outage
from tianwang.distributed.scripts import text
from tianwang.distributed.shards import md5_shard, prefix_of
from tianwang.formats.mirrors import MirrorTable
from tianwang.items import PageItem

if TYPE_CHECKING:
    import redis.asyncio
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class RedisAway(Exception):
    """Redis did not answer a claim within TIANWANG_REDIS_OUTAGE_SECONDS."""


class MD5Claims:
    """The shared crawl's index of stored bodies: md5 -> the url that claimed it first."""

    def __init__(self, url: str, tags: list[str], cluster: bool = False,
                 outage_seconds: float = 0, stats: Any = None) -> None:
        self.url = url
        self.stats = stats  # round trips counted there, for the live view
        self.outage = Outage(outage_seconds)  # how long a batch is sent again; 0: no bound
        self.keys = [prefix_of(tag) + "md5" for tag in tags]  # one a shard
        self.cluster = cluster
        # a client a shard on a cluster (each of its slot's master), one on a redis-server
        self.clients: dict[int, redis.asyncio.Redis] = {}
        self.scripts: dict[int, Any] = {}  # the claim script, registered with each client
        self._waiting: list[tuple[bytes, str, asyncio.Future[str]]] = []
        self._sending = False

    async def claim(self, md5: bytes, url: str) -> str:
        """Claim md5 for url; the url holding the claim (url itself if it won, or held it)."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting.append((md5, url, future))
        if not self._sending:
            self._sending = True
            asyncio.get_running_loop().create_task(self._send())
        return await future

    async def _send(self) -> None:
        """Batches until none waits: one round trip each, one batch out at a time."""
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                try:
                    owners = await self._claim_until_answered(
                        [(md5, url) for md5, url, _ in batch])
                except Exception as error:  # the crawl's error handling takes it, per item
                    for _md5, _url, future in batch:
                        future.set_exception(error)
                    continue
                for (_md5, url, future), owner in zip(batch, owners, strict=True):
                    future.set_result(owner.decode("utf-8", "surrogateescape") if owner else url)
        finally:
            self._sending = False

    async def _claim_until_answered(self, claims: list[tuple[bytes, str]]) -> list[bytes | None]:
        """_claim_all, sent again while Redis is away or full (HSETNX again: no harm);
        RedisAway once it has been so for the bound (counted over batches: the next fails at
        once)."""
        while not self.outage.over(time.monotonic()):
            try:
                owners = await self._try(claims)
            except (RedisError, TimeoutError) as error:
                if isinstance(error, RedisError) and fault_of(error) is None:
                    raise  # neither away nor full: the item's error
                self.outage.begin(time.monotonic())
                if not self.outage.over(time.monotonic()):
                    await asyncio.sleep(PROBE_INTERVAL)
                continue
            self.outage.end(time.monotonic())
            return owners
        raise RedisAway(f"Redis unreachable for {self.outage.bound} s")

    async def _try(self, claims: list[tuple[bytes, str]]) -> list[bytes | None]:
        """_claim_all; while Redis is away, given no longer than the outage has left: the
        client's own ~30 s of retries would carry a try far past the bound."""
        if not self.outage.down or not self.outage.bound:
            return await self._claim_all(claims)
        left = self.outage.bound - self.outage.lasted(time.monotonic())
        return await asyncio.wait_for(self._claim_all(claims), max(left, 0.1))

    async def _claim_all(self, claims: list[tuple[bytes, str]]) -> list[bytes | None]:
        """Each shard's claims in one pipeline, the shards' at once."""
        if len(self.keys) == 1:
            return await self._claim_in(0, claims)
        by_shard: dict[int, list[int]] = {}
        for i, (md5, _url) in enumerate(claims):
            by_shard.setdefault(md5_shard(md5, len(self.keys)), []).append(i)
        owners: list[bytes | None] = [None] * len(claims)
        replies = await asyncio.gather(*(self._claim_in(shard, [claims[i] for i in positions])
                                         for shard, positions in by_shard.items()))
        for positions, shard_owners in zip(by_shard.values(), replies, strict=True):
            for i, owner in zip(positions, shard_owners, strict=True):
                owners[i] = owner
        return owners

    async def _claim_in(self, shard: int, claims: list[tuple[bytes, str]]) -> list[bytes | None]:
        """One script call for the batch (lua/claim.lua): an HSETNX and an HGET a page cost
        the node more to write and read than Redis took to answer them."""
        holders = await self._script(shard)(keys=[self.keys[shard]],
                                            args=[part for claim in claims for part in claim])
        if self.stats is not None:
            self.stats.inc_value("tianwang/redis/round_trips/dedup")
        return holders  # type: ignore[no-any-return]

    def _script(self, shard: int) -> Any:
        """The claim script, registered with the shard's client (loaded again by the client
        after a Redis restart)."""
        index = shard if self.cluster else 0
        if index not in self.scripts:
            self.scripts[index] = self._client(shard).register_script(text("claim"))
        return self.scripts[index]

    def _client(self, shard: int) -> redis.asyncio.Redis:
        """Made in the crawl's own event loop, at first use."""
        index = shard if self.cluster else 0
        if index not in self.clients:
            self.clients[index] = connect_async(self.url, self.keys[shard] if self.cluster
                                                else None)
        return self.clients[index]

    async def close(self) -> None:
        for client in self.clients.values():
            await client.aclose()


class RedisMD5DedupPipeline:
    def __init__(self, claims: MD5Claims, data_dir: str) -> None:
        self.claims = claims
        self.data_dir = Path(data_dir)
        self.mirrors: MirrorTable | None = None
        self.stats: Any = None
        self.unclaimed = 0  # pages dropped as Redis stayed away

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisMD5DedupPipeline:
        settings = crawler.settings
        if not get_bool(settings, "TIANWANG_DEDUP"):
            raise NotConfigured  # switched off on purpose
        config = RedisConfig.from_settings(settings, getattr(crawler.spidercls, "name", ""))
        claims = MD5Claims(config.url, job_tags(config), config.cluster, config.outage_seconds,
                           crawler.stats)
        pipeline = cls(claims, get_nonempty_str(settings, "TIANWANG_DATA_DIR"))
        pipeline.stats = crawler.stats
        return pipeline

    def open_spider(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)

    async def close_spider(self) -> None:
        if self.mirrors is not None:
            self.mirrors.close()
        await self.claims.close()
        if self.unclaimed:
            logger.error("%d pages fetched while Redis was unreachable were not stored here "
                         "(not acked: another node fetches them again)", self.unclaimed)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        md5 = hashlib.md5(item.body).digest()
        try:
            kept = await self.claims.claim(md5, item.url)
        except RedisAway:
            self.unclaimed += 1
            self.stats.inc_value("tianwang/redis/unclaimed")
            raise DropItem("Redis unreachable: not stored here", log_level="DEBUG") from None
        if kept == item.url:
            return item
        self.stats.inc_value("tianwang/dedup/duplicates")
        if self.mirrors is None:
            self.mirrors = MirrorTable(self.data_dir)
        self.mirrors.add(md5.hex(), item.url, kept)
        # DEBUG, not Scrapy's default WARNING: a mirror is normal, not a problem per page.
        raise DropItem(f"same body as {kept}", log_level="DEBUG")
