"""One crawl as N processes of this machine (TIANWANG_PROCESSES): every core at work.

A Scrapy process runs on one core (one reactor, Python's GIL). With TIANWANG_PROCESSES = N
the `crawl` command becomes a supervisor: it starts a redis-server of its own (localredis.py;
or uses TIANWANG_REDIS_URL when one is given), runs N copies of its own command line as nodes
of one shared crawl in it, and waits for them. The shared crawl does the rest: each host is
owned by one process (its politeness whole), a url is fetched once (the Bloom filter), a body
stored once (the MD5 claims in Redis), and a process that dies has its leases given back.

The processes write into the same TIANWANG_DATA_DIR: a host's files are written only by the
process owning it, the mirror table a whole line a write, each stats file is named by its
process. They start together (a process takes a second to start; one after the other, the
first would wait for the last) and none takes a request before all are in the bucket table
(TIANWANG_REDIS_QUORUM), so no host changes process as the crawl starts. A setting they
refuse is said by the first alone, in one line, and the others are stopped.

Ctrl-C and SIGTERM reach the supervisor (the processes run in their own session) and are
passed on once to each, so one Ctrl-C is one graceful stop of every process, a second one
forces it, as in a one-process crawl. The exit status and the closing line are those of the
crawl as a whole (tianwang/outcome.py over the processes' summed stats).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from tianwang.analysis.crawlreport import stats_of_process
from tianwang.config.shared_crawl import PASSWORD_ENV, safe_url, split_password, with_password
from tianwang.distributed.localredis import LocalRedis, die_with_parent
from tianwang.distributed.redisfrontier import job_prefix, table_size
from tianwang.outcome import REFUSED, combined

logger = logging.getLogger(__name__)

POLL = 0.1  # seconds between looks at the processes
CHILD_ENV = "TIANWANG_PROCESS"  # "i/N" in a process's environment: it is one of N
OWN_REDIS_ENV = "TIANWANG_PROCESS_OWN_REDIS"  # "1": on the supervisor's private redis-server


@dataclass(frozen=True)
class Plan:
    count: int
    command: list[str]  # this process's own command line, run by each process
    job: str  # TIANWANG_REDIS_JOB, or the spider's name
    redis_url: str  # "" to start a redis-server of our own
    jobdir: str  # "" when the crawl keeps no state between runs
    data_dir: str
    log_format: str
    metrics_port: int = 0  # TIANWANG_METRICS_PORT: process i serves its live view on it + i


def is_child() -> bool:
    return bool(os.environ.get(CHILD_ENV))


def own_redis() -> bool:
    """Whether this process is one of N on the supervisor's own redis-server, which nobody
    else reaches: its crawl has only the seeds its processes bring."""
    return is_child() and os.environ.get(OWN_REDIS_ENV) == "1"


def says_refusals() -> bool:
    """Whether this process says why it refuses to start: not one of N but the first (the
    others would say the same again)."""
    return not is_child() or os.environ[CHILD_ENV].startswith("0/")


def run(plan: Plan) -> int:
    """Run the crawl as plan.count processes; the exit status of the crawl as a whole."""
    server = nullcontext(None) if plan.redis_url else LocalRedis(plan.jobdir or None)
    with server as local:
        url = plan.redis_url or local.url
        logger.info("crawl in %d processes sharing %s (job %s)", plan.count,
                    "a redis-server of its own" if local else safe_url(url), plan.job)
        with _forwarded_signals() as children:
            children.extend(_start(plan, url, i, own=local is not None)
                            for i in range(plan.count))
            statuses = wait_all(children, lambda: _joined(url, plan.job) < plan.count)
    return _finish(plan, children, statuses)


def _node(i: int) -> str:
    return f"{socket.gethostname()}-{os.getpid()}-p{i}"


def _start(plan: Plan, url: str, i: int, own: bool) -> subprocess.Popen[bytes]:
    settings = {
        "TIANWANG_PROCESSES": "1",
        "TIANWANG_REDIS_URL": split_password(url)[0],
        "TIANWANG_REDIS_JOB": plan.job,
        "TIANWANG_NODE_NAME": _node(i),
        # No process takes a request before all are in the bucket table: no host moves.
        "TIANWANG_REDIS_QUORUM": str(plan.count),
        "LOG_FORMAT": f"[p{i}] {plan.log_format}",
    }
    if plan.jobdir:
        settings["JOBDIR"] = str(Path(plan.jobdir) / f"p{i}")
    if plan.metrics_port:
        settings["TIANWANG_METRICS_PORT"] = str(plan.metrics_port + i)
    # Its url without a password (which the children inherit in the environment: ps shows
    # every user a command line), and not the one this command was given.
    command = _without_setting(plan.command, "TIANWANG_REDIS_URL")
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    env = {**os.environ, CHILD_ENV: f"{i}/{plan.count}", OWN_REDIS_ENV: "1" if own else "0"}
    password = split_password(url)[1]
    if password:
        env[PASSWORD_ENV] = password
    # Its own session: a Ctrl-C at the terminal reaches the supervisor only, which passes it
    # on once (the terminal's and ours would make two: Scrapy's forced shutdown).
    return subprocess.Popen(command, env=env, start_new_session=True, preexec_fn=die_with_parent)


def _without_setting(command: list[str], name: str) -> list[str]:
    """The command line without its -s NAME=... (or --set NAME=..., --set=NAME=...)."""
    kept, skip = [], False
    for i, arg in enumerate(command):
        if skip:
            skip = False
            continue
        if arg in ("-s", "--set") and i + 1 < len(command) and \
                command[i + 1].startswith(f"{name}="):
            skip = True
            continue
        if arg.startswith(f"--set={name}=") or arg.startswith(f"-s{name}="):
            continue
        kept.append(arg)
    return kept


def wait_all(children: list[subprocess.Popen[bytes]], short: Callable[[], bool]) -> list[int]:
    """Their exit statuses, once all ended. One that refused to start, or failed before all
    had joined (`short()`: the bucket table holds fewer than all), stops the others: they
    would wait for it (the quorum) for ever. One failing later does not: its work goes to
    the others, as a dead node's does."""
    stopping, judged = False, 0  # judged: failures seen (short() asked once for each)
    while any(child.poll() is None for child in children):
        failed = [child for child in children if child.returncode not in (None, 0)]
        if len(failed) > judged and not stopping:
            judged = len(failed)
            status = failed[-1].returncode
            if status == REFUSED or short():
                stopping = True
                if status != REFUSED:
                    logger.error("a process ended (status %d) before all had joined the "
                                 "crawl: stopping the others", status)
                for child in children:
                    if child.poll() is None:
                        child.terminate()
        time.sleep(POLL)
    return [child.returncode for child in children]


