"""The crawl's DNS resolver: asynchronous, cached for as long as each answer lives.

Scrapy's default resolver runs getaddrinfo in Twisted's thread pool of
REACTOR_THREADPOOL_MAXSIZE (10) threads: a crawl meeting new hosts resolves ten names at a
time, and a name whose server is slow holds a thread for up to DNS_TIMEOUT. Its cache keeps
DNSCACHE_SIZE names first in, first out, and forgets neither a changed address (no TTL) nor
a failure (none is kept: every request of a dead name asks again).

This one, installed by the add-on as TWISTED_DNS_RESOLVER (read before the crawler exists,
as Scrapy reads it), asks the name servers itself over UDP, as Heritrix and BUbiNG do
(dnsjava): Twisted's DNS client (twisted.names), reading the servers of /etc/resolv.conf (or
TIANWANG_DNS_SERVERS), after the names of a hosts file (TIANWANG_DNS_HOSTS_FILE, /etc/hosts).
Any number of names resolve at once; a name asked again while its query is out waits for
that query. Answers are kept, least recently used first out, DNSCACHE_SIZE of them, each for
its DNS time to live but at least TIANWANG_DNS_MIN_TTL seconds (Heritrix keeps an address at
least 6 hours); a name that does not resolve (no such name, no address, no answer in
DNS_TIMEOUT) is kept as such for TIANWANG_DNS_FAILURE_TTL seconds, so the other requests of
a dead host fail at once instead of each waiting out a lookup in a concurrency slot.

It is reactor.nameResolver: Scrapy's HTTP client connects through it, and the host filter's
private-address check (middlewares/hostfilter.py) asks it too, so both see the same cached
answer. IPv4 addresses, as Scrapy's default resolver; IPv6 ones for a name with none.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address
from typing import Any

from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IHostnameResolver, IHostResolution, IResolutionReceiver
from twisted.names import client, dns
from twisted.names.error import DNSNameError
from twisted.python.failure import Failure
from zope.interface import implementer

from tianwang.config import SettingError, get_bool, get_int

logger = logging.getLogger(__name__)

RESOLV_CONF = "/etc/resolv.conf"
CNAME_HOPS = 8  # CNAMEs followed from a name at most (a loop or a chain past it: no address)
# Twisted's own retry schedule (seconds before the query is sent again, server after server),
# cut to DNS_TIMEOUT.
RETRIES = (1, 3, 11, 45)


@dataclass(frozen=True)
class ResolverConfig:
    cache_size: int  # DNSCACHE_SIZE (0 when DNSCACHE_ENABLED is off)
    timeout: float  # DNS_TIMEOUT
    servers: tuple[tuple[str, int], ...]  # TIANWANG_DNS_SERVERS; () = resolv.conf's
    hosts_file: str  # TIANWANG_DNS_HOSTS_FILE
    min_ttl: int  # TIANWANG_DNS_MIN_TTL
    failure_ttl: int  # TIANWANG_DNS_FAILURE_TTL

    @classmethod
    def from_settings(cls, settings: Any) -> ResolverConfig:
        enabled = get_bool(settings, "DNSCACHE_ENABLED")
        timeout = settings.getfloat("DNS_TIMEOUT")
        if not timeout > 0:
            raise SettingError("DNS_TIMEOUT", settings.get("DNS_TIMEOUT"), "seconds above 0")
        hosts_file = settings.get("TIANWANG_DNS_HOSTS_FILE") or ""
        if not isinstance(hosts_file, str):
            raise SettingError("TIANWANG_DNS_HOSTS_FILE", hosts_file, "a file path, or empty")
        return cls(
            cache_size=get_int(settings, "DNSCACHE_SIZE", minimum=1) if enabled else 0,
            timeout=timeout,
            servers=parse_servers(settings, "TIANWANG_DNS_SERVERS"),
            hosts_file=hosts_file,
            min_ttl=get_int(settings, "TIANWANG_DNS_MIN_TTL", minimum=0),
            failure_ttl=get_int(settings, "TIANWANG_DNS_FAILURE_TTL", minimum=0),
        )


def parse_servers(settings: Any, name: str) -> tuple[tuple[str, int], ...]:
    """Name servers as "address" or "address:port" ([v6]:port), or () for resolv.conf's."""
    value = settings.get(name)
    try:
        entries = [] if value in ("", None) else settings.getlist(name)
    except ValueError:
        entries = None
    servers = []
    for entry in entries if entries is not None else [None]:
        try:
            servers.append(_server(entry.strip()))
        except (AttributeError, ValueError):
            raise SettingError(name, value, "name server addresses (10.0.0.2, 10.0.0.2:5353, "
                                            "[::1]:53), or empty for /etc/resolv.conf's") from None
    return tuple(servers)


