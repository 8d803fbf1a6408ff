"""The crawl's DNS resolver (tianwang/resolver.py) against a real DNS server on loopback
(tests/dns_server.py), in the test process's reactor; its clock is the test's where the
test is about time to live."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_twisted
from scrapy.settings import Settings
from twisted.internet.defer import Deferred, gatherResults

from tests.dns_server import DNSServerProcess
from tianwang import default_settings
from tianwang.config import SettingError
from tianwang.resolver import CachingResolver, HostsFile, ResolverConfig, retries


def config(server: str = "127.0.0.1:9", **overrides: object) -> ResolverConfig:
    settings = Settings({name: getattr(default_settings, name)
                         for name in dir(default_settings) if name.startswith("TIANWANG_DNS")})
    settings.setdict({"DNSCACHE_SIZE": 1000, "DNS_TIMEOUT": 10, "TIANWANG_DNS_SERVERS": server,
                      "TIANWANG_DNS_HOSTS_FILE": "", **overrides})
    return ResolverConfig.from_settings(settings)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def resolver(cfg: ResolverConfig, clock: Clock | None = None) -> CachingResolver:
    from twisted.internet import reactor

    return CachingResolver(reactor, cfg, clock or Clock())


def lookup(made: CachingResolver, name: str) -> Deferred[list[str]]:
    """The addresses a connection to `name` would try (the host filter's way of asking)."""
    from tianwang.middlewares.hostfilter import _Receiver

    done: Deferred[list[str]] = Deferred()
    made.resolveHostName(_Receiver(done), name, 80)
    return done


@pytest_twisted.ensureDeferred
async def test_a_hundred_names_are_asked_of_a_slow_server_at_once(tmp_path: Path) -> None:
    """Scrapy's default resolver asks getaddrinfo in 10 threads: 10 names at a time. The
    server holds every answer until 100 queries wait together (or 30 s went by)."""
    names = [f"host{n}.test" for n in range(100)]
    with DNSServerProcess(tmp_path / "dns.jsonl", "--hold", "100", "--delay", "30") as server:
        made = resolver(config(server.address))
        found = await gatherResults([lookup(made, name) for name in names])
        made.stop()
    assert found == [["127.0.0.1"]] * 100
    assert set(server.queries()) == set(names)
    assert server.most_waiting() == 100


@pytest_twisted.ensureDeferred
async def test_a_name_is_asked_once_while_its_answer_lives(tmp_path: Path) -> None:
    clock = Clock()
    with DNSServerProcess(tmp_path / "dns.jsonl", "--delay", "0.2", "--ttl", "300") as server:
        made = resolver(config(server.address, TIANWANG_DNS_MIN_TTL=0), clock)
        # Twenty connections to a new host at once: one query.
        assert await gatherResults([lookup(made, "www.a.test") for _ in range(20)]) == [
            ["127.0.0.1"]] * 20
        clock.now += 299
        assert await lookup(made, "WWW.A.test.") == ["127.0.0.1"]  # the same name
        assert set(server.queries()) == {"www.a.test"} and server.asked_again() == []
        clock.now += 2  # the answer's 300 s are over
        assert await lookup(made, "www.a.test") == ["127.0.0.1"]
        assert set(server.asked_again()) == {"www.a.test"}
        # At least TIANWANG_DNS_MIN_TTL, whatever the answer's TTL.
        made = resolver(config(server.address, TIANWANG_DNS_MIN_TTL=3600), clock)
        await lookup(made, "www.b.test")
        clock.now += 3599
        await lookup(made, "www.b.test")
        assert "www.b.test" not in server.asked_again()
        clock.now += 2
        await lookup(made, "www.b.test")
        assert "www.b.test" in server.asked_again()
        made.stop()


@pytest_twisted.ensureDeferred
async def test_a_name_that_does_not_resolve_is_kept_as_such_for_the_failure_ttl(
        tmp_path: Path) -> None:
    """The other requests of a dead host fail at once, not each after a lookup."""
    clock = Clock()
    with DNSServerProcess(tmp_path / "dns.jsonl", "--delay", "0.1") as server:
        made = resolver(config(server.address, TIANWANG_DNS_FAILURE_TTL=60), clock)
        assert await lookup(made, "nx-gone.test") == []
        assert await lookup(made, "nx-gone.test") == []
        assert await lookup(made, "other.invalid") == []  # refused by the server
        assert set(server.queries()) == {"nx-gone.test", "other.invalid"}
        assert server.asked_again() == []
        clock.now += 61
        assert await lookup(made, "nx-gone.test") == []
        assert set(server.asked_again()) == {"nx-gone.test"}
        made.stop()


@pytest_twisted.ensureDeferred
async def test_aliases_are_followed_and_a_name_without_ipv4_gets_its_ipv6(
        tmp_path: Path) -> None:
    with DNSServerProcess(tmp_path / "dns.jsonl", "--delay", "0.05") as server:
        made = resolver(config(server.address))
        assert await lookup(made, "alias-www.c.test") == ["127.0.0.1"]
        assert await lookup(made, "v6-only.test") == ["::1"]
        made.stop()
    assert {(q["name"], q["type"]) for q in server.lines()} == {
        ("alias-www.c.test", "A"), ("v6-only.test", "A"), ("v6-only.test", "AAAA")}


@pytest_twisted.ensureDeferred
async def test_the_hosts_file_and_ip_literals_need_no_query(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# comment\n127.0.0.1 localhost\n127.0.0.7 Files.Test alias.test # x\n"
                     "::1 files.test\nnot-an-address some.test\n", encoding="utf-8")
    with DNSServerProcess(tmp_path / "dns.jsonl", "--delay", "0.05") as server:
        made = resolver(config(server.address, TIANWANG_DNS_HOSTS_FILE=str(hosts)))
        assert await lookup(made, "files.test") == ["127.0.0.7", "::1"]
        assert await lookup(made, "alias.test") == ["127.0.0.7"]
        assert await lookup(made, "192.0.2.1") == ["192.0.2.1"]
        assert await lookup(made, "[::1]") == ["::1"]
        assert await lookup(made, "some.test") == ["127.0.0.1"]  # not in the file: asked
        made.stop()
    assert set(server.queries()) == {"some.test"}


@pytest_twisted.ensureDeferred
async def test_the_cache_keeps_the_names_used_last(tmp_path: Path) -> None:
    with DNSServerProcess(tmp_path / "dns.jsonl", "--delay", "0.01") as server:
        made = resolver(config(server.address, DNSCACHE_SIZE=3))
        for name in ("a.test", "b.test", "c.test", "a.test", "d.test", "a.test", "b.test"):
            await lookup(made, name)
        made.stop()
    # b was the least recently used when d came: asked again; a stayed.
    assert set(server.queries()) == {"a.test", "b.test", "c.test", "d.test"}
    assert set(server.asked_again()) == {"b.test"}


def test_a_hosts_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("127.0.0.2 one.test\n", encoding="utf-8")
    hosts = HostsFile(str(path))
    assert hosts.addresses("one.test") == ("127.0.0.2",)
    path.write_text("127.0.0.3 one.test two.test\n", encoding="utf-8")
    assert hosts.addresses("two.test") == ("127.0.0.3",)
    assert HostsFile("").addresses("one.test") == ()
    assert HostsFile(str(tmp_path / "missing")).addresses("one.test") == ()


def test_retries_end_within_dns_timeout() -> None:
    assert retries(60) == (1, 3, 11, 45)
    assert retries(20) == (1, 3, 11, 5)
    assert retries(2.5) == (1, 1.5)


@pytest.mark.parametrize("servers, expected", [
    ("", ()), ([], ()), ("10.0.0.2", (("10.0.0.2", 53),)),
    ("10.0.0.2:5353,[::1]:54", (("10.0.0.2", 5353), ("::1", 54))), (["::1"], (("::1", 53),)),
])
def test_name_servers_are_addresses_with_an_optional_port(servers: object,
                                                          expected: tuple) -> None:
    assert config(servers).servers == expected


@pytest.mark.parametrize("setting, value", [
    ("TIANWANG_DNS_SERVERS", "dns.example.com"), ("TIANWANG_DNS_SERVERS", "10.0.0.2:0"),
    ("TIANWANG_DNS_SERVERS", "10.0.0.2:x"), ("TIANWANG_DNS_MIN_TTL", -1),
    ("TIANWANG_DNS_FAILURE_TTL", "soon"), ("DNS_TIMEOUT", 0), ("TIANWANG_DNS_HOSTS_FILE", 3),
])
def test_a_setting_that_makes_no_sense_is_refused_naming_it(setting: str, value: object) -> None:
    with pytest.raises(SettingError, match=setting):
        config(**{setting: value}) if setting != "TIANWANG_DNS_SERVERS" else config(value)


def test_the_add_on_installs_it_before_the_crawler_exists() -> None:
    """Scrapy installs TWISTED_DNS_RESOLVER from the crawler process's settings, which only
    the add-on's update_pre_crawler_settings reaches."""
    from scrapy.addons import AddonManager

    settings = Settings({"ADDONS": {"tianwang.addon.Tianwang": 0}})
    AddonManager.load_pre_crawler_settings(settings)
    assert settings["TWISTED_DNS_RESOLVER"] == "tianwang.resolver.CachingResolver"
    assert settings.getint("DNSCACHE_SIZE") == default_settings.DNSCACHE_SIZE


# --- in a crawl: `scrapy crawl site` fetching hosts only the loopback DNS server knows ---

# Two whole batches of the DNS server's --hold 20: with 30, the last 10 waited out its
# --delay of 20 s.
HOSTS = [f"site{n}.dns.example" for n in range(40)]


def crawl_named_hosts(tmp_path: Path, block_private: bool) -> tuple[dict, list[dict], dict]:
    """A crawl of 40 hosts (nginx, one port) whose names only the DNS server resolves (to
    127.0.0.1); each host's index links to two pages of its own. The crawl's stats,
    nginx's access log, and what the DNS server was asked."""
    import json
    import subprocess

    from tests.conftest import crawl_command
    from tests.docs_web import DocsWeb

    roots = {}
    for host in HOSTS:  # pages of their own: the MD5 dedup would keep one of each
        root = roots[host] = tmp_path / "sites" / host
        root.mkdir(parents=True)
        (root / "index.html").write_text(f'{host}<a href="p1.html">1</a><a href="p2.html">2</a>',
                                         encoding="utf-8")
        for page in ("p1", "p2"):
            (root / f"{page}.html").write_text(f"<p>{host} {page}</p>", encoding="utf-8")
    with DNSServerProcess(tmp_path / "dns.jsonl", "--zone", "example", "--hold", "20",
                          "--delay", "20") as dns_server, \
            DocsWeb(roots, tmp_path / "web") as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"http://{host}:{web.port}/index.html\n" for host in HOSTS),
                         encoding="utf-8")
        settings = {
            # Named, not left to the add-on: a crawl that fell back to the system's resolver
            # would send these names to a DNS server off this machine.
            "TWISTED_DNS_RESOLVER": "tianwang.resolver.CachingResolver",
            "TIANWANG_DNS_SERVERS": dns_server.address, "TIANWANG_DNS_HOSTS_FILE": "",
            "TIANWANG_BLOCK_PRIVATE": str(block_private), "TIANWANG_DROP_OTHER_PORTS": "False",
            "DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": "64",
            "TIANWANG_DATA_DIR": str(tmp_path / "data"),
        }
        command, env = crawl_command("site", {"seeds": str(seeds)}, settings)
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode in (0, 1), done.stderr[-3000:]
        stats = json.loads(next((tmp_path / "data").rglob("stats/*.json")).read_text())
        return stats, web.requests(), {"asked": set(dns_server.queries()),
                                       "asked_again": dns_server.asked_again(),
                                       "most_waiting": dns_server.most_waiting()}