def _joined(url: str, job: str) -> int:
    with redis.Redis.from_url(with_password(url)) as client:
        return table_size(client, job_prefix(job))


@contextmanager
def _forwarded_signals() -> Iterator[list[subprocess.Popen[bytes]]]:
    children: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: Any) -> None:
        logger.info("%s: passed on to the %d processes", signal.Signals(signum).name,
                    len(children))
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    saved = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield children
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        for child in children:  # an error in the supervisor: no process is left behind
            if child.poll() is None:
                child.terminate()
                child.wait()


def _finish(plan: Plan, children: list[subprocess.Popen[bytes]], statuses: list[int]) -> int:
    if statuses[0] == REFUSED:
        return REFUSED  # the first said why
    if REFUSED in statuses:
        print(f"tianwang: error: process p{statuses.index(REFUSED)} refused to start, and p0 "
              "did not: run the crawl with TIANWANG_PROCESSES=1 to see why", file=sys.stderr)
        return REFUSED
    stats = [stats_of_process(plan.data_dir, child.pid) for child in children]
    if any(s is None for s in stats):
        # A process killed before writing its stats: its status says how it ended.
        status = max(statuses)
        logger.error("crawl in %d processes ended with status %d (exit statuses %s)",
                     plan.count, status, statuses)
        return status
    result = combined([s for s in stats if s is not None])
    (logger.info if result.status == 0 else logger.error)(
        "%s [%d processes]", result.line, plan.count)
    return result.status
