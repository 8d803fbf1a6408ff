"""FrontierQueue: seed 000's sorted and random picks, alternation, ready hosts."""

from __future__ import annotations

import heapq
import random
from bisect import bisect_left
from collections import Counter

import pytest

from tianwang.frontier.queue import FrontierQueue

# Chi-square critical value, 19 degrees of freedom, significance 0.001 (any table).
CHI2_19_999 = 43.820


SLOTS = range(64)  # the slots the tests push to are below this


def pop_ready(queue: FrontierQueue, full=None) -> int | None:
    """A pick, the slots `full` says are not ready blocked first (the scheduler's part)."""
    for slot in SLOTS:
        if full is not None and full(slot):
            queue.block(slot)
        else:
            queue.unblock(slot)
    return queue.pop()


def drain(queue: FrontierQueue, full=None) -> list[int | None]:
    out = []
    while len(queue):
        item = pop_ready(queue, full)
        if item is None:
            break
        out.append(item)
    return out


def sorted_only(pushes: list[tuple[int, int, int]]) -> list[int]:
    """Pop order with sorted picks only (the cycle longer than the test)."""
    queue = FrontierQueue(10**6, 1, seed=0)
    for item, (weight, priority) in enumerate((w, p) for w, p, _ in pushes):
        queue.push(item, (weight, priority), 0)
    return [queue.pop() for _ in pushes]


@pytest.mark.parametrize(
    ("pushes", "order"),
    [
        # (weight, priority, slot) in push order -> sorted pick order
        ([(5, 0, 0), (9, 0, 0), (7, 0, 0)], [1, 2, 0]),
        ([(8, 0, 0), (8, 0, 0), (8, 0, 0)], [0, 1, 2]),  # equal weights: first come first
        ([(8, 0, 0), (8, 2, 0), (9, -5, 0)], [2, 1, 0]),  # weight first, priority breaks ties
        ([(0, 0, 0), (10, 0, 0), (0, 0, 0), (10, 0, 0)], [1, 3, 0, 2]),
    ],
)
def test_sorted_picks_take_the_highest_weight_first_come_first_served(
    pushes: list[tuple[int, int, int]], order: list[int]
) -> None:
    assert sorted_only(pushes) == order


@pytest.mark.parametrize(("sorted_picks", "random_picks", "host_picks"),
                         [(1, 1, 0), (3, 1, 0), (1, 4, 0), (2, 3, 0), (3, 0, 1), (2, 1, 2)])
def test_picks_alternate_n_sorted_then_h_host_then_m_random(sorted_picks: int,
                                                           random_picks: int,
                                                           host_picks: int) -> None:
    queue = FrontierQueue(sorted_picks, random_picks, seed=5, host_picks=host_picks)
    for item in range(200):
        queue.push(item, (item % 7, 0), item % 13)
    kinds = []
    for _ in range(100):
        before = dict(queue.picks)
        queue.pop()
        kinds.append(next(kind[0] for kind in ("sorted", "host", "random")
                          if queue.picks[kind] > before.get(kind, 0)))
    cycle = "s" * sorted_picks + "h" * host_picks + "r" * random_picks
    assert "".join(kinds) == (cycle * 100)[:100]


@pytest.mark.parametrize(("sorted_picks", "random_picks", "host_picks"),
                         [(0, 1, 0), (1, 0, 0), (-1, 1, 0), (1, -1, 1), (1, 1, -1)])
def test_pick_counts_that_make_no_cycle_are_refused(sorted_picks: int, random_picks: int,
                                                    host_picks: int) -> None:
    with pytest.raises(ValueError, match="picks"):
        FrontierQueue(sorted_picks, random_picks, host_picks=host_picks)


