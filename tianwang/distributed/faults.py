"""What went wrong with Redis, for a node to decide what to do about it. No Scrapy import.

- unreachable: no answer once the client's own retries are spent (a connection refused or
  dropped, a timeout; BusyLoadingError, a Redis loading its data, is a ConnectionError). The
  node goes on with what it holds and probes (outage.py).
- full: Redis at maxmemory with noeviction refuses every write ("OOM command not allowed",
  alone or from inside a script). Nothing may be lost: the node keeps its pushes and acks and
  sends them again, as after an outage, until Redis takes them.
- anything else (a script's error, a reply of the wrong type, a bug): an error, retried a few
  times with back-off (supervisor.py), then the node stops naming it.
"""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

REDIS_DOWN = (RedisConnectionError, RedisTimeoutError)
UNREACHABLE, FULL = "unreachable", "full"


def fault_of(error: BaseException) -> str | None:
    """UNREACHABLE, FULL, or None for an error that is neither."""
    if isinstance(error, REDIS_DOWN):
        return UNREACHABLE
    if isinstance(error, OutOfMemoryError) or (
            isinstance(error, ResponseError) and "OOM command not allowed" in str(error)):
        return FULL
    return None