def _server(entry: str) -> tuple[str, int]:
    host, port = entry, dns.PORT
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") else dns.PORT
    elif entry.count(":") == 1:
        host, _, number = entry.partition(":")
        port = int(number)
    ip_address(host)  # ValueError unless an address: a name would need a resolver itself
    if not 0 < port < 65536:
        raise ValueError(port)
    return host, port


def retries(timeout: float) -> tuple[float, ...]:
    """Twisted's retry schedule, cut so that a lookup ends within `timeout` seconds."""
    schedule, left = [], timeout
    for wait in RETRIES:
        if left <= 0:
            break
        schedule.append(min(wait, left))
        left -= wait
    return tuple(schedule)


@dataclass
class _Lookup:
    """A name's query in flight and who waits for it."""

    waiting: list[tuple[IResolutionReceiver, int]] = field(default_factory=list)


@implementer(IHostResolution)
class _Resolution:
    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:  # a connection attempt given up: its answer still gets cached
        pass


@implementer(IHostnameResolver)
class CachingResolver:
    """reactor.nameResolver for the crawl (see the module's docstring)."""

    def __init__(self, reactor: Any, config: ResolverConfig, clock: Any = time.monotonic):
        self.reactor, self.config, self.clock = reactor, config, clock
        # name -> (monotonic time it expires, addresses; () for a name that did not resolve)
        self.cache: OrderedDict[str, tuple[float, tuple[str, ...]]] = OrderedDict()
        self.lookups: dict[str, _Lookup] = {}
        self.hosts = HostsFile(config.hosts_file)
        servers = list(config.servers) or None
        self.client = _Client(resolv=None if servers else RESOLV_CONF, servers=servers,
                              timeout=retries(config.timeout), reactor=reactor)
        self.queries = 0  # names asked of the name servers (a test and the stats read it)

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> CachingResolver:
        # Scrapy builds the resolver from its crawler process (settings, no stats).
        return cls(reactor, ResolverConfig.from_settings(crawler.settings))

    def install_on_reactor(self) -> None:
        self.reactor.installNameResolver(self)
        # resolv.conf is checked for changes every minute: not once the reactor stops.
        self.reactor.addSystemEventTrigger("before", "shutdown", self.stop)

    def stop(self) -> None:
        call = getattr(self.client, "_parseCall", None)
        if call is not None and call.active():
            call.cancel()

    def resolveHostName(
        self,
        resolutionReceiver: IResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[Any]] | None = None,
        transportSemantics: str = "TCP",
    ) -> IHostResolution:
        name = hostName.lower().rstrip(".")
        resolution = _Resolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        literal = _literal(name)
        if literal is not None:
            _deliver(resolutionReceiver, (literal,), portNumber)
            return resolution
        entry = self.cache.get(name)
        if entry is not None and entry[0] > self.clock():
            self.cache.move_to_end(name)
            _deliver(resolutionReceiver, entry[1], portNumber)
            return resolution
        lookup = self.lookups.get(name)
        if lookup is not None:
            lookup.waiting.append((resolutionReceiver, portNumber))
            return resolution
        self.lookups[name] = _Lookup([(resolutionReceiver, portNumber)])
        self._start(name)  # may answer at once (the hosts file)
        return resolution

    def _start(self, name: str) -> None:
        listed = self.hosts.addresses(name)
        if listed:
            self._done(name, listed, self.config.min_ttl)
            return
        self.queries += 1
        try:
            found: Deferred[tuple[tuple[str, ...], float]] = self._addresses(name)
        except Exception:  # a name DNS cannot carry (a label over 63 bytes, not ASCII)
            self._failed(name, Failure())
            return
        found.addCallbacks(lambda result: self._done(name, *result),
                           lambda failure: self._failed(name, failure))

    def _addresses(self, name: str) -> Deferred[tuple[tuple[str, ...], float]]:
        """The name's IPv4 addresses (IPv6 if it has none) and the least TTL on the way."""
        done: Deferred[tuple[tuple[str, ...], float]] = Deferred()

        def got_v4(result: Any) -> None:
            addresses, ttl = _follow(name, result[0], dns.A)
            if addresses:
                done.callback((addresses, ttl))
                return
            six = self.client.lookupIPV6Address(name)
            six.addCallbacks(lambda found: done.callback(_follow(name, found[0], dns.AAAA)),
                             done.errback)

        self.client.lookupAddress(name).addCallbacks(got_v4, done.errback)
        return done

    def _done(self, name: str, addresses: tuple[str, ...], ttl: float) -> None:
        if addresses:
            keep = max(ttl, self.config.min_ttl)
        else:
            keep = self.config.failure_ttl
        self._keep(name, addresses, keep)
        for receiver, port in self.lookups.pop(name).waiting:
            _deliver(receiver, addresses, port)

    def _failed(self, name: str, failure: Failure) -> None:
        if not failure.check(DNSNameError):
            logger.debug("DNS lookup of %s failed: %s", name, failure.getErrorMessage())
        self._done(name, (), 0)

    def _keep(self, name: str, addresses: tuple[str, ...], seconds: float) -> None:
        if not self.config.cache_size or seconds <= 0:
            return
        self.cache[name] = (self.clock() + seconds, addresses)
        self.cache.move_to_end(name)
        while len(self.cache) > self.config.cache_size:
            self.cache.popitem(last=False)