def reference_picks(pushes: list[tuple[int, int, int]], sorted_picks: int, host_picks: int,
                    full_at: dict[int, set[int]]) -> list[int]:
    """The pick order as design.md section 3 states it, by brute force over the pending
    items: a sorted pick is the highest (weight, priority) of a ready slot, the oldest among
    equals; a host pick goes to the ready slots in turn and takes that slot's highest
    (weight, priority), the oldest among equals. The turns: slots join at the back when
    first pushed to, and when they become ready again if they had left; a slot whose turn
    finds it not ready, or with nothing pending, leaves them. full_at[k]: the slots not
    ready at the k-th pick."""
    pending = dict(enumerate(pushes))  # id -> (weight, priority, slot)
    rotation = list(dict.fromkeys(slot for _, _, slot in pushes))
    order: list[int] = []
    cycle = 0
    was_full: set[int] = set()

    def best(items: list[int]) -> int:
        return max(items, key=lambda i: (pending[i][0], pending[i][1], -i))

    while pending:
        full = full_at.get(len(order), set())
        for slot in sorted(was_full - full):  # ready again: back in the turns if out
            if slot not in rotation and any(p[2] == slot for p in pending.values()):
                rotation.append(slot)
        was_full = full
        free = [i for i in pending if pending[i][2] not in full]
        if not free:
            break
        item = None
        if cycle >= sorted_picks:  # a host pick
            while rotation:
                slot = rotation.pop(0)
                mine = [i for i in pending if pending[i][2] == slot]
                if not mine or slot in full:
                    continue  # out of the turns
                rotation.append(slot)
                item = best(mine)
                break
        if item is None:
            item = best(free)
        del pending[item]
        order.append(item)
        cycle = (cycle + 1) % (sorted_picks + host_picks)
    return order


@pytest.mark.parametrize(("sorted_picks", "host_picks", "seed"),
                         [(3, 1, 1), (1, 1, 2), (1, 3, 3), (2, 2, 4)])
def test_host_picks_give_the_slots_in_turn_their_best_request(sorted_picks: int,
                                                             host_picks: int,
                                                             seed: int) -> None:
    rng = random.Random(seed)
    pushes = [(rng.randrange(6), rng.randrange(3), rng.choice([0, 0, 0, 1, 1, 2, 3, 4]))
              for _ in range(300)]
    # A full slot at some picks, early on (late, its items could be all that is left).
    full_at = {k: {rng.randrange(5)} for k in range(200) if rng.random() < 0.3}
    queue = FrontierQueue(sorted_picks, 0, host_picks=host_picks)
    for item, (weight, priority, slot) in enumerate(pushes):
        queue.push(item, (weight, priority), slot)
    order: list[int] = []
    while len(queue):
        full = full_at.get(len(order), set())
        item = pop_ready(queue, lambda slot, full=full: slot in full)
        assert item is not None
        order.append(item)
    assert order == reference_picks(pushes, sorted_picks, host_picks, full_at)
    assert queue.picks["host"] > 50


def test_a_host_pick_finds_a_raised_request_at_its_new_weight() -> None:
    queue = FrontierQueue(1, 0, host_picks=1)
    for item in range(4):
        queue.push(item, (5, 0), 0)  # one slot: its best is the oldest, id 0
    queue.push(4, (9, 0), 1)
    assert queue.raise_weight(3, (7, 0))
    assert queue.pop() == 4  # sorted: the highest weight
    assert queue.pop() == 3  # host pick, slot 0 (slot 1 left the turns): its raised id
    assert queue.picks == {"sorted": 1, "host": 1, "random": 0}
    assert [queue.pop() for _ in range(3)] == [0, 1, 2]


def test_a_slot_pushed_to_again_rejoins_the_turns() -> None:
    queue = FrontierQueue(1, 0, host_picks=1)
    queue.push(0, (5, 0), 0)
    queue.push(1, (1, 0), 1)
    assert [queue.pop(), queue.pop()] == [0, 1]  # sorted, then host: slot 0 has none left
    queue.push(2, (9, 0), 0)
    queue.push(3, (0, 0), 1)
    queue.push(4, (8, 0), 1)
    # Sorted takes 2; the host pick's turn is slot 0's (empty: out), then slot 1's best, 4.
    assert [queue.pop(), queue.pop(), queue.pop()] == [2, 4, 3]


