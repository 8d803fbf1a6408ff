"""Queue slots: per host, and level by level under a level limit."""

from __future__ import annotations

from tianwang.frontier.levels import QueueSlots, split_name


class Hosts:
    """Host numbers by name (slots.py numbers the frontier's)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def number(self, name: str) -> int:
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)


class NumberedHosts:
    """Hosts numbered before (slots.py keeps them: measured apart from the queue slots)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._numbers = {name: number for number, name in enumerate(names)}

    def number(self, name: str) -> int:
        return self._numbers[name]


def test_without_levels_a_queue_slot_is_the_host() -> None:
    hosts = Hosts()
    slots = QueueSlots(hosts, levels=False)
    assert slots.name("a.test", 3) == "a.test"
    a = slots.slot("a.test", 3)
    assert not slots.added(a) and slots.passes(a)
    assert slots.host(a) == hosts.number("a.test")
    assert slots.of_host(slots.host(a)) == [a]


def test_a_deeper_request_waits_until_its_host_has_nothing_shallower_outstanding() -> None:
    slots = QueueSlots(Hosts(), levels=True)
    a1, a2, a3 = (slots.slot("a.test", depth) for depth in (1, 2, 3))
    b3 = slots.slot("b.test", 3)
    assert [slots.added(n) for n in (a3, a2, a1, a2, b3)] == [True, True, True, False, True]
    assert [slots.passes(n) for n in (a1, a2, a3, b3)] == [True, False, False, True]
    assert slots.finished(a1)  # the barrier moved: depth 2 may go
    assert [slots.passes(n) for n in (a2, a3)] == [True, False]
    assert not slots.finished(a2)  # one depth-2 request of a.test still outstanding
    assert not slots.passes(a3)
    assert slots.finished(a2)
    assert slots.passes(a3)
    assert slots.of_host(slots.host(a1)) == [a1, a2, a3]


def test_names_carry_the_depth_so_a_resume_rebuilds_the_barrier_from_names_alone() -> None:
    first = QueueSlots(Hosts(), levels=True)
    names = [first.name("a.test", 0), first.name("a.test", 1)]
    resumed = QueueSlots(Hosts(), levels=True)
    numbers = [resumed.slot(*split_name(name)) for name in names]
    for number in numbers:
        resumed.added(number)
    assert [resumed.passes(n) for n in numbers] == [True, False]
    assert resumed.host(numbers[0]) == resumed.host(numbers[1])


def test_a_slot_gives_back_its_name_and_a_hosts_slots_come_in_the_order_made() -> None:
    hosts = Hosts()
    slots = QueueSlots(hosts, levels=True)
    names = [slots.name(host, depth) for depth in (2, 1, 3) for host in ("a.test", "b.test")]
    numbers = [slots.slot(*split_name(name)) for name in names]
    assert numbers == list(range(6)) and len(slots) == 6
    assert [slots.slot(*split_name(name)) for name in names] == numbers  # known: the same
    assert [slots.name_of(n) for n in numbers] == names
    assert [slots.host_name(n) for n in numbers] == ["a.test", "b.test"] * 3
    assert slots.of_host(hosts.number("a.test")) == [0, 2, 4]
    assert slots.of_host(hosts.number("b.test")) == [1, 3, 5]
    assert slots.of_host(hosts.number("c.test")) == []  # a host with no slot yet
    flat = QueueSlots(Hosts(), levels=False)
    assert flat.name_of(flat.slot("a.test", 2)) == "a.test"


def test_a_host_ever_met_costs_a_few_bytes_of_slots_not_names_and_dict_entries() -> None:
    import tracemalloc

    hosts = NumberedHosts([f"www.host{i}.test" for i in range(3000)])
    slots = QueueSlots(hosts, levels=True)
    names = [slots.name(host, depth) for host in hosts.names for depth in (1, 2, 3)]
    tracemalloc.start()
    try:
        for name in names:
            slots.slot(*split_name(name))
        kept, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept / len(names) < 40  # bytes a slot (its name and two dict entries: about 200)
