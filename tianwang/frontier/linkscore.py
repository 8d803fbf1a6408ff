"""Link relations in a pending url's weight (seed 000: "directory depth and link relations").

OPIC-style cash (Abiteboul, Preda, Cobena 2003), online: a seed starts with cash 1; a page
fetched hands its cash out in equal shares to the links found on it, and a link to another
host carries ``other_host`` shares (a link across hosts is a vote of another site, the
evidence of in-links from distinct hosts, which a site's own navigation cannot give). A url
found again while pending gets the new share added: its cash is the sum over the pages
linking to it of their cash over their out-degree, so the in-degree of the pages linking to
it counts, through their own cash. The weight the frontier sorts by is then

    url weight (directory depth) + boost + per_doubling * log2(cash), rounded half up,

so one directory level is worth 1 / per_doubling doublings of cash: depth still orders the
urls of one page's links (homepages and short paths first), and a url many pages point at,
or a page of other hosts points at, rises above its depth. Weights only rise while a url is
pending (cash only grows), which is what lets the queue re-file it lazily (queue.py
``raise_weight``).

Memory: per request id, 32 bits of its fingerprint and its cash (float32), and a slot in
an open-addressing table of ids (uint32) kept at most 3/4 full: 8 + 4/load bytes. Ids are
the queue's item numbers, given out again once their request is handed out: ``forget``
takes an id out of the table then, so the table and the columns grow with what is pending
at once, not with every url the crawl ever admitted (a url handed out needs no more cash:
links to it are duplicates). Finding
a url's id costs a few probes. Only 32 bits of a url are kept (8 would cost 4 bytes more):
a url whose 32 bits equal an earlier one's (a share n / 2**32 of n urls, 0.2% at ten
million) is found as that one, so the shares of its later in-links go to it. That is a
mistake of order, never of what is fetched.
"""

from __future__ import annotations

import math
import struct
from array import array

SEED_CASH = 1.0
# Cash no url falls below: the log of 0 has no weight; this is 2**-24 (about one share in
# sixteen million), far below any share a crawl of real pages hands out.
MIN_CASH = 2.0**-24
# A url's first share, as the relative discount keeps it: log2 in 1/BASE_SCALE of a doubling.
BASE_SCALE = 64
_EMPTY = 0  # a table slot holding no id (ids are stored plus one)
_FLOAT32 = struct.Struct("<f")


def as_float32(value: float) -> float:
    """The value as the cash is kept (float32, here and in Redis)."""
    return _FLOAT32.unpack(_FLOAT32.pack(value))[0]


def link_bonus(per_doubling: float, cash: float, relative: float = 0.0, base: int = 0) -> int:
    """The weight a url's cash adds: per_doubling times the doublings of its cash (less
    `relative` of its first share's, `base` in 1/BASE_SCALE doublings), rounded half up.

    The shared frontier's push script (distributed/lua/push.lua) computes the same, with
    the same operations in the same order (so the same double, on the same libm), and
    floor(x + 0.5): Python's round() rounds half to even, Lua has no such function.
    """
    doublings = math.log(max(cash, MIN_CASH)) / math.log(2) - relative * base / BASE_SCALE
    return math.floor(per_doubling * doublings + 0.5)


def base_of(first: float) -> int:
    """The first share's doublings, in 1/BASE_SCALE (an int16), as the discount keeps it."""
    return max(-(2**15), math.floor(BASE_SCALE * math.log(max(first, MIN_CASH)) / math.log(2)
                                    + 0.5))