def test_ids_above_31_bits_are_refused() -> None:
    queue = FrontierQueue(1, 1)
    with pytest.raises(ValueError, match="above"):
        queue.push(2**31, (0, 0), 0)


def test_a_slot_not_ready_is_skipped_and_its_requests_keep_their_place() -> None:
    queue = FrontierQueue(10**6, 1, seed=1)  # only sorted picks below
    slots = [0, 0, 1, 0, 1, 2]  # ids 0..5, all weight 5
    for item, slot in enumerate(slots):
        queue.push(item, (5, 0), slot)
    queue.block(0)
    picks = [queue.pop() for _ in range(3)]
    assert picks == [2, 4, 5]  # slot 0's requests skipped, the others in arrival order
    assert queue.pop() is None
    queue.unblock(0)
    assert [queue.pop() for _ in range(3)] == [0, 1, 3]  # in their original order


def test_a_request_kept_back_still_leaves_before_later_ones_of_its_weight() -> None:
    queue = FrontierQueue(10**6, 1, seed=1)
    queue.push(0, (5, 0), 0)
    queue.push(1, (5, 0), 1)
    queue.block(0)
    assert queue.pop() == 1
    queue.push(2, (5, 0), 1)
    queue.unblock(0)
    assert queue.pop() == 0  # older than 2


def test_a_pick_with_every_slot_full_returns_none_and_loses_nothing() -> None:
    queue = FrontierQueue(1, 1, seed=1)
    for item in range(10):
        queue.push(item, (item % 3, 0), item % 2)
    assert pop_ready(queue, lambda slot: True) is None
    assert len(queue) == 10
    assert sorted(drain(queue)) == list(range(10))


def test_random_picks_skip_full_slots() -> None:
    queue = FrontierQueue(1, 1, seed=3)
    for item in range(1000):
        queue.push(item, (0, 0), item % 4)
    picks = [pop_ready(queue, lambda slot: slot == 3) for _ in range(400)]
    assert queue.picks["random"] == 200
    assert not [item for item in picks if item % 4 == 3]


def test_ids_may_have_gaps_and_a_pending_one_is_never_pushed_again() -> None:
    queue = FrontierQueue(1, 1, seed=1)
    queue.push(3, (1, 0), 0)
    queue.push(10, (2, 0), 0)
    queue.push(4, (1, 0), 0)
    with pytest.raises(ValueError, match="while pending"):
        queue.push(10, (1, 0), 0)
    assert sorted(drain(queue)) == [3, 4, 10]


def test_pending_by_key_counts_what_is_left() -> None:
    queue = FrontierQueue(1, 1, seed=1)
    for item in range(30):
        queue.push(item, (item % 3, 0), 0)
    for _ in range(12):
        queue.pop()
    counts = queue.pending_by_key()
    assert sum(counts.values()) == len(queue) == 18
    assert set(counts) <= {(0, 0), (1, 0), (2, 0)}