def test_a_crawl_resolves_its_hosts_at_once_each_name_once(tmp_path: Path) -> None:
    """Forty hosts: every page stored; the DNS server was asked each name and never again
    once it answered (the host filter's check, robots.txt and three pages a host share one
    answer), and held 20 names at once before it answered any (Scrapy's 10 getaddrinfo
    threads never get there)."""
    stats, log, dns = crawl_named_hosts(tmp_path, block_private=False)
    assert stats.get("tianwang/storage/records") == 3 * len(HOSTS)
    served = sorted((line["host"], line["path"]) for line in log if line["status"] == 200)
    assert served == sorted((host, f"/{page}.html") for host in HOSTS
                            for page in ("index", "p1", "p2"))
    assert dns["asked"] == set(HOSTS) and dns["asked_again"] == []
    assert dns["most_waiting"] >= 20


def test_the_private_address_check_uses_the_crawls_resolver(tmp_path: Path) -> None:
    """The same hosts with TIANWANG_BLOCK_PRIVATE: each resolves to 127.0.0.1 through the
    crawl's resolver, so each is refused before any request reaches the server."""
    stats, log, dns = crawl_named_hosts(tmp_path, block_private=True)
    assert log == []
    assert stats.get("tianwang/filter/private") == len(HOSTS)  # the seeds; nothing further
    assert dns["asked"] == set(HOSTS) and dns["asked_again"] == []
