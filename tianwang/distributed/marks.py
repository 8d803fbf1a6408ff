"""Stored marks: a leased request whose page is written is said so in Redis, before its ack.

A node killed between storing a page and its ack leaves its lease, which comes back to the
queues when the node is reaped; the node that fetches the url again finds the mark (the hash
``stored``, member -> 1) and parses the page for its links without storing it twice.

So a mark is written to the socket in the very call that says the page is stored, on a
connection of its own, without waiting for the replies of the marks before it (a round trip
a page cost a crawl 4%; a mark sent from a task, or after the reply of the one before, left
tens of pages stored and unmarked at a kill under load). It goes through the StreamWriter
of redis-py's asyncio connection, the one private attribute of redis-py used here
(tests/test_distributed_marks.py pins it); before that connection is up, marks wait for the
writer task. The next sync waits for every mark's reply before it sends any ack (settle):
a mark always reaches Redis before the ack that deletes it. A mark that could not be sent
(Redis away, full) is kept, and goes at the head of the next sync's pipeline, still before
its acks. The window left is a kill between a record's write and that call. No Scrapy
import here.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from typing import Any


class StoredMarks:
    """The marks of one shard's ``stored`` hash, as one node sends them."""

    def __init__(self, client: Any, key: str) -> None:
        self.client = client
        self.key = key
        self._queued: list[str] = []  # for the writer's next turn
        self._unread: deque[list[str]] = deque()  # written, their replies not read yet
        self._unsent: list[str] = []  # for the head of the next sync
        self._wake = asyncio.Event()
        self._writer: asyncio.Future | None = None
        self._reader: asyncio.Future | None = None
        self._connection: Any = None

    def add(self, member: str, send: bool = True) -> None:
        """Mark member stored; send=False (Redis known to be away or full) keeps it for the
        next sync, rather than wait out the client's retries."""
        if not send:
            self._unsent.append(member)
            return
        if not self._queued and self._write_now(member):
            return
        self._queued.append(member)
        self._wake.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write())

    def _write_now(self, member: str) -> bool:
        """Write the mark to the socket in this very call, as the page's record was written
        (a kill then cannot come between them); False when no connection is up yet."""
        writer = getattr(self._connection, "_writer", None)  # redis-py's StreamWriter
        if writer is None or writer.is_closing():
            return False
        writer.writelines(self._connection.pack_command("HSET", self.key, member, 1))
        self._unread.append([member])
        if self._reader is None or self._reader.done():
            self._reader = asyncio.ensure_future(self._read(self._connection))
        return True

    async def open(self) -> None:
        """Connect now, so that the first marks are written at once too."""
        if self._connection is None:
            self._connection = self.client.connection_pool.make_connection()
            await self._connection.connect()

    async def _write(self) -> None:
        """Write the marks as they come, one HSET for those of a loop turn, without waiting
        for the replies of those before (the reader reads them)."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queued:
                batch, self._queued = self._queued, []
                try:
                    if self._connection is None:
                        self._connection = self.client.connection_pool.make_connection()
                        await self._connection.connect()
                    pairs = itertools.chain.from_iterable((member, 1) for member in batch)
                    await self._connection.send_command("HSET", self.key, *pairs)
                except Exception:  # noqa: BLE001 - whatever it was, the next sync sends them
                    self._unsent += batch
                    self._lost()
                    continue
                self._unread.append(batch)
                if self._reader is None or self._reader.done():
                    self._reader = asyncio.ensure_future(self._read(self._connection))

    async def _read(self, connection: Any) -> None:
        while self._unread and connection is self._connection:
            try:
                await connection.read_response()
            except Exception:  # noqa: BLE001 - the marks not confirmed go again, by the sync
                self._lost()
                return
            self._unread.popleft()

    def _lost(self) -> None:
        """The connection broke: the marks not confirmed go with the next sync (an HSET of
        the same field again: no harm if they had arrived)."""
        while self._unread:
            self._unsent += self._unread.popleft()
        connection, self._connection = self._connection, None
        if connection is not None:
            asyncio.ensure_future(_disconnect(connection))

    async def settle(self) -> None:
        """Every mark queued is written and has its reply (or is back among the unsent)."""
        while self._queued or self._unread:
            await asyncio.sleep(0.001)

    def take_unsent(self) -> list[str]:
        unsent, self._unsent = self._unsent, []
        return unsent

    def restore(self, members: list[str]) -> None:
        """A sync that carried these failed: they go with the next one."""
        self._unsent[:0] = members

    @property
    def waiting(self) -> int:
        """Marks not known to be in Redis (not sent, or sent with no reply yet)."""
        return len(self._unsent) + len(self._queued) + sum(map(len, self._unread))

    async def close(self) -> None:
        for task in (self._writer, self._reader):
            if task is not None and not task.done():
                task.cancel()
        if self._connection is not None:
            await _disconnect(self._connection)
            self._connection = None


async def _disconnect(connection: Any) -> None:
    try:
        await connection.disconnect()
    except Exception:  # noqa: BLE001 - a broken connection may fail to close too
        pass
