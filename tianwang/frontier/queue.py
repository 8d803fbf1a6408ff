"""The ordering policy of the frontier (seed 000): N sorted picks, then H host picks and M
random picks, among the slots (hosts) that are ready.

Items are ints the queue numbers (``new_item``), each with a sort key (weight, priority)
and a slot number. An item taken is released once its caller has read it (``release``)
and its number is given out again: the columns by item grow with what is pending at once,
not with the crawl's length (a month of urls would otherwise cost tens of bytes each). A
slot is a host, or under a level limit a host's level (levels.py). The scheduler says
which slots may give a request now (``block``, ``unblock``: its host is in its politeness
delay, paused, at its concurrency, waiting for its robots.txt); a pick only ever looks at
ready slots, so it costs O(log slots) however many hosts wait, and no request is handed out
to wait in the downloader.

Order, the same as the shared frontier's (tianwang/order.py holds the layout):

- a sorted pick takes the best pending item of the ready slots: the highest rank, then the
  earliest arrival. An item's rank is its key and its host's turn (among items of one key a
  slot's k-th goes before any slot's k+1-th, for its first ``turns``); a host's first
  ``first`` items (``seed_first`` for a seed's host) rank above every key, turn by turn;
- a random pick takes a pending item uniformly (its slot ready: up to RANDOM_TRIES draws,
  then it becomes a sorted pick);
- a host pick takes the best item of the next ready slot in turn (ready slots take turns in
  the order they became ready, as Heritrix's and BUbiNG's per-host queues rotate);
- a host's first items go before the cycle of picks.

Each slot keeps its items in a binary heap of packed ints (rank and arrival, 8 bytes an
item); the ready slots are in a heap by their best item. Taken items are left in the heaps
and skipped when they reach a top (lazy deletion). Raising an item's weight (link relations,
linkscore.py) pushes it again with a new arrival, as a new item of its new key would be;
its old copy is stale (the item's arrival is the new one). Arrivals are numbered afresh,
in their order, once most of those given out are of items no longer pending: the heaps and
the arrival column stay in proportion to what is pending, however long the crawl.
"""

from __future__ import annotations

import heapq
import random
from array import array
from collections import Counter, deque
from collections.abc import Iterator

from tianwang.order import (
    FIRST_RANK,
    KEYS,
    MAX_FIRST,
    MAX_ID,
    MAX_TURNS,
    first_rank_of,
    key_of,
    rank_of,
    split_key,
)

# Arrivals given out before they are numbered afresh: this many, or this many times what is
# pending (the renumbering walks every pending item: its cost is spread over as many pushes).
RENUMBER_AFTER = 1 << 20
RENUMBER_FACTOR = 4

# Tries of a random pick before it gives up on a crawl whose pending items are almost all
# on slots that are not ready; a pick that gives up becomes a sorted pick.
RANDOM_TRIES = 32

Key = tuple[int, int]  # (weight, priority): the order the scheduler asks for
_TOP_RANK = FIRST_RANK + MAX_FIRST * KEYS  # above every rank


def _pack(rank: int, arrival: int) -> int:
    """An item's place in a heap: the higher rank, then the earlier arrival, smallest."""
    return (_TOP_RANK - rank) << 31 | arrival


def _rank(packed: int) -> int:
    return _TOP_RANK - (packed >> 31)


