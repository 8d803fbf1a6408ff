"""Queue slots: per host, and level by level under a level limit."""

from __future__ import annotations

from tianwang.frontier.levels import QueueSlots


class Downloader:
    """Downloader slots by name; `busy` names the full ones."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.busy: set[str] = set()

    def number(self, name: str) -> int:
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)

    def full(self, number: int) -> bool:
        return self.names[number] in self.busy


def test_without_levels_a_queue_slot_is_the_downloader_slot() -> None:
    downloader = Downloader()
    slots = QueueSlots(downloader, levels=False)
    assert slots.name("a.test", 3) == "a.test"
    a = slots.number("a.test")
    slots.added(a)
    assert not slots.full(a)
    downloader.busy.add("a.test")
    assert slots.full(a)
    assert slots.downloader_slot(a) == downloader.number("a.test")


def test_a_deeper_request_waits_until_its_host_has_nothing_shallower_outstanding() -> None:
    slots = QueueSlots(Downloader(), levels=True)
    a1, a2, a3 = (slots.number(slots.name("a.test", depth)) for depth in (1, 2, 3))
    b3 = slots.number(slots.name("b.test", 3))
    for number in (a1, a2, a2, a3, b3):
        slots.added(number)
    assert [slots.full(n) for n in (a1, a2, a3, b3)] == [False, True, True, False]
    slots.finished(a1)
    assert [slots.full(n) for n in (a2, a3)] == [False, True]
    slots.finished(a2)
    assert slots.full(a3)  # one depth-2 request of a.test still outstanding
    slots.finished(a2)
    assert not slots.full(a3)


def test_a_full_host_is_full_at_every_depth() -> None:
    downloader = Downloader()
    slots = QueueSlots(downloader, levels=True)
    a1 = slots.number(slots.name("a.test", 1))
    slots.added(a1)
    downloader.busy.add("a.test")
    assert slots.full(a1)


def test_names_carry_the_depth_so_a_resume_rebuilds_the_barrier_from_names_alone() -> None:
    first = QueueSlots(Downloader(), levels=True)
    names = [first.name("a.test", 0), first.name("a.test", 1)]
    resumed = QueueSlots(Downloader(), levels=True)
    numbers = [resumed.number(name) for name in names]
    for number in numbers:
        resumed.added(number)
    assert [resumed.full(n) for n in numbers] == [False, True]
    assert resumed.downloader_slot(numbers[0]) == resumed.downloader_slot(numbers[1])