class LinkCash:
    """Cash per request id, found by the url's fingerprint key (a 64-bit int)."""

    def __init__(self, per_doubling: float, other_host: float, relative: float = 0.0) -> None:
        if per_doubling < 0 or other_host < 1:
            raise ValueError("per_doubling must be >= 0 and other_host >= 1")
        self.per_doubling = per_doubling
        self.other_host = other_host
        # relative (0 to 1): how much of the first link's share (as a link within the host
        # would have brought it) the bonus discounts; at 1 it counts only the cash beyond
        # it, so a url's first link sets no host above another; at 0 plain OPIC cash.
        self.relative = relative
        # id -> log2 of that first share, kept to 1/64 of a doubling (2 bytes; allocated only
        # when relative > 0)
        self._base = array("h")
        self._table = array("I", bytes(4 * 1024))
        self._mask = 1023
        self._used = 0
        self._check = array("I")  # id -> the key's high 32 bits
        self._cash = array("f")  # id -> cash

    def __len__(self) -> int:
        return self._used

    @staticmethod
    def key(fingerprint: bytes) -> int:
        """The 64-bit key of a request fingerprint (its first eight bytes)."""
        return int.from_bytes(fingerprint[:8], "little")

    def share(self, parent_cash: float, outlinks: int, other_host: bool) -> float:
        """What one link of a page with this cash and out-degree hands its target."""
        share = parent_cash / max(outlinks, 1)
        return share * self.other_host if other_host else share

    def bonus(self, cash: float) -> int:
        """The weight cash adds (negative below the seed's cash)."""
        return link_bonus(self.per_doubling, cash)

    def first_bonus(self, cash: float, first: float) -> int:
        """The bonus of a url its first link just found: what weight_bonus gives after add
        (the cash as kept, float32; the first share as the discount keeps it)."""
        base = base_of(first) if self.relative else 0
        return link_bonus(self.per_doubling, as_float32(cash), self.relative, base)

    def weight_bonus(self, item: int) -> int:
        """The weight an id's cash adds now."""
        base = self._base[item] if self.relative else 0
        return link_bonus(self.per_doubling, self._cash[item], self.relative, base)

    def add(self, item: int, key: int | None, cash: float, first: float = 1.0) -> None:
        """A new id (one forgotten, or above every id added so far), its url's key (None:
        never to be found, a dont_filter request), its first cash and that share as a link
        within the host would have brought it (what `relative` discounts)."""
        if item >= len(self._cash):  # a new id: the columns grow
            self._lengthen(item + 1)
        check = 0 if key is None else key & 0xFFFFFFFF
        self._check[item] = check
        self._cash[item] = cash
        if self.relative:
            self._base[item] = base_of(first)
        if key is None:
            return
        self._used += 1
        if self._used * 4 > (self._mask + 1) * 3:
            self._grow()
        table, mask = self._table, self._mask
        at = check & mask
        while table[at] != _EMPTY:
            at = (at + 1) & mask
        table[at] = item + 1

    def forget(self, item: int) -> None:
        """The id's url is no longer to be found (its request was handed out): out of the
        table, which closes the gap behind it (linear probing's deletion), so its id may be
        added again for another url."""
        if item >= len(self._check):
            return
        table, mask = self._table, self._mask
        at = self._check[item] & mask
        while table[at] != item + 1:
            if table[at] == _EMPTY:
                return  # added without a key (a dont_filter request)
            at = (at + 1) & mask
        self._used -= 1
        gap, at = at, (at + 1) & mask
        while (slot := table[at]) != _EMPTY:
            home = self._check[slot - 1] & mask
            # The entry may move back to the gap unless its home lies after the gap, up to it.
            if (at - home) & mask >= (at - gap) & mask:
                table[gap] = slot
                gap = at
            at = (at + 1) & mask
        table[gap] = _EMPTY

    def _lengthen(self, size: int) -> None:
        """The columns, this long (only while the most pending at once grows)."""
        gap = size - len(self._cash)
        self._check.extend(array("I", [0]) * gap)
        self._cash.extend(array("f", [0.0]) * gap)
        if self.relative:
            self._base.extend(array("h", [0]) * gap)

    def find(self, key: int) -> int:
        """The id added with this key, or -1."""
        table, mask, check = self._table, self._mask, key & 0xFFFFFFFF
        at = check & mask
        while True:
            slot = table[at]
            if slot == _EMPTY:
                return -1
            if self._check[slot - 1] == check:
                return slot - 1
            at = (at + 1) & mask

    def cash(self, item: int) -> float:
        return self._cash[item] if 0 <= item < len(self._cash) else 0.0

    def credit(self, item: int, amount: float) -> float:
        """Add cash to an id; its cash now (as float32 holds it)."""
        self._cash[item] += amount
        return self._cash[item]

    def _grow(self) -> None:
        """Twice the table, every id placed again by its check (a table slot is the check's
        low bits: the 32 bits are uniform, being a hash's)."""
        mask = self._mask * 2 + 1
        table = array("I", bytes(4 * (mask + 1)))
        for slot in self._table:
            if slot != _EMPTY:
                _place(table, mask, self._check[slot - 1], slot - 1)
        self._table, self._mask = table, mask


def _place(table: array, mask: int, check: int, item: int) -> None:
    at = check & mask
    while table[at] != _EMPTY:
        at = (at + 1) & mask
    table[at] = item + 1
