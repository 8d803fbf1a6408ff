"""The frontier queue as it was before ready hosts (commit b9a455e), kept as the reference the
ready-host queue is tested against (tests/test_frontier_queue.py): among the ready slots
it must pick what this one picks among its free slots. Not used by the product.

The ordering policy of the frontier (seed 000): N sorted picks, then H host picks and M
random picks.

Items are request ids (ints, increasing in arrival order), each with a sort key
(weight, priority) and a download slot number. Only ints are kept, in arrays, so ten
million pending items fit in a few hundred MB:

- per key, a FIFO of ids (``_Level.main``): a sorted pick takes the head of the highest
  key, so equal keys leave first come, first served;
- a dense array of pending ids with a position map, so a random pick is one
  ``randrange`` and a take is a swap-remove; items taken by the other kind of pick are
  skipped lazily when they reach a FIFO head.

Hosts take turns (``turns`` > 0): among items of one key, a slot's k-th item goes before
any slot's (k+1)-th, for its first ``turns`` items; the rest leave first come, first served.
Without it, a host whose links came first would have its one connection spent on all of
them (its about pages and small sections too) before a later host's main sections get one.
The turn is part of the level's key, so it costs nothing at pick time.

A host's first pages (``first`` > 0): a host's first ``first`` items, whatever their weight,
go before every other item, turn by turn (every host's first before any host's second), the
higher weight first within a turn. A host given a seed (``push(seed=True)``) has
``seed_first`` such items. The hosts a crawl starts from, or comes upon, each get a look at
their home page and main sections before the weights (which favour small hosts at first: a
page's cash is shared among its links) decide: breadth first's round robin over hosts, for
the first pages only (bench/RESULTS-archive.md, issue 20). These items stay in their turn's level
if raised (only their weight, for the counts, changes).

Raising (link relations, linkscore.py): a pending id's weight may rise; the id is appended
to its new level and its old copy skipped when met (the weight kept per id says which copy is
live), as a taken id is skipped.

Host picks (``host_picks`` > 0): a third kind of pick, after the N sorted ones: the slots
with pending items take turns (a round robin, as Heritrix's and BUbiNG's per-host queues and
Scrapy's DownloaderAwarePriorityQueue rotate), and the slot whose turn it is gives its best
item (highest key, then oldest). Breadth first's strength on real link graphs is that every
host found gets a fair share of fetches, so a large site's site-wide pages (linked from every
page of it) come up early; the sorted picks alone spend the fetches on the best-weighted
hosts. Per slot a heap of packed ints (``_heap_push``), 8 bytes an item; a raised item is
pushed again at its new weight, stale copies dropped when they reach the top.

Host awareness: a pick asks ``full(slot)`` and skips items whose slot is full. A sorted
pick moves such an item from the key's FIFO to a per-slot FIFO of that key ("parked"), so
it keeps its place: the candidates are the main head and the oldest parked item of a slot
that is free again, and the older of the two wins. Each item is parked at most once.
"""

from __future__ import annotations

import heapq
import random
from array import array
from bisect import insort
from collections import Counter, deque
from collections.abc import Callable, Iterator

from tianwang.config.frontier import MAX_HOST_FIRST as MAX_FIRST

# Tries of a random pick before it gives up on a crawl whose pending items are almost all
# on full slots; a pick that gives up becomes a sorted pick, which scans exactly.
RANDOM_TRIES = 32

# Ids are below 2**31 (4 bytes in the FIFOs and the id-indexed arrays, 31 bits in a host
# pick's packed int); the arrays indexed by id would need 8 GB before.
MAX_ID = 2**31 - 1

Key = tuple[int, int]  # (weight, priority): the order the scheduler asks for
# (weight, priority, -turn), or for a host's first items (FIRST_LEVEL - turn, weight,
# priority): above any int16 weight.
_LevelKey = tuple[int, int, int]
FIRST_LEVEL = 2**16 + MAX_FIRST


def _is_first_level(level_key: _LevelKey) -> bool:
    """A level of a host's first items (all above every weight's)."""
    return level_key[0] > FIRST_LEVEL - MAX_FIRST


