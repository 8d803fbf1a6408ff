"""A node's queue past its window: packed, in Redis (docs/design.md section 10).

A node's queue in a shard is kept near a size (TIANWANG_REDIS_WINDOW, split over the shards):
past it, its worst requests go a thousand at a time into a chunk (chunks.py) held in the hash
``chunks`` and listed in the zset ``pack:<node>`` by the best score in it (lua/pack.lua takes
them out of the queue only if each is still there at the score read); under half of it, the
best chunk comes back to the owners' queues (lua/unpack.lua, once: the chunk's HDEL decides
between two nodes). A chunk that does not decode is set aside in ``badchunks``. No Scrapy
import here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tianwang.distributed.chunks import ChunkError, pack_chunk, unpack_chunk
from tianwang.distributed.scripts import Scripts

CHUNK = 1000  # requests a chunk
CHUNKS_A_CALL = 100  # at most this many chunks packed or unpacked by one keep() call


@dataclass(frozen=True)
class Window:
    packed: int  # requests packed into chunks by this call
    unpacked: int  # requests put back into the queues
    chunks: int  # chunks this node's queue still has packed
    damaged: tuple[str, ...] = ()  # chunks that did not decode, set aside in badchunks


class QueueWindow:
    def __init__(self, client: Any, scripts: Scripts, prefix: str, node: str) -> None:
        self.client = client
        self.scripts = scripts
        self.prefix = prefix
        self.node = node

    def key(self, name: str) -> str:
        return self.prefix + name

    async def keep(self, size: int) -> Window:
        """Keep this node's queue in Redis near `size` requests (0: unbounded, every chunk
        comes back): past it, the worst go into compressed chunks, down to 3/4 of it; under
        half of it, chunks come back, the best first."""
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.zcard(self.key(f"q:{self.node}"))
            pipe.zcard(self.key(f"pack:{self.node}"))
            queued, chunks = await pipe.execute()
        packed = unpacked = calls = 0
        damaged: list[str] = []
        while size and queued > size and calls < CHUNKS_A_CALL:
            moved = await self._pack_worst(min(CHUNK, queued - size * 3 // 4))
            if not moved:  # some taken or raised meanwhile: the next call tries again
                break
            queued -= moved
            packed += moved
            chunks += 1
            calls += 1
        while chunks and (not size or queued < size // 2) and calls < CHUNKS_A_CALL:
            moved = await self._unpack_best(damaged)  # (some may go to other nodes' queues)
            queued += moved
            unpacked += moved
            chunks -= 1
            calls += 1
        return Window(packed, unpacked, chunks, tuple(damaged))

    async def _pack_worst(self, count: int) -> int:
        """Pack the `count` worst requests of this node's queue into one chunk."""
        worst = await self.client.zrange(self.key(f"q:{self.node}"), -count, -1, withscores=True)
        members = [member for member, _score in worst]
        blobs = await self.client.hmget(self.key("req"), members) if members else []
        entries = list(zip(blobs, (m.decode("ascii") for m in members),
                           (score for _m, score in worst), strict=True))
        if not entries or any(blob is None for blob, _m, _s in entries):
            return 0
        args: list[object] = [self.prefix, self.node, pack_chunk(entries)]
        for _blob, name, score in entries:
            args += [name, repr(score)]
        return int(await self.scripts.call("pack", self.key("seq"), args))

    async def _unpack_best(self, damaged: list[str]) -> int:
        """Put the chunk of best score back into the queues (to each request's owner); one
        that does not decode is set aside and its name added to `damaged`."""
        key = self.key(f"pack:{self.node}")
        best = await self.client.zrange(key, 0, 0)
        if not best:
            return 0
        data = await self.client.hget(self.key("chunks"), best[0])
        if data is None:  # unpacked by another: a name left behind
            await self.client.zrem(key, best[0])
            return 0
        try:
            entries = unpack_chunk(data)
        except ChunkError:
            await self._set_aside(best[0], data)
            damaged.append(best[0].decode("ascii", "replace"))
            return 0
        args: list[object] = [self.prefix, self.node, best[0]]
        for member, score, blob in entries:
            args += [member, score, blob]
        return int(await self.scripts.call("unpack", self.key("seq"), args))

    async def _set_aside(self, name: bytes, data: bytes) -> None:
        """A chunk that does not decode (damaged, or written by something else) goes to the
        hash ``badchunks``, kept for a look, so it stops neither the crawl's end nor the
        other chunks."""
        async with self.client.pipeline() as pipe:
            pipe.hset(self.key("badchunks"), name, data)
            pipe.hdel(self.key("chunks"), name)
            pipe.zrem(self.key(f"pack:{self.node}"), name)
            await pipe.execute()

    async def packed_requests(self, node: str | None = None) -> int:
        """Requests of a node's queue packed in chunks."""
        names = await self.client.zrange(self.key(f"pack:{self.node if node is None else node}"),
                                         0, -1)
        return sum(int(name.split(b":")[1]) for name in names)