class _Client(client.Resolver):
    """Twisted's DNS client, each query from a port the kernel picks (bind to port 0; Linux
    picks UDP ports at random, against spoofed answers): Twisted draws one itself and binds
    again when it is taken, leaking the socket of each failed try."""

    def _connectedProtocol(self, interface: str = "") -> dns.DNSDatagramProtocol:
        protocol = dns.DNSDatagramProtocol(self, reactor=self._reactor)
        self._reactor.listenUDP(0, protocol, interface=interface)
        return protocol


def _follow(name: str, answers: list[Any], kind: int) -> tuple[tuple[str, ...], float]:
    """The addresses of type `kind` the answers give `name`, following its CNAMEs, and the
    least TTL of the records used; () when they hold none."""
    by_name: dict[str, list[Any]] = {}
    for record in answers:
        by_name.setdefault(record.name.name.decode("ascii", "replace").lower(), []).append(
            record)
    ttls, current = [], name
    for _ in range(CNAME_HOPS):
        records = by_name.get(current, [])
        addresses = [r for r in records if r.type == kind]
        if addresses:
            ttls += [r.ttl for r in addresses]
            return tuple(r.payload.dottedQuad() if kind == dns.A else
                         _ipv6(r.payload.address) for r in addresses), float(min(ttls))
        aliases = [r for r in records if r.type == dns.CNAME]
        if not aliases:
            break
        ttls.append(aliases[0].ttl)
        current = aliases[0].payload.name.name.decode("ascii", "replace").lower()
    return (), 0.0


def _ipv6(packed: bytes) -> str:
    return str(ip_address(packed))


def _literal(name: str) -> str | None:
    """The name itself if it is an IP address (brackets of an IPv6 one removed)."""
    try:
        return str(ip_address(name.strip("[]")))
    except ValueError:
        return None


def _deliver(receiver: IResolutionReceiver, addresses: Sequence[str], port: int) -> None:
    for address in addresses:
        kind = IPv6Address if ":" in address else IPv4Address
        receiver.addressResolved(kind("TCP", address, port))
    receiver.resolutionComplete()


class HostsFile:
    """A hosts(5) file's names and addresses, read again when the file changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.stamp: tuple[float, int] | None = None
        self.names: dict[str, tuple[str, ...]] = {}

    def addresses(self, name: str) -> tuple[str, ...]:
        if not self.path:
            return ()
        try:
            status = os.stat(self.path)
        except OSError:
            return ()
        stamp = (status.st_mtime, status.st_size)
        if stamp != self.stamp:
            self.stamp, self.names = stamp, self._read()
        return self.names.get(name, ())

    def _read(self) -> dict[str, tuple[str, ...]]:
        names: dict[str, list[str]] = {}
        try:
            with open(self.path, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    fields = line.split("#", 1)[0].split()
                    if len(fields) < 2 or _literal(fields[0]) is None:
                        continue
                    for host in fields[1:]:
                        names.setdefault(host.lower().rstrip("."), []).append(fields[0])
        except OSError:
            return {}
        # IPv4 first, as the resolver answers.
        return {name: tuple(sorted(found, key=lambda a: ":" in a)) for name, found in
                names.items()}