class FrontierQueue:
    """Pending request ids in seed 000's order: N sorted picks, then H host picks and M
    random ones, repeating, among the ready slots."""

    def __init__(self, sorted_picks: int = 1, random_picks: int = 1, seed: int | None = None,
                 turns: int = 0, first: int = 0, seed_first: int = 0, host_picks: int = 0):
        if sorted_picks < 1 or random_picks < 0 or host_picks < 0:
            raise ValueError("sorted_picks must be >= 1, host_picks and random_picks >= 0")
        if random_picks + host_picks < 1:
            raise ValueError("host_picks and random_picks must not both be 0")
        if not 0 <= turns <= MAX_TURNS:
            raise ValueError(f"turns must be from 0 to {MAX_TURNS}")
        if not 0 <= first <= MAX_FIRST or not 0 <= seed_first <= MAX_FIRST:
            raise ValueError(f"first and seed_first must be from 0 to {MAX_FIRST}")
        self.turns = turns
        self.first, self.seed_first = first, seed_first
        self.host_picks = host_picks
        self.rng = random.Random(seed)
        self.picks = Counter({"sorted": 0, "random": 0})
        # The kind of each pick of the cycle, and the position in it.
        self._kinds = ("sorted",) * sorted_picks + ("host",) * host_picks + (
            "random",) * random_picks
        self._cycle = 0
        # host -> its first items so far (a byte a host ever met: at most MAX_FIRST)
        self._first_given = bytearray()
        self._seed_hosts: set[int] = set()  # hosts given a seed: seed_first first items
        self._pushed: Counter[tuple[int, int]] = Counter()  # (slot, key) -> items pushed
        # Per id: index in _dense (-1 when not pending), slot, weight, priority, its live
        # arrival, whether it is a host's first item.
        self._pos = array("i")
        self._slot_of = array("i")
        self._weight_of = array("h")
        self._priority_of = array("h")
        self._arrival_of = array("i")
        self._is_first = bytearray()  # id -> 1 + its first-item turn, 0 for an ordinary one
        self._firsts = 0  # first items pending
        self._item_of = array("i")  # arrival -> id
        self._released = array("i")  # ids taken and released: given out again first
        self.renumber_after = RENUMBER_AFTER
        self._renumbered = 0  # times the arrivals were numbered afresh
        self._dense = array("i")  # the pending ids, in no order (random picks)
        self._by_weight: Counter[int] = Counter()
        self._heaps: dict[int, array] = {}  # slot -> its items, packed, best on top
        self._blocked = bytearray()  # slot -> 1 while it may give no request
        self._ready: list[tuple[int, int]] = []  # (a ready slot's best, slot), best on top
        self._offered: dict[int, int] = {}  # slot -> its best as _ready holds it
        self._rotation: deque[int] = deque()  # ready slots, whose turn first (host picks)
        self._rotating: set[int] = set()

    def __len__(self) -> int:
        return len(self._dense)

    # --- item numbers ------------------------------------------------------------------

    def new_item(self) -> int:
        """A number for an item to push (push it before asking for another): one released,
        or the first never used."""
        return self._released.pop() if self._released else len(self._pos)

    def release(self, item: int) -> None:
        """An item taken, its slot and weight read: its number may be given out again."""
        if self.pending(item):
            raise ValueError(f"item {item} is pending")
        self._released.append(item)

    # --- adding ------------------------------------------------------------------------

    def push(self, item: int, key: Key, slot: int, seed: bool = False,
             host: int | None = None, fresh: bool = True) -> None:
        """Add a pending id: one from new_item, or one above every id pushed so far (gaps
        are fine). seed: the request is a seed (no page linked to it): its host has
        seed_first first items. host: what the first items are counted by (the slot itself
        by default; a host's slots are per level when the crawl goes level by level).
        fresh=False: a request the queue held before (sent back to it), which is no host's
        first again."""
        if not fresh:
            code = key_of(*key)
            self._add(item, key, slot, rank_of(code, self._turn(slot, code)))
            return
        host = slot if host is None else host
        if seed:
            self.seed_host(host)
        given = self._first_given[host] if host < len(self._first_given) else 0
        if given < (self.seed_first if host in self._seed_hosts else self.first):
            if host >= len(self._first_given):
                self._first_given.extend(bytes(host + 1 - len(self._first_given)))
            self._first_given[host] = given + 1
            self.push_first(item, key, slot, given)
            return
        code = key_of(*key)
        self._add(item, key, slot, rank_of(code, self._turn(slot, code)))

    def seed_host(self, host: int) -> None:
        """The host is a seed's: seed_first first items (its seed may have been found by a
        link before it was pushed, and then is not pushed itself)."""
        self._seed_hosts.add(host)

    def push_first(self, item: int, key: Key, slot: int, turn: int) -> None:
        """Add a pending id as its host's turn-th first item (0-based, below MAX_FIRST)."""
        self._add(item, key, slot, first_rank_of(key_of(*key), turn))
        self._is_first[item] = 1 + min(turn, MAX_FIRST - 1)
        self._firsts += 1

    def _add(self, item: int, key: Key, slot: int, rank: int) -> None:
        if item >= len(self._pos):  # a number never used: the columns grow
            self._extend(item + 1)
        elif self._pos[item] >= 0:
            raise ValueError(f"id {item} pushed while pending")
        weight, priority = split_key(key_of(*key))
        self._pos[item] = len(self._dense)
        self._slot_of[item] = slot
        self._weight_of[item] = weight
        self._priority_of[item] = priority
        self._arrival_of[item] = -1  # until filed: an old arrival names no copy of it
        self._is_first[item] = 0
        self._dense.append(item)
        self._by_weight[weight] += 1
        self._file(item, slot, rank)

    def _extend(self, size: int) -> None:
        """The columns, this long (the ids between never pushed). Only while the most
        pending at once grows: numbers are given out again after that."""
        if size > MAX_ID + 1:
            raise ValueError(f"id {size - 1} above {MAX_ID}")
        more = size - len(self._pos)
        for column in (self._pos, self._slot_of, self._weight_of, self._priority_of,
                       self._arrival_of):
            column.extend(array(column.typecode, [-1]) * more)
        self._is_first.extend(bytes(more))

    def _file(self, item: int, slot: int, rank: int) -> None:
        """Put an id in its slot's heap with a new arrival, and offer the slot if its best
        item changed."""
        if len(self._item_of) >= max(self.renumber_after, RENUMBER_FACTOR * len(self._dense)):
            self._renumber()
        arrival = len(self._item_of)
        if arrival > MAX_ID:
            raise ValueError(f"more than {MAX_ID} arrivals pending")
        self._item_of.append(item)
        self._arrival_of[item] = arrival
        heap = self._heaps.get(slot)
        if heap is None:
            heap = self._heaps[slot] = array("q")
        packed = _pack(rank, arrival)
        _heap_push(heap, packed)
        if heap[0] == packed:
            self._offer(slot)

    def _turn(self, slot: int, code: int) -> int:
        """0 for a slot's first item of this key, 1 for its second, ..., at most turns."""
        if not self.turns:
            return 0
        turn = self._pushed[slot, code]
        if turn < self.turns:
            self._pushed[slot, code] = turn + 1
        return turn

    def raise_weight(self, item: int, key: Key) -> bool:
        """Move a pending id up to a higher weight (new evidence about its url: link
        relations); False, and nothing changes, if it is not pending or not that low. A
        host's first item keeps its place (it goes before the weights anyway)."""
        code = key_of(*key)
        weight, priority = split_key(code)
        if not self.pending(item) or weight <= self._weight_of[item]:
            return False
        self._by_weight[self._weight_of[item]] -= 1
        self._by_weight[weight] += 1
        self._weight_of[item] = weight
        if self._is_first[item]:
            return True
        self._priority_of[item] = priority
        slot = self._slot_of[item]
        self._file(item, slot, rank_of(code, self._turn(slot, code)))
        return True

    def _renumber(self) -> None:
        """Number the pending items' live arrivals afresh, 0 up, in their order, and drop
        every stale copy from the heaps. Each heap's order, and so every pick to come, is
        what it was: only the numbers and the dead entries change."""
        item_of, arrival_of = self._item_of, self._arrival_of
        order = sorted(self._dense, key=arrival_of.__getitem__)
        new_of_old = array("i", [-1]) * len(item_of)  # a live arrival's new number, else -1
        for new, item in enumerate(order):
            if arrival_of[item] >= 0:  # -1: an item being filed, no copy in a heap yet
                new_of_old[arrival_of[item]] = new
            arrival_of[item] = new
        self._item_of = array("i", order)
        self._ready, self._offered = [], {}
        heaps = {}
        for slot, heap in self._heaps.items():
            live = [packed & ~MAX_ID | new for packed in heap
                    if (new := new_of_old[packed & MAX_ID]) >= 0]
            if not live:
                continue
            heapq.heapify(live)
            heaps[slot] = array("q", live)
            if self.ready(slot):
                self._offered[slot] = live[0]
                self._ready.append((live[0], slot))
        heapq.heapify(self._ready)
        self._heaps = heaps
        self._renumbered += 1

    # --- which slots are ready -----------------------------------------------------------

    def block(self, slot: int) -> None:
        """The slot gives no request until unblocked (its host is not ready)."""
        self._grow(slot)
        self._blocked[slot] = 1

    def unblock(self, slot: int) -> None:
        """The slot may give requests again."""
        self._grow(slot)
        if self._blocked[slot]:
            self._blocked[slot] = 0
            self._offered.pop(slot, None)
            self._offer(slot)

    def ready(self, slot: int) -> bool:
        return slot >= len(self._blocked) or not self._blocked[slot]

    def holds(self, slot: int) -> bool:
        """Whether the slot may have pending items (it has a heap; it may hold only taken
        ones, found when they reach its top)."""
        return slot in self._heaps

    def _grow(self, slot: int) -> None:
        if slot >= len(self._blocked):
            self._blocked.extend(bytes(slot + 1 - len(self._blocked)))

    def _offer(self, slot: int) -> None:
        """Put a ready slot's best item where the picks look (the ready heap, the turns)."""
        if not self.ready(slot):
            return
        best = self._best(slot)
        if best < 0:
            self._offered.pop(slot, None)
            return
        if self._offered.get(slot) != best:
            self._offered[slot] = best
            heapq.heappush(self._ready, (best, slot))
        if self.host_picks and slot not in self._rotating:
            self._rotating.add(slot)
            self._rotation.append(slot)

    def _best(self, slot: int) -> int:
        """The slot's best pending item, packed; -1 when it has none (its heap goes)."""
        heap = self._heaps.get(slot)
        if heap is None:
            return -1
        item_of, arrival_of, pos = self._item_of, self._arrival_of, self._pos
        while heap:
            arrival = heap[0] & MAX_ID
            item = item_of[arrival]
            if pos[item] >= 0 and arrival_of[item] == arrival:
                return heap[0]
            _heap_pop(heap)  # taken, or raised since (its live copy is a later arrival)
        del self._heaps[slot]
        return -1

    # --- picks ---------------------------------------------------------------------------

    def pop(self) -> int | None:
        """The next id to fetch, or None when no ready slot has one."""
        if not self._dense:
            return None
        # A host's first items go before the cycle of picks: they are not in it, whose
        # random or host picks would otherwise take some of them out of turn.
        if self._firsts:
            best = self._ready_top()
            if best is not None and _rank(best[0]) >= FIRST_RANK:
                self.picks["first"] += 1
                return self._take_best(*best)
        kind = self._kinds[self._cycle]
        item = None
        if kind == "host":
            item = self._host_pick()
        elif kind == "random":
            item = self._random_pick()
        if item is None:
            best = self._ready_top()
            if best is None:
                return None
            item, kind = self._take_best(*best), "sorted"
        self.picks[kind] += 1
        self._cycle = (self._cycle + 1) % len(self._kinds)
        return item

    def _ready_top(self) -> tuple[int, int] | None:
        """(best, slot) of the ready slot whose best item is the best of all; stale entries
        (a slot blocked, or its best taken or changed since) are dropped on the way."""
        ready, offered = self._ready, self._offered
        while ready:
            best, slot = ready[0]
            if offered.get(slot) == best and self.ready(slot):
                return best, slot
            heapq.heappop(ready)
            if offered.get(slot) == best:
                del offered[slot]
        return None

    def _take_best(self, best: int, slot: int) -> int:
        """Take a slot's best item (the top of its heap)."""
        item = self._item_of[best & MAX_ID]
        _heap_pop(self._heaps[slot])
        self._take(item)
        self._offer(slot)
        return item

    def _host_pick(self) -> int | None:
        """The best item of the next ready slot in turn."""
        rotation = self._rotation
        while rotation:
            slot = rotation[0]
            best = self._best(slot) if self.ready(slot) else -1
            if best < 0:  # blocked or empty: out of the turns until offered again
                rotation.popleft()
                self._rotating.discard(slot)
                continue
            rotation.rotate(-1)
            return self._take_best(best, slot)
        return None

    def _random_pick(self) -> int | None:
        dense, slot_of, rng = self._dense, self._slot_of, self.rng
        for _ in range(RANDOM_TRIES):
            item = dense[rng.randrange(len(dense))]
            slot = slot_of[item]
            if self.ready(slot):
                self._take(item)
                self._offer(slot)  # its best may have been this one
                return item
        return None

    def _take(self, item: int) -> None:
        """Swap-remove an id from the dense array of pending ids."""
        pos, dense = self._pos, self._dense
        at, last = pos[item], dense[-1]
        dense[at] = last
        pos[last] = at
        dense.pop()
        pos[item] = -1
        self._by_weight[self._weight_of[item]] -= 1
        self._firsts -= self._is_first[item] > 0

    # --- what is pending -----------------------------------------------------------------

    def weight(self, item: int) -> int:
        """The weight a pending id is queued at."""
        return self._weight_of[item]

    def pending(self, item: int) -> bool:
        return 0 <= item < len(self._pos) and self._pos[item] >= 0

    def slot(self, item: int) -> int:
        """The slot number an id was pushed with."""
        return self._slot_of[item]

    def arrival(self, item: int) -> int:
        """A pending id's place among equals: the later it came (or was raised), the higher."""
        return self._arrival_of[item]

    def first_turn(self, item: int) -> int | None:
        """The host's first-item turn an id was pushed in, None for an ordinary one."""
        return self._is_first[item] - 1 if self._is_first[item] else None

    def pending_by_weight(self) -> Counter[int]:
        """How many ids are pending per weight (O(weights))."""
        return +self._by_weight

    def pending_by_key(self) -> Counter[Key]:
        """How many ids are pending per key (walks every pending id)."""
        return Counter((self._weight_of[item], self._priority_of[item]) for item in self)

    def pending_by_slot(self) -> Counter[int]:
        """How many ids are pending per slot (walks every pending id)."""
        return Counter(self._slot_of[item] for item in self)

    def __iter__(self) -> Iterator[int]:
        """The pending ids, in no order."""
        return iter(self._dense)


# A slot's heap: a binary min-heap of packed ints in one array, 8 bytes an item; one array
# a slot, so a crawl of many hosts with few requests each pays little per host.


def _heap_push(heap: array, value: int) -> None:
    heap.append(value)
    at = len(heap) - 1
    if at and heap[(at - 1) >> 1] > value:  # a later item of no better rank stays at the bottom
        _sift_up(heap, at, value)


def _sift_up(heap: array, at: int, value: int) -> None:
    """Put value at `at` or above, where it belongs."""
    while at:
        parent = (at - 1) >> 1
        if heap[parent] <= value:
            break
        heap[at] = heap[parent]
        at = parent
    heap[at] = value


def _heap_pop(heap: array) -> None:
    """Drop the top. As CPython's heapq: the smaller child moves up all the way to a leaf
    (one comparison a level), then the last value sifts up from there (few steps: it is
    among the largest)."""
    last = heap.pop()
    size = len(heap)
    if not size:
        return
    at = 0
    while (child := 2 * at + 1) < size:
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        heap[at] = heap[child]
        at = child
    _sift_up(heap, at, last)
