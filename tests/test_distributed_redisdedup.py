"""The shared crawl's MD5 claims (tianwang/distributed/redisdedup.py) on a real redis-server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.aio import aio, opened
from tests.redis_server import RedisServer
from tianwang.distributed.redisdedup import MD5Claims, RedisAway

MD5 = bytes(range(16))


@aio
async def test_a_claim_in_an_outage_gives_up_at_the_bound_not_after_the_clients_retries(
        tmp_path: Path) -> None:
    """Once Redis is away, a batch tried again is given what is left of the outage: the
    client's own retries (about 30 s) would carry each try past TIANWANG_REDIS_OUTAGE_SECONDS,
    and a node told to stop after 2 s would hold its pages for half a minute more."""
    server = RedisServer(tmp_path / "redis").start()
    try:
        claims = opened(MD5Claims(server.url, ["job"], outage_seconds=2.0))
        assert await claims.claim(MD5, "http://a.example/") == "http://a.example/"
        server.stop()
        claims.outage.begin(time.monotonic())  # an earlier batch met the outage
        began = time.monotonic()
        with pytest.raises(RedisAway):
            await claims.claim(MD5, "http://b.example/")
        assert time.monotonic() - began < 15  # 31 s when a try waited out the retries
    finally:
        server.stop()
