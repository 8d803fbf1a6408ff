"""Certificates of the https test web: a test CA made at start, one leaf per host.

One EC key pair serves every leaf (making a key per host would cost more than the whole
handshake); leaves are made on first use and cached. A host's certificate case (https.py):
valid (signed by the CA, for its name), expired, self_signed, or wrong_name (for another
name). A crawl trusts the CA by reading the file `serve --ca-file` writes.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from OpenSSL import crypto
from twisted.internet import ssl

WRONG_NAME = "wrong-name.invalid"  # the name a wrong_name certificate is for
DAY = datetime.timedelta(days=1)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


class TestCA:
    """The CA, the shared leaf key, and one CertificateOptions per (host, case)."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.leaf_key = ec.generate_private_key(ec.SECP256R1())
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name("tianwang test CA")).issuer_name(_name("tianwang test CA"))
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - DAY).not_valid_after(now + 3650 * DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self._options: dict[tuple[str, str], ssl.CertificateOptions] = {}
        self._leaf_key = crypto.PKey.from_cryptography_key(self.leaf_key)
        self._ca = crypto.X509.from_cryptography(self.cert)

    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def write(self, path: str | Path) -> None:
        """The CA certificate as PEM, written whole (a temporary file, then renamed)."""
        path = Path(path)
        part = path.with_name(path.name + ".part")
        part.write_bytes(self.pem())
        part.replace(path)

    def options(self, host: str, case: str) -> ssl.CertificateOptions:
        """The server side TLS options for `host` with certificate case `case`."""
        key = (host, case)
        options = self._options.get(key)
        if options is None:
            leaf = crypto.X509.from_cryptography(self.leaf(host, case))
            chain = [] if case == "self_signed" else [self._ca]
            options = ssl.CertificateOptions(privateKey=self._leaf_key, certificate=leaf,
                                             extraCertChain=chain)
            self._options[key] = options
        return options

    def leaf(self, host: str, case: str) -> x509.Certificate:
        now = datetime.datetime.now(datetime.UTC)
        name = WRONG_NAME if case == "wrong_name" else host
        start, end = (now - 60 * DAY, now - 30 * DAY) if case == "expired" else (
            now - DAY, now + 365 * DAY)
        issuer, signer = (_name(name), self.leaf_key) if case == "self_signed" else (
            self.cert.subject, self.key)
        return (
            x509.CertificateBuilder()
            .subject_name(_name(name)).issuer_name(issuer)
            .public_key(self.leaf_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(signer, hashes.SHA256())
        )
