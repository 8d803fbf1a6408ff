"""Outage: when a node without Redis probes, speaks and gives up, on a clock of its own.
(The same on real nodes and a real redis-server stopped under them: test_distributed_crawl.)"""

from __future__ import annotations

from tianwang.distributed.outage import NOTICE_INTERVAL, PROBE_INTERVAL, Outage


def test_no_outage_no_probe_no_notice_no_end() -> None:
    outage = Outage(bound=10)
    assert not outage.down and not outage.over(1e9)
    assert not outage.probe_due(1e9) and not outage.notice_due(1e9)
    assert outage.lasted(5) == 0


def test_probes_and_notices_come_at_their_intervals_from_the_start() -> None:
    outage = Outage(bound=0)
    outage.begin(100.0)
    outage.begin(150.0)  # a second failure during the outage does not restart it
    assert outage.lasted(160.0) == 60.0
    probes = [t for t in range(100, 110) if outage.probe_due(float(t))]
    assert probes == list(range(100 + int(PROBE_INTERVAL), 110, int(PROBE_INTERVAL)))
    notices = [t for t in range(100, 300) if outage.notice_due(float(t))]
    assert notices == [100 + int(NOTICE_INTERVAL) * k for k in (1, 2, 3)]


def test_the_bound_stops_the_node_and_zero_waits_forever() -> None:
    bounded, unbounded = Outage(bound=30), Outage(bound=0)
    for outage in (bounded, unbounded):
        outage.begin(0.0)
    assert not bounded.over(29.9) and bounded.over(30.0)
    assert not unbounded.over(1e9)


def test_an_end_says_how_long_and_the_next_outage_starts_afresh() -> None:
    outage = Outage(bound=30)
    outage.begin(0.0)
    assert outage.end(25.0) == 25.0 and not outage.down
    outage.begin(100.0)
    assert not outage.over(125.0) and outage.over(130.0)
