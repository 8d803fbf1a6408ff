"""The frontier's order, written once: the ranges of a request's key, the hosts' turns, and
the shared frontier's score layout. Pure logic; no Scrapy, no Redis.

A pending request leaves the frontier by its key, (weight, priority): the higher first.
Both frontiers keep the key in the same ranges (clip_key), so that a crawl in one process
and a crawl shared through Redis pick in the same order: the local queue clips before it
pushes, the shared frontier's score has room for exactly these ranges.

The shared frontier keeps a node's queue as a Redis sorted set, each request's place one
double, ``id - rank * 2**31`` (ZPOPMIN takes the highest rank, then the oldest id):

- ``key = (weight - WEIGHT_MIN) * PRIORITIES + priority - PRIORITY_MIN``: 16 bits;
- an ordinary request's ``rank = key * TURN_SLOTS + MAX_TURNS - turn``: among equal keys a
  host's k-th request before any host's k+1-th, for its first MAX_TURNS (the local queue's
  TIANWANG_HOST_TURNS; a shared crawl refuses more at start);
- a host's first request's ``rank = FIRST_RANK + (MAX_FIRST - 1 - turn) * KEYS + key``: above
  every ordinary rank, turn by turn, the higher key first within a turn;
- among equal ranks the earlier arrival: a new request's id, or for a request raised by a
  link (a higher weight, link relations) a new arrival number, as the local queue files a
  raised request after the peers it finds there. An arrival is the shard's count of pushes
  modulo 2**31 (a month of a busy crawl passes it: past the wrap, once, the requests of a
  rank pushed after it go before those pushed just before it; the whole count would spill
  into the rank), and a request's id, in its member's name and its link entry (4 bytes),
  that count modulo 2**32; the largest rank is below 2**21 + 2**20, so a score stays below
  2**53 and every one is exact in a double.

The Lua scripts get these numbers from lua_constants() (tianwang/distributed/scripts.py
puts them at the head of every script), so the layout lives here only.
"""

from __future__ import annotations

WEIGHT_MIN, WEIGHT_MAX = -256, 255
PRIORITY_MIN, PRIORITY_MAX = -64, 63
PRIORITIES = PRIORITY_MAX - PRIORITY_MIN + 1  # 128
KEYS = (WEIGHT_MAX - WEIGHT_MIN + 1) * PRIORITIES  # 2**16
MAX_TURNS = 31  # a host's turns among equal keys (TIANWANG_HOST_TURNS), at most
TURN_SLOTS = MAX_TURNS + 1
MAX_FIRST = 16  # a host's first requests before the weights (TIANWANG_HOST_FIRST), at most
FIRST_RANK = 2**21  # ranks from here on: a host's first requests
ID_SHIFT = 2**31  # a score is id - rank * ID_SHIFT
MAX_ID = ID_SHIFT - 1
MEMBER_IDS = 2**32  # a shared request's id: its shard's count of pushes, modulo this

assert KEYS * TURN_SLOTS <= FIRST_RANK and FIRST_RANK + MAX_FIRST * KEYS <= 2**22
assert (FIRST_RANK + MAX_FIRST * KEYS) * ID_SHIFT < 2**53


def clip_key(weight: int, priority: int) -> tuple[int, int]:
    """(weight, priority) within the frontier's ranges, kept at their bounds."""
    return (max(WEIGHT_MIN, min(WEIGHT_MAX, weight)),
            max(PRIORITY_MIN, min(PRIORITY_MAX, priority)))


def key_of(weight: int, priority: int) -> int:
    """The key of a (weight, priority), clipped: 0 to KEYS - 1, higher leaves first."""
    weight, priority = clip_key(weight, priority)
    return (weight - WEIGHT_MIN) * PRIORITIES + priority - PRIORITY_MIN


def split_key(key: int) -> tuple[int, int]:
    """(weight, priority) of a key."""
    weight, priority = divmod(key, PRIORITIES)
    return weight + WEIGHT_MIN, priority + PRIORITY_MIN


def rank_of(key: int, turn: int) -> int:
    """An ordinary request's rank: its key, then its host's turn (0 first)."""
    return key * TURN_SLOTS + MAX_TURNS - min(turn, MAX_TURNS)


def first_rank_of(key: int, turn: int) -> int:
    """The rank of a host's turn-th first request (0-based)."""
    return FIRST_RANK + (MAX_FIRST - 1 - min(turn, MAX_FIRST - 1)) * KEYS + key


def score_of(ident: int, rank: int) -> float:
    """The sorted-set score: the lowest leaves first."""
    if not 0 <= ident <= MAX_ID:
        raise ValueError(f"id {ident} outside 0 to {MAX_ID}")
    return float(ident - rank * ID_SHIFT)


def ident_of(score: float) -> int:
    """The id (the arrival number) a score was made with."""
    return int(score) % ID_SHIFT


def rank_in(score: float) -> int:
    """The rank a score holds."""
    return -(int(score) // ID_SHIFT)


def unrank(score: float) -> tuple[int, int, int | None]:
    """(weight, priority, first turn or None) of a score."""
    rank = rank_in(score)
    if rank >= FIRST_RANK:
        later, key = divmod(rank - FIRST_RANK, KEYS)
        return (*split_key(key), MAX_FIRST - 1 - later)
    return (*split_key(rank // TURN_SLOTS), None)


def lua_constants() -> str:
    """The layout's numbers as Lua locals, for the head of every script."""
    names = ("WEIGHT_MIN", "WEIGHT_MAX", "PRIORITY_MIN", "PRIORITY_MAX", "PRIORITIES", "KEYS",
             "MAX_TURNS", "TURN_SLOTS", "MAX_FIRST", "FIRST_RANK", "ID_SHIFT", "MEMBER_IDS")
    return "".join(f"local {name} = {globals()[name]}\n" for name in names)