@pytest.mark.parametrize("turns", [0, 16])
def test_alternation_measured_over_10000_picks(turns: int) -> None:
    """Sorted picks are exactly the highest-weight pending ids (first come among equals, or
    with turns, each slot's k-th before any slot's k+1-th for k < turns); random picks are
    uniform over the pending ids (chi-square, fixed seed)."""
    rng = random.Random(20261122)
    n = 20_000
    weights = [rng.choice([10, 9, 9, 8, 8, 8, 7, 6, 5, 3, 0]) for _ in range(n)]
    slots = [rng.randrange(50) for _ in range(n)]
    queue = FrontierQueue(1, 1, seed=99, turns=turns)
    for item, weight in enumerate(weights):
        queue.push(item, (weight, 0), slots[item])
    # Independent reference: a heap of (-weight, turn, id) with lazy deletion, a sorted id
    # list; an id's turn is how many ids of its slot and weight came before it, at most turns.
    seen: dict[tuple[int, int], int] = {}
    heap = []
    for item, weight in enumerate(weights):
        before = seen.get((slots[item], weight), 0)
        seen[slots[item], weight] = before + 1
        heap.append((-weight, min(before, turns), item))
    heapq.heapify(heap)
    pending = list(range(n))
    taken: set[int] = set()
    bins = [0] * 20
    mismatches = 0
    for _ in range(10_000):
        before = queue.picks["sorted"]
        item = queue.pop()
        if queue.picks["sorted"] > before:
            while heap[0][2] in taken:
                heapq.heappop(heap)
            mismatches += heap[0][2] != item
        else:
            rank = bisect_left(pending, item)
            bins[rank * len(bins) // len(pending)] += 1
        taken.add(item)
        del pending[bisect_left(pending, item)]
    assert mismatches == 0
    assert queue.picks == {"sorted": 5000, "random": 5000}
    expected = sum(bins) / len(bins)
    chi2 = sum((count - expected) ** 2 / expected for count in bins)
    assert chi2 < CHI2_19_999, (chi2, bins)
    # And the random picks did reach low weights the sorted ones never touch.
    assert min(weights[item] for item in taken) == 0


def test_pending_by_weight_follows_pushes_raises_and_pops() -> None:
    """The running count per weight against a walk over every pending id."""
    rng = random.Random(3)
    queue = FrontierQueue(sorted_picks=3, random_picks=1, seed=3)
    for item in range(400):
        queue.push(item, (rng.randrange(1, 6), 0), rng.randrange(8))
        if rng.random() < 0.3:
            queue.raise_weight(rng.randrange(item + 1), (rng.randrange(3, 9), 0))
        if rng.random() < 0.4:
            queue.pop()
        walked: Counter[int] = Counter()
        for (weight, _), count in queue.pending_by_key().items():
            walked[weight] += count
        assert queue.pending_by_weight() == walked


@pytest.mark.parametrize(("first", "seed_first"), [(2, 8), (1, 0), (0, 3)])
def test_a_hosts_first_items_go_before_the_weights_turn_by_turn(first: int,
                                                                 seed_first: int) -> None:
    """Against an independent reference: a slot's items go first while fewer than `first`
    of its items did (`seed_first` once a seed was pushed on it), before every other item,
    every slot's k-th first before any slot's k+1-th, the higher weight first within a turn,
    then the older; the rest by weight, hosts taking turns among equals, then the older.
    Sorted picks only; a tenth of the slots get a seed, some of them late."""
    rng = random.Random(20261125)
    n, turns = 6_000, 4
    queue = FrontierQueue(10 * n, 1, seed=1, turns=turns, first=first, seed_first=seed_first)
    given: Counter[int] = Counter()
    seeded: set[int] = set()
    same_key: Counter[tuple[int, int]] = Counter()
    reference = []
    for item in range(n):
        slot, weight = rng.randrange(300), rng.choice([9, 8, 8, 7, 5, 5, 3, 0])
        seed = slot % 10 == 0 and rng.random() < 0.3
        queue.push(item, (weight, 0), slot, seed)
        if seed:
            seeded.add(slot)
        if given[slot] < (seed_first if slot in seeded else first):
            reference.append(((0, given[slot], -weight), item))
            given[slot] += 1
        else:
            turn = min(same_key[slot, weight], turns)
            same_key[slot, weight] += 1
            reference.append(((1, -weight, turn), item))
    expected = [item for _key, item in sorted(reference)]
    got = [queue.pop() for _ in range(n)]
    assert got == expected
    firsts = sum(1 for key, _item in reference if key[0] == 0)
    assert queue.picks == {"first": firsts, "sorted": n - firsts, "random": 0}


def test_a_raised_first_item_keeps_its_turn_and_counts_at_its_new_weight() -> None:
    queue = FrontierQueue(1000, 1, first=1)
    queue.push(0, (5, 0), slot=0)  # slot 0's first: before anything
    queue.push(1, (9, 0), slot=0)
    queue.push(2, (1, 0), slot=1)  # slot 1's first
    assert queue.raise_weight(0, (7, 0))
    assert queue.pending_by_key() == Counter({(7, 0): 1, (9, 0): 1, (1, 0): 1})
    assert queue.pending_by_weight() == Counter({7: 1, 9: 1, 1: 1})
    assert drain(queue) == [0, 2, 1]


@pytest.mark.parametrize("bad", [(-1, 0), (0, 17)])
def test_first_items_out_of_range_are_refused(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="from 0 to 16"):
        FrontierQueue(1, 1, first=bad[0], seed_first=bad[1])


def test_first_items_go_before_the_alternation_and_are_not_counted_in_it() -> None:
    """At 1:1, a random pick could take any pending id; the hosts' first ids all leave
    first all the same, then the N:M cycle runs exactly as without them."""
    queue = FrontierQueue(1, 1, seed=4, first=1)
    for item in range(200):
        queue.push(item, (item % 5, 0), slot=item % 20)
    order = drain(queue)
    assert sorted(order[:20]) == list(range(20))  # each slot's first id, before anything
    assert order[:20] == sorted(range(20), key=lambda item: (-(item % 5), item))
    assert queue.picks == {"first": 20, "sorted": 90, "random": 90}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("sorted_picks", "random_picks", "turns", "first", "seed_first"),
                         [(1, 1, 0, 0, 0), (3, 1, 16, 2, 8), (1, 4, 4, 1, 0), (2, 1, 31, 0, 3)])
