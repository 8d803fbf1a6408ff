"""The https download handler: it checks each server's certificate and fetches anyway.

A search-engine crawler fetches a page whatever its certificate (Scrapy's default does not
verify at all), but a user should learn which hosts had an expired, self-signed, wrong-name
or unknown-CA certificate. This handler is Scrapy's HTTP/1.1 handler with its TLS policy
replaced by CheckingPolicy: OpenSSL verifies the chain against the system's CAs and
TIANWANG_CA_FILE, and the hostname; every failure is noted for the host and never stops the
handshake. Each https response then carries a flag `tls:<reason>` per problem of its host,
which TLSCheckMiddleware (middlewares/tlscheck.py) counts and logs. It is the http handler
(httphandler.py, whose downloads a close can end) with that policy.

Scrapy 2.19 deprecates DOWNLOADER_CLIENTCONTEXTFACTORY, the public way to give a policy, and
offers no verifying-but-lenient one (DOWNLOAD_VERIFY_CERTIFICATES fails the download), so the
handler sets its base class's `_contextFactory` once, at init, through
tianwang.scrapy_internals (the one module of private Scrapy attributes, checked).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from OpenSSL import SSL
from service_identity import VerificationError
from service_identity.exceptions import CertificateError
from service_identity.hazmat import DNS_ID, IPAddress_ID, verify_service_identity
from service_identity.pyopenssl import extract_patterns
from twisted.internet import ssl
from twisted.internet.abstract import isIPAddress, isIPv6Address
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.web.iweb import IPolicyForHTTPS
from zope.interface import implementer

from tianwang.config import SettingError, get_bool
from tianwang.httphandler import HTTPDownloadHandler
from tianwang.scrapy_internals import set_tls_policy

logger = logging.getLogger(__name__)

# OpenSSL's X509_V_ERR_* codes, by what they mean to a user.
REASONS = {
    9: "not_yet_valid",  # CERT_NOT_YET_VALID
    10: "expired",  # CERT_HAS_EXPIRED
    18: "self_signed",  # DEPTH_ZERO_SELF_SIGNED_CERT: the server's own, unsigned
    2: "unknown_ca",  # UNABLE_TO_GET_ISSUER_CERT
    19: "unknown_ca",  # SELF_SIGNED_CERT_IN_CHAIN: a root nobody trusts
    20: "unknown_ca",  # UNABLE_TO_GET_ISSUER_CERT_LOCALLY
    21: "unknown_ca",  # UNABLE_TO_VERIFY_LEAF_SIGNATURE
}
FLAG = "tls:"  # response flag prefix: tls:expired, tls:wrong_name, ...
MAX_HOSTS = 100_000  # hosts whose certificate problems are remembered (oldest forgotten)


def reason_of(error: int) -> str:
    """What an OpenSSL verify error means for the crawl's counters."""
    return REASONS.get(error, "invalid")


@dataclass(frozen=True)
class TLSCheckConfig:
    check: bool  # TIANWANG_TLS_CHECK
    ca_file: str  # TIANWANG_CA_FILE, "" for the system's CAs alone

    @classmethod
    def from_settings(cls, settings: Any) -> TLSCheckConfig:
        ca_file = settings.get("TIANWANG_CA_FILE") or ""
        if not isinstance(ca_file, str):
            raise SettingError("TIANWANG_CA_FILE", ca_file, "a PEM file of CA certificates")
        if ca_file:
            try:
                SSL.Context(SSL.TLS_CLIENT_METHOD).load_verify_locations(ca_file)
            except (SSL.Error, OSError) as exc:
                raise SettingError("TIANWANG_CA_FILE", ca_file,
                                   f"a readable PEM file of CA certificates ({exc})") from None
        return cls(get_bool(settings, "TIANWANG_TLS_CHECK"), ca_file)


@implementer(IPolicyForHTTPS)
class CheckingPolicy:
    """Verifies every server's certificate; notes failures per host; never refuses one."""

    def __init__(self, ca_file: str = "") -> None:
        options = ssl.CertificateOptions(fixBrokenPeers=True)
        self.context = options.getContext()
        self.context.set_options(0x4)  # OP_LEGACY_SERVER_CONNECT, as Scrapy: old servers
        self.context.set_default_verify_paths()
        if ca_file:
            self.context.load_verify_locations(str(Path(ca_file)))
        self.problems: dict[str, set[str]] = {}  # host -> reasons, insertion ordered

    def creatorForNetloc(self, hostname: bytes, port: int) -> CheckingConnector:
        return CheckingConnector(self, hostname.decode("ascii").lower())

    def note(self, host: str, reason: str) -> None:
        reasons = self.problems.get(host)
        if reasons is None:
            if len(self.problems) >= MAX_HOSTS:
                del self.problems[next(iter(self.problems))]
            reasons = self.problems[host] = set()
        reasons.add(reason)

    def flags(self, host: str) -> list[str]:
        return [FLAG + reason for reason in sorted(self.problems.get(host, ()))]


@implementer(IOpenSSLClientConnectionCreator)
class CheckingConnector:
    """One connection's TLS client side (Twisted's IOpenSSLClientConnectionCreator)."""

    def __init__(self, policy: CheckingPolicy, host: str) -> None:
        self.policy, self.host = policy, host
        is_ip = isIPAddress(host) or isIPv6Address(host)
        self.service = IPAddress_ID(host) if is_ip else DNS_ID(host)
        self.sni = None if is_ip else host.encode("idna")

    def clientConnectionForTLS(self, tls_protocol: Any) -> SSL.Connection:
        connection = SSL.Connection(self.policy.context, None)
        connection.set_app_data(tls_protocol)
        if self.sni:
            connection.set_tlsext_host_name(self.sni)
        connection.set_connect_state()
        connection.set_verify(SSL.VERIFY_PEER, self._verify)
        return connection

    def _verify(self, connection: SSL.Connection, cert: Any, error: int, depth: int,
                ok: int) -> bool:
        if not ok:
            self.policy.note(self.host, reason_of(error))
        if depth == 0:
            try:
                verify_service_identity(extract_patterns(cert), [self.service], [])
            except (CertificateError, VerificationError):
                self.policy.note(self.host, "wrong_name")
        return True  # fetch anyway: the problem is noted, the page is still wanted


class TLSCheckDownloadHandler(HTTPDownloadHandler):
    """Scrapy's HTTP/1.1 handler for https, with CheckingPolicy unless TIANWANG_TLS_CHECK
    is off; flags each response with its host's certificate problems."""

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        config = TLSCheckConfig.from_settings(crawler.settings)
        self.policy: CheckingPolicy | None = None
        # DOWNLOAD_VERIFY_CERTIFICATES: the user wants bad certificates refused; Scrapy's
        # verifying policy stays.
        if config.check and not crawler.settings.getbool("DOWNLOAD_VERIFY_CERTIFICATES"):
            self.policy = CheckingPolicy(config.ca_file)
            set_tls_policy(self, self.policy)

    @classmethod
    def check_settings(cls, settings: Any) -> None:
        super().check_settings(settings)
        TLSCheckConfig.from_settings(settings)

    async def download_request(self, request: Any) -> Any:
        response = await super().download_request(request)
        if self.policy is not None and request.url.startswith("https:"):
            flags = self.policy.flags(urlsplit(request.url).hostname or "")
            if flags:
                response.flags.extend(flags)
        return response