class _Fifo:
    """A FIFO of ints in one array; the consumed head is cut off once it is most of it."""

    __slots__ = ("items", "head")

    def __init__(self) -> None:
        self.items = array("i")
        self.head = 0

    def __len__(self) -> int:
        return len(self.items) - self.head

    def __iter__(self) -> Iterator[int]:
        return iter(self.items[self.head :])

    def peek(self) -> int:
        return self.items[self.head]

    def popleft(self) -> int:
        item = self.items[self.head]
        self.head += 1
        if self.head >= 4096 and self.head * 2 >= len(self.items):
            del self.items[: self.head]
            self.head = 0
        return item


class _Level:
    """The items of one key: the main FIFO, and the items parked per full slot."""

    __slots__ = ("main", "parked", "heap", "weight")

    def __init__(self, weight: int | None) -> None:
        # An id whose current weight is another (raised since: raise_weight) is a stale
        # copy here, skipped as a taken one is. None: a level of first items, never raised
        # out of it.
        self.weight = weight
        self.main = _Fifo()
        self.parked: dict[int, _Fifo] = {}
        # (oldest parked id, slot) per parked slot; an entry whose id was taken by a random
        # pick is stale and is refreshed when it reaches the top.
        self.heap: list[tuple[int, int]] = []

    def main_candidate(self, pos: array, slot_of: array, full: Callable[[int], bool],
                       weight_of: array) -> int:
        main, weight = self.main, self.weight
        while len(main):
            item = main.peek()
            if pos[item] < 0 or (weight is not None and weight_of[item] != weight):
                main.popleft()  # taken by a random pick, or raised to another level
            elif full(slot_of[item]):
                self._park(main.popleft(), slot_of[item])
            else:
                return item
        return -1

    def _park(self, item: int, slot: int) -> None:
        fifo = self.parked.get(slot)
        if fifo is None:
            fifo = self.parked[slot] = _Fifo()
            heapq.heappush(self.heap, (item, slot))
        fifo.items.append(item)

    def parked_candidate(self, pos: array, full: Callable[[int], bool],
                         weight_of: array) -> tuple[int, int]:
        """The oldest parked item of a free slot, its heap entry popped; (-1, -1) if none."""
        heap, skipped, weight = self.heap, [], self.weight
        found = (-1, -1)
        while heap:
            item, slot = heap[0]
            if pos[item] < 0 or (weight is not None and weight_of[item] != weight):
                heapq.heappop(heap)
                self._refresh(slot, pos, weight_of)
            elif full(slot):
                skipped.append(heapq.heappop(heap))
            else:
                found = heapq.heappop(heap)
                break
        for entry in skipped:
            heapq.heappush(self.heap, entry)
        return found

    def _refresh(self, slot: int, pos: array, weight_of: array) -> None:
        """Drop the taken or raised head(s) of a slot's parked FIFO and push its new head."""
        fifo, weight = self.parked[slot], self.weight
        while len(fifo) and (pos[fifo.peek()] < 0 or (
                weight is not None and weight_of[fifo.peek()] != weight)):
            fifo.popleft()
        if len(fifo):
            heapq.heappush(self.heap, (fifo.peek(), slot))
        else:
            del self.parked[slot]

    def take_parked(self, slot: int, pos: array, weight_of: array) -> None:
        self.parked[slot].popleft()
        self._refresh(slot, pos, weight_of)

    def is_empty(self) -> bool:
        return not len(self.main) and not self.parked

    def items(self) -> Iterator[int]:
        yield from self.main
        for fifo in self.parked.values():
            yield from fifo


# A slot's items for host picks: a binary min-heap of packed ints (_pack) in one array, the
# best item (highest weight, then priority, then the oldest) on top: 8 bytes an item and one
# array a slot, so a crawl of many hosts with few requests each pays little per host.


def _heap_push(heap: array, key: Key, item: int) -> None:
    value = _pack(key, item)
    heap.append(value)
    at = len(heap) - 1
    if at and heap[(at - 1) >> 1] > value:  # a newer item of no better key stays at the bottom
        _sift_up(heap, at, value)


def _sift_up(heap: array, at: int, value: int) -> None:
    """Put value at `at` or above, where it belongs (a newer item of no better key stays)."""
    while at:
        parent = (at - 1) >> 1
        if heap[parent] <= value:
            break
        heap[at] = heap[parent]
        at = parent
    heap[at] = value