def test_the_ready_host_queue_picks_what_the_queue_before_it_picked(
        seed: int, sorted_picks: int, random_picks: int, turns: int, first: int,
        seed_first: int) -> None:
    """Against the queue it replaced (tests/reference_queue.py, which skipped the items of
    full slots at each pick): the same pushes and picks, with the same slots not ready at
    each pick, give the same ids, pick by pick (sorted, random and first picks; the host
    picks' turns are the new queue's own: test above; raises: test below, where the old
    queue was not consistent with itself)."""
    from tests.reference_queue import FrontierQueue as OldQueue

    rng = random.Random(seed)
    options = {"seed": seed, "turns": turns, "first": first, "seed_first": seed_first}
    assert turns <= 31  # TIANWANG_HOST_TURNS' bound (the score's room for turns)
    new = FrontierQueue(sorted_picks, random_picks, **options)
    old = OldQueue(sorted_picks, random_picks, **options)
    picks, item = 0, 0
    for _step in range(3000):
        action = rng.random()
        if action < 0.5:
            key = (rng.randrange(-3, 12), rng.randrange(-2, 3))
            slot, is_seed = rng.randrange(40), rng.random() < 0.05
            new.push(item, key, slot, is_seed)
            old.push(item, key, slot, is_seed)
            item += 1
        else:
            full = {slot for slot in range(40) if rng.random() < 0.4}
            got = pop_ready(new, lambda slot, full=full: slot in full)
            assert got == old.pop(lambda slot, full=full: slot in full), f"pick {picks}"
            picks += 1
    assert picks > 1000 and new.picks == old.picks
    assert new.pending_by_weight() == old.pending_by_weight()


