"""Where a node of a shared crawl stands: its life and the faults of its Redis, in one place.

Its life, one way: JOINING (no request taken before TIANWANG_REDIS_QUORUM nodes are in the
bucket table), SEEDING (its spider's start requests still going in: until then the crawl is
not finished in the others' eyes), CRAWLING, and FINISHED once the job is (every queue empty,
no lease out, no node seeding). Beside it, a fault of Redis (faults.py) with its clock
(outage.py): while Redis is away or full the node takes nothing new, keeps what it would have
sent, and fetches what it holds; half a lease after its last heartbeat it stops handing
requests out (the others may take it for dead and give its requests to another node); past
TIANWANG_REDIS_OUTAGE_SECONDS it stops. Pure logic on a monotonic clock: no Redis, no Scrapy.
"""

from __future__ import annotations

from tianwang.distributed.outage import Outage

JOINING, SEEDING, CRAWLING, FINISHED = "joining", "seeding", "crawling", "finished"


class NodeState:
    def __init__(self, quorum: int, lease_seconds: float, outage_seconds: float,
                 now: float) -> None:
        self.phase = SEEDING if quorum <= 1 else JOINING
        self.start_done = False  # the spider's start requests are all out (StartDoneMiddleware)
        self.lease_seconds = lease_seconds
        self.outage = Outage(outage_seconds)
        self.fault: str | None = None  # faults.UNREACHABLE or FULL while one lasts
        self.cause = ""  # what Redis said, for the lines about it
        self.last_beat = now  # the last heartbeat Redis answered
        self.stopping = ""  # the reason the node closes for, once it gave up

    # --- life ------------------------------------------------------------------------------

    @property
    def quorum_met(self) -> bool:
        return self.phase != JOINING

    def quorum_reached(self) -> None:
        if self.phase == JOINING:
            self.phase = SEEDING

    @property
    def seeding(self) -> bool:
        return self.phase in (JOINING, SEEDING)

    def seeds_in(self) -> None:
        """Its start requests are all in Redis."""
        if self.phase == SEEDING:
            self.phase = CRAWLING

    @property
    def finished(self) -> bool:
        return self.phase == FINISHED

    def job_finished(self, done: bool) -> None:
        """What the end check said (a job found finished may get work again: the feed)."""
        if done and self.phase == CRAWLING:
            self.phase = FINISHED
        elif not done and self.phase == FINISHED:
            self.phase = CRAWLING

    def beat(self, now: float) -> None:
        self.last_beat = now

    # --- Redis at fault ----------------------------------------------------------------------

    def fault_began(self, kind: str, cause: str, now: float) -> bool:
        """A call met a fault; True if it is a new one (to be said)."""
        new = self.fault is None
        self.fault, self.cause = kind, cause
        self.outage.begin(now)
        return new

    def fault_ended(self, now: float) -> float:
        """Redis takes the node's calls again: how long it did not."""
        self.fault, self.cause = None, ""
        return self.outage.end(now)

    def may_hand_out(self, now: float) -> bool:
        """Not while a fault has lasted past half a lease since the last heartbeat: the
        others may take this node for dead, and what it fetched then be fetched twice."""
        return self.fault is None or now - self.last_beat <= self.lease_seconds / 2

    def may_take(self) -> bool:
        return self.quorum_met and self.fault is None and not self.stopping

    def past_bound(self, now: float) -> bool:
        return self.fault is not None and self.outage.over(now)
