"""A real DNS server on loopback, slow on purpose, for the resolver's tests and benchmark.

    python -m tests.dns_server --log queries.jsonl [--delay 0.5] [--hold N] [--ttl 300]

It prints its port, then answers over UDP (and TCP) on 127.0.0.1:
- any name under --zone (.test by default): an A record 127.0.0.1 with --ttl;
- nx-*.test: no such name (NXDOMAIN, with an SOA whose minimum is --ttl);
- v6-*.test: no A record, an AAAA ::1;
- alias-X.test: a CNAME to X.test, then X.test's A record;
- anything else: refused.
Every answer waits --delay seconds after its query came; with --hold N none is sent before N
names are waiting at once (or --delay has passed since the first of them: the server never
hangs a test), so a resolver that asks fewer than N names at a time shows it by the server's
count. --address and --port choose where it listens (a free port of 127.0.0.1 by default).
Each query is a JSON line in --log as it arrives (name, type, and how many names were
waiting then), and each answer one as it is sent ({"answered": name}).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from twisted.internet import defer
from twisted.internet.error import CannotListenError
from twisted.names import dns, error, server
from twisted.names.common import ResolverBase


class SlowZone(ResolverBase):
    def __init__(self, delay: float, hold: int, ttl: int, log: str, zone: str = "test") -> None:
        super().__init__()
        self.delay, self.hold, self.ttl, self.zone = delay, hold, ttl, zone
        self.log = open(log, "a", buffering=1, encoding="utf-8")
        self.waiting: list[tuple[defer.Deferred, object, str]] = []

    def _lookup(self, name: bytes, cls: int, type_: int, timeout: object) -> defer.Deferred:
        text = name.decode("ascii", "replace").lower()
        done: defer.Deferred = defer.Deferred()
        self.waiting.append((done, self._answer(text, type_), text))
        names = len({name for _done, _answer, name in self.waiting})  # a resend is no name
        self.log.write(json.dumps({"name": text, "type": dns.QUERY_TYPES.get(type_, type_),
                                   "waiting": names}) + "\n")
        from twisted.internet import reactor

        if not self.hold:  # each answer its --delay after its query
            reactor.callLater(self.delay, self._answer_one, done)
        elif len(self.waiting) == 1:  # the first of a batch: answered by --delay at the latest
            reactor.callLater(self.delay, self._release)
        if self.hold and names >= self.hold:
            self._release()
        return done

    def _answer_one(self, done: defer.Deferred) -> None:
        for at, (waiting, answer, name) in enumerate(self.waiting):
            if waiting is done:
                del self.waiting[at]
                self._send(done, answer, name)
                return

    def _release(self) -> None:
        waiting, self.waiting = self.waiting, []
        for done, answer, name in waiting:
            self._send(done, answer, name)

    def _send(self, done: defer.Deferred, answer: object, name: str) -> None:
        self.log.write(json.dumps({"answered": name}) + "\n")
        if isinstance(answer, Exception):
            done.errback(answer)
        else:
            done.callback(answer)

    def _answer(self, name: str, type_: int) -> object:
        if not name.endswith(f".{self.zone}"):
            return error.DNSQueryRefusedError(name)
        label = name.split(".", 1)[0]
        if label.startswith("nx-"):
            soa = dns.RRHeader(self.zone.encode(), dns.SOA, ttl=self.ttl, auth=True,
                               payload=dns.Record_SOA(mname=b"ns.test", rname=b"root.test",
                                                      minimum=self.ttl, ttl=self.ttl))
            message = dns.Message(rCode=dns.ENAME)
            message.authority = [soa]
            return error.DNSNameError(message)
        answers = []
        if label.startswith("alias-"):
            target = name[len("alias-"):]
            answers.append(dns.RRHeader(name.encode(), dns.CNAME, ttl=self.ttl,
                                        payload=dns.Record_CNAME(target.encode())))
            name = target
        if type_ == dns.A and not label.startswith("v6-"):
            answers.append(dns.RRHeader(name.encode(), dns.A, ttl=self.ttl,
                                        payload=dns.Record_A("127.0.0.1", ttl=self.ttl)))
        if type_ == dns.AAAA and label.startswith("v6-"):
            answers.append(dns.RRHeader(name.encode(), dns.AAAA, ttl=self.ttl,
                                        payload=dns.Record_AAAA("::1", ttl=self.ttl)))
        return answers, [], []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--hold", type=int, default=0)
    parser.add_argument("--ttl", type=int, default=300)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--zone", default="test")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    from twisted.internet import reactor  # here: importing this module installs no reactor

    zone = SlowZone(args.delay, args.hold, args.ttl, args.log, args.zone)
    factory = server.DNSServerFactory(authorities=[zone])
    factory.noisy = False
    for _ in range(100):  # a free UDP port whose TCP number is free too
        udp = reactor.listenUDP(args.port, dns.DNSDatagramProtocol(factory),
                                interface=args.address)
        port = udp.getHost().port
        try:
            reactor.listenTCP(port, factory, interface=args.address)
            break
        except CannotListenError:
            udp.stopListening()
    print(port, flush=True)
    reactor.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())


class DNSServerProcess:
    """`python -m tests.dns_server` in a subprocess; `address` ("127.0.0.1:port") once
    started, `queries()` the names it was asked, `most_waiting()` the most at once."""

    def __init__(self, log: Path, *options: str) -> None:
        self.log, self.options = log, options
        self.proc: subprocess.Popen[bytes] | None = None
        self.address = ""

    def __enter__(self) -> DNSServerProcess:
        from tests.conftest import ROOT

        command = [sys.executable, "-m", "tests.dns_server", "--log", str(self.log),
                   *self.options]
        self.proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.address = f"127.0.0.1:{int(self.proc.stdout.readline())}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def log_lines(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]

    def lines(self) -> list[dict]:
        """The queries, as they came (a client's resend of one too)."""
        return [line for line in self.log_lines() if "name" in line]

    def queries(self) -> list[str]:
        return [line["name"] for line in self.lines()]

    def most_waiting(self) -> int:
        """The most names waiting for their answers at once."""
        return max((line["waiting"] for line in self.lines()), default=0)

    def asked_again(self) -> list[str]:
        """Names asked after they were answered (a resend before the answer is not one)."""
        answered, again = set(), []
        for line in self.log_lines():
            if "answered" in line:
                answered.add(line["answered"])
            elif line["name"] in answered:
                again.append(line["name"])
        return again