def _heap_best(heap: array, pos: array, weight_of: array) -> int:
    """The best pending item of a slot's heap, or -1 when none is left; taken and raised
    copies met on top are dropped (a raised item has its copy at the new weight)."""
    while heap:
        item = heap[0] & MAX_ID
        if pos[item] >= 0 and weight_of[item] == _weight_of_packed(heap[0]):
            return item
        _heap_pop(heap)
    return -1


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


def _pack(key: Key, item: int) -> int:
    """(weight, priority, id) as one int whose order is the host pick's: the higher weight,
    then the higher priority (kept to 16 bits here), then the older id, smallest."""
    weight, priority = key
    if not -(2**15) <= priority < 2**15:
        priority = -(2**15) if priority < 0 else 2**15 - 1
    return (2**32 - 1 - ((weight + 2**15) << 16 | (priority + 2**15))) << 31 | item


def _weight_of_packed(value: int) -> int:
    rank = 2**32 - 1 - (value >> 31)
    return (rank >> 16) - 2**15


class FrontierQueue:
    """Pending request ids in seed 000's order: N sorted picks, then H host picks and M
    random ones, repeating."""

    def __init__(self, sorted_picks: int = 1, random_picks: int = 1, seed: int | None = None,
                 turns: int = 0, first: int = 0, seed_first: int = 0, host_picks: int = 0):
        if sorted_picks < 1 or random_picks < 0 or host_picks < 0:
            raise ValueError("sorted_picks must be >= 1, host_picks and random_picks >= 0")
        if random_picks + host_picks < 1:
            raise ValueError("host_picks and random_picks must not both be 0")
        if turns < 0:
            raise ValueError("turns must be >= 0")
        if not 0 <= first <= MAX_FIRST or not 0 <= seed_first <= MAX_FIRST:
            raise ValueError(f"first and seed_first must be from 0 to {MAX_FIRST}")
        self.turns = turns
        self.first, self.seed_first = first, seed_first
        self._first_given: Counter[int] = Counter()  # host -> its first items so far
        self._seed_hosts: set[int] = set()  # hosts given a seed: seed_first first items
        self._is_first = bytearray()  # id -> 1 if pushed as a host's first item
        self._firsts = 0  # first items pending
        self._pushed: Counter[tuple[int, Key]] = Counter()  # (slot, key) -> items pushed
        self.host_picks = host_picks
        self.rng = random.Random(seed)
        self.picks = Counter({"sorted": 0, "random": 0})
        # The kind of each pick of the cycle, and the position in it.
        self._kinds = ("sorted",) * sorted_picks + ("host",) * host_picks + (
            "random",) * random_picks
        self._cycle = 0
        self._slot_heaps: dict[int, array] = {}  # for host picks: slot -> its items' heap
        self._rotation: deque[int] = deque()  # the slots in _slot_heaps, whose turn first
        self._levels: dict[_LevelKey, _Level] = {}
        self._keys: list[_LevelKey] = []  # ascending
        self._pos = array("i")  # id -> index in _dense, -1 when not pending
        self._slot_of = array("i")  # id -> slot number
        self._weight_of = array("h")  # id -> the weight of the level it is pending in
        self._dense = array("i")  # the pending ids, in no order
        # Pending ids per weight, kept as they come and go: the progress line asks every
        # second, and counting the levels walks every pending id.
        self._by_weight: Counter[int] = Counter()

    def __len__(self) -> int:
        return len(self._dense)

    def push(self, item: int, key: Key, slot: int, seed: bool = False,
             host: int | None = None) -> None:
        """Add a pending id; ids must grow (gaps are fine: ids taken in an earlier run).
        seed: the request is a seed (no page linked to it): its host has seed_first first
        items. host: what the first items are counted by (the slot itself by default; a
        host's slots are per level when the crawl goes level by level)."""
        host = slot if host is None else host
        if seed:
            self.seed_host(host)
        given = self._first_given[host]
        if given < (self.seed_first if host in self._seed_hosts else self.first):
            self._first_given[host] = given + 1
            self.push_first(item, key, slot, given)
            return
        key = self._add(item, key, slot)
        self._level(key, slot).main.items.append(item)

    def seed_host(self, host: int) -> None:
        """The host is a seed's: seed_first first items (its seed may have been found by a
        link before it was pushed, and then is not pushed itself)."""
        self._seed_hosts.add(host)

    def push_first(self, item: int, key: Key, slot: int, turn: int) -> None:
        """Add a pending id as its host's turn-th first item (0-based, below MAX_FIRST)."""
        key = self._add(item, key, slot)
        self._is_first[item] = 1
        self._firsts += 1
        level_key = (FIRST_LEVEL - min(turn, MAX_FIRST - 1), *key)
        self._level_at(level_key, None).main.items.append(item)

    def _add(self, item: int, key: Key, slot: int) -> Key:
        """Record a pending id (not yet in a level); its key as the queue keeps it."""
        gap = item - len(self._pos)
        if gap < 0 or item > MAX_ID:
            raise ValueError(f"id {item} pushed after a larger one, or above {MAX_ID}")
        if gap:
            self._pos.extend(array("i", [-1]) * gap)
            self._slot_of.extend(array("i", [0]) * gap)
            self._weight_of.extend(array("h", [0]) * gap)
            self._is_first.extend(bytes(gap))
        key = (_int16(key[0]), key[1])
        self._pos.append(len(self._dense))
        self._slot_of.append(slot)
        self._weight_of.append(key[0])
        self._is_first.append(0)
        self._dense.append(item)
        self._by_weight[key[0]] += 1
        if self.host_picks:
            _heap_push(self._slot_heap(slot), key, item)
        return key

    def _slot_heap(self, slot: int) -> array:
        """A slot's heap for host picks; a slot without one joins the rotation, last."""
        heap = self._slot_heaps.get(slot)
        if heap is None:
            heap = self._slot_heaps[slot] = array("q")
            self._rotation.append(slot)
        return heap

    def raise_weight(self, item: int, key: Key) -> bool:
        """Move a pending id up to a higher weight (new evidence about its url: link
        relations); False, and nothing changes, if it is not pending or not that low.

        Lazy deletion: the id is appended to its new level and its old copy is skipped when
        it reaches a FIFO head, so a raise costs a level lookup (O(log levels) for a new
        level) and an append. Weights only rise, so a copy is stale exactly when its level's
        weight is not the id's weight.
        """
        weight = _int16(key[0])
        if item >= len(self._pos) or self._pos[item] < 0 or weight <= self._weight_of[item]:
            return False
        self._by_weight[self._weight_of[item]] -= 1
        self._by_weight[weight] += 1
        self._weight_of[item] = weight
        if self.host_picks:
            _heap_push(self._slot_heap(self._slot_of[item]), (weight, key[1]), item)
        if self._is_first[item]:
            return True  # a first item: goes before the weights anyway
        self._level((weight, key[1]), self._slot_of[item]).main.items.append(item)
        return True

    def weight(self, item: int) -> int:
        """The weight a pending id is queued at."""
        return self._weight_of[item]

    def pending(self, item: int) -> bool:
        return 0 <= item < len(self._pos) and self._pos[item] >= 0

    def _level(self, key: Key, slot: int) -> _Level:
        return self._level_at((*key, -self._turn(slot, key)), key[0])

    def _level_at(self, level_key: _LevelKey, weight: int | None) -> _Level:
        level = self._levels.get(level_key)
        if level is None:
            level = self._levels[level_key] = _Level(weight)
            insort(self._keys, level_key)
        return level

    def _turn(self, slot: int, key: Key) -> int:
        """0 for a slot's first item of this key, 1 for its second, ..., at most turns."""
        if not self.turns:
            return 0
        turn = self._pushed[slot, key]
        if turn < self.turns:
            self._pushed[slot, key] = turn + 1
        return turn

    def pop(self, full: Callable[[int], bool] | None = None) -> int | None:
        """The next id to fetch, or None when every pending id is on a full slot."""
        if not self._dense:
            return None
        is_full = _memo(full) if full is not None else _never_full
        # A host's first items go before the cycle of picks: they are not in it, whose
        # random or host picks would otherwise take some of them out of turn.
        # (A random pick then finds no first item either: all are on full slots.)
        item = self._sorted_pick(is_full, firsts=True) if self._firsts else None
        if item is not None:
            self._take(item)
            self.picks["first"] += 1
            return item
        kind = self._kinds[self._cycle]
        item = None
        if kind == "host":
            item = self._host_pick(is_full)
        elif kind == "random":
            item = self._random_pick(is_full)
        if item is None:
            item, kind = self._sorted_pick(is_full, firsts=False), "sorted"
        if item is None:
            return None
        self._take(item)
        self.picks[kind] += 1
        self._cycle = (self._cycle + 1) % len(self._kinds)
        return item

    def slot(self, item: int) -> int:
        """The slot number an id was pushed with."""
        return self._slot_of[item]

    def _host_pick(self, full: Callable[[int], bool]) -> int | None:
        """The best item of the next slot in turn that has one and is not full."""
        rotation, pos, weight_of = self._rotation, self._pos, self._weight_of
        for _ in range(len(rotation)):
            slot = rotation[0]
            item = _heap_best(self._slot_heaps[slot], pos, weight_of)
            if item < 0:  # nothing pending on it any more: out of the rotation until pushed to
                rotation.popleft()
                del self._slot_heaps[slot]
                continue
            rotation.rotate(-1)
            if not full(slot):
                return item
        return None

    def _random_pick(self, full: Callable[[int], bool]) -> int | None:
        dense, slot_of, rng = self._dense, self._slot_of, self.rng
        for _ in range(RANDOM_TRIES):
            item = dense[rng.randrange(len(dense))]
            if not full(slot_of[item]):
                return item
        return None

    def _sorted_pick(self, full: Callable[[int], bool], firsts: bool = False) -> int | None:
        """The first free item of the highest level: among the levels of first items only
        (firsts=True, the top ones), or below them."""
        pos, weight_of = self._pos, self._weight_of
        for key in reversed(list(self._keys)):
            if _is_first_level(key) != firsts:
                if firsts:
                    return None  # past the levels of first items
                continue
            level = self._levels[key]
            main = level.main_candidate(pos, self._slot_of, full, weight_of)
            parked, slot = level.parked_candidate(pos, full, weight_of)
            if parked >= 0 and (main < 0 or parked < main):
                level.take_parked(slot, pos, weight_of)
                return parked
            if parked >= 0:
                heapq.heappush(level.heap, (parked, slot))
            if main >= 0:
                level.main.popleft()
                return main
            if level.is_empty():
                del self._levels[key]
                self._keys.remove(key)
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
        self._firsts -= self._is_first[item]

    def pending_by_weight(self) -> Counter[int]:
        """How many ids are pending per weight (O(weights))."""
        return +self._by_weight

    def pending_by_slot(self) -> Counter[int]:
        """How many ids are pending per slot (walks every pending id: for a live view)."""
        return Counter(map(self._slot_of.__getitem__, self._dense))

    def pending_by_key(self) -> Counter[Key]:
        """How many ids are pending per key (for the close stats; walks every id)."""
        pos, weight_of, counts = self._pos, self._weight_of, Counter[Key]()
        for level_key, level in self._levels.items():
            if _is_first_level(level_key):  # (turn, weight pushed, priority)
                priority = level_key[2]
                for item in level.items():
                    if pos[item] >= 0:  # at its weight now, raised or not
                        counts[weight_of[item], priority] += 1
            else:
                weight, priority, _turn = level_key
                counts[weight, priority] += _pending(level, pos, weight_of)
        return +counts  # without the keys of no pending id


def _pending(level: _Level, pos: array, weight_of: array) -> int:
    return sum(1 for item in level.items() if pos[item] >= 0 and weight_of[item] == level.weight)


def _int16(weight: int) -> int:
    """A weight as the queue keeps it (the request log's field: int16, kept at its bounds)."""
    return max(-(2**15), min(2**15 - 1, weight))


def _never_full(slot: int) -> bool:
    return False


def _memo(full: Callable[[int], bool]) -> Callable[[int], bool]:
    """One answer per slot within a pick: a pick may ask about the same slot many times."""
    answers: dict[int, bool] = {}

    def cached(slot: int) -> bool:
        answer = answers.get(slot)
        if answer is None:
            answer = answers[slot] = full(slot)
        return answer

    return cached