@pytest.mark.parametrize("seed", range(4))
def test_a_raised_request_files_after_the_requests_already_at_its_new_key(seed: int) -> None:
    """Sorted picks with raises, against a brute force over the pending items: the best
    rank (a host's first items by turn, then key; the others by key, then turn), then the
    earliest arrival, a raise being a new arrival at its new key with its slot's next turn
    there. (The old queue compared a parked request with its level's head by id, not by
    arrival, so a raised request could leave before the requests that were at its new
    key first: not carried over.)"""
    rng = random.Random(seed)
    queue = FrontierQueue(10**6, 1, turns=3, first=1)
    pending: dict[int, tuple[tuple, int]] = {}  # id -> (rank, arrival)
    turns: Counter[tuple[int, tuple[int, int]]] = Counter()
    firsts: set[int] = set()
    weights: dict[int, int] = {}
    arrival, item = 0, 0

    def file(item: int, slot: int, key: tuple[int, int]) -> None:
        nonlocal arrival
        turn = min(turns[slot, key], 3)
        turns[slot, key] += 1
        pending[item] = ((0, key[0], key[1], -turn), arrival)
        arrival += 1

    slots: dict[int, int] = {}
    for _step in range(2000):
        action = rng.random()
        if action < 0.5:
            slot, key = rng.randrange(15), (rng.randrange(0, 8), rng.randrange(-1, 2))
            queue.push(item, key, slot)
            slots[item], weights[item] = slot, key[0]
            if slot not in firsts:  # the slot's first item: before everything, by key
                firsts.add(slot)
                pending[item] = ((1, key[0], key[1], 0), arrival)
                arrival += 1
            else:
                file(item, slot, key)
            item += 1
        elif action < 0.7 and pending:
            raised = rng.choice(sorted(pending))
            key = (rng.randrange(0, 12), rng.randrange(-1, 2))
            moved = queue.raise_weight(raised, key)
            assert moved == (key[0] > weights[raised])
            if moved:
                weights[raised] = key[0]
                if pending[raised][0][0] == 0:  # a first item keeps its place
                    file(raised, slots[raised], key)
        elif pending:
            expected = max(pending, key=lambda i: (pending[i][0], -pending[i][1]))
            assert queue.pop() == expected
            del pending[expected]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("sorted_picks", "host_picks", "random_picks", "turns", "first"),
                         [(1, 0, 1, 0, 0), (7, 1, 1, 4, 2), (3, 1, 0, 31, 1)])
def test_numbers_given_out_again_and_arrivals_renumbered_change_no_pick(
        seed: int, sorted_picks: int, host_picks: int, random_picks: int, turns: int,
        first: int) -> None:
    """A queue whose items are numbered by new_item and released once taken, and whose
    arrivals are renumbered every few dozen pushes, picks pick by pick what a queue given
    ever-growing ids and never renumbered picks (pushes, raises, slots blocked at random),
    while its columns stay in proportion to what is pending."""
    rng = random.Random(seed)
    options = {"seed": seed, "turns": turns, "first": first, "host_picks": host_picks}
    plain = FrontierQueue(sorted_picks, random_picks, **options)
    reused = FrontierQueue(sorted_picks, random_picks, **options)
    reused.renumber_after = 16
    plain_id, ids = 0, {}  # reused's item -> plain's id
    most_pending = picks = 0
    for _step in range(4000):
        action = rng.random()
        if action < 0.45:
            key = (rng.randrange(-3, 12), rng.randrange(-2, 3))
            slot, is_seed = rng.randrange(40), rng.random() < 0.05
            item = reused.new_item()
            reused.push(item, key, slot, is_seed)
            plain.push(plain_id, key, slot, is_seed)
            ids[item], plain_id = plain_id, plain_id + 1
        elif action < 0.55 and ids:
            item = rng.choice(list(ids))
            key = (rng.randrange(0, 20), 0)
            assert reused.raise_weight(item, key) == plain.raise_weight(ids[item], key)
        else:
            full = {slot for slot in range(40) if rng.random() < 0.3}
            got = pop_ready(reused, lambda slot, full=full: slot in full)
            expected = pop_ready(plain, lambda slot, full=full: slot in full)
            assert (None if got is None else ids.pop(got)) == expected, f"pick {picks}"
            if got is not None:
                reused.release(got)
            picks += 1
        most_pending = max(most_pending, len(reused))
    assert picks > 1000 and reused.picks == plain.picks
    assert reused.pending_by_key() == plain.pending_by_key()
    assert reused.new_item() <= most_pending  # numbers reused, never past the most pending
    assert reused._renumbered > 10 and len(reused._item_of) < 16 + 4 * len(reused)
