"""Stored marks (tianwang/distributed/marks.py) on a real redis-server: written in the call,
read before the acks, kept when they cannot go."""

from __future__ import annotations

import redis
import redis.asyncio

from tests.aio import aio
from tianwang.distributed.marks import StoredMarks


def test_redis_py_keeps_the_stream_writer_marks_write_to() -> None:
    """The one private attribute of redis-py the marks use: pinned against the installed one."""
    connection = redis.asyncio.Connection()
    assert hasattr(connection, "_writer") and callable(connection.pack_command)


@aio
async def test_a_mark_is_on_the_socket_in_the_call_and_in_redis_once_settled(redis_server) -> None:
    client = redis.asyncio.Redis.from_url(redis_server.url)
    marks = StoredMarks(client, "marks:test")
    await marks.open()
    marks.add("1:1")
    assert marks.waiting == 1 and not marks._queued  # written already, its reply to come
    for i in range(2, 50):
        marks.add(f"1:{i}")
    await marks.settle()
    assert marks.waiting == 0
    assert redis.Redis.from_url(redis_server.url).hlen("marks:test") == 49
    marks.add("1:99", send=False)  # Redis known away: for the next sync
    assert marks.take_unsent() == ["1:99"]
    await marks.close()
    await client.aclose()
