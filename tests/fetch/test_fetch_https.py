"""The fetcher connects to the address the guard vetted, not to a fresh resolution of the name;
over https the name still goes in SNI and the certificate is checked against it. A loopback
https server with certificates made here, for a name the test's resolver answers and the
operator's allow-list names: the page is fetched under the CA the operator trusts; a certificate
for another name, or from an authority nobody trusts, is refused with a typed error."""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from citewell.errors import CertificateRefused, InvalidInput, UrlRefused
from citewell.fetch.client import Fetcher
from citewell.fetch.guard import Guard
from citewell.settings import Settings

NAME = "docs.northpier.test"
PAGE = b"<html><head><title>Quay rules</title></head><body><p>Reefer plugs are checked hourly.</p></body></html>"


class Authority:
    """A certificate authority of the test's own, and leaf certificates it signs."""

    def __init__(self, common_name: str = "Northpier test CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        self.certificate = (self._builder(subject, subject, self.key.public_key())
                            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                         content_commitment=False, key_encipherment=False,
                                                         data_encipherment=False, key_agreement=False,
                                                         encipher_only=False, decipher_only=False), critical=True)
                            .sign(self.key, hashes.SHA256()))

    @staticmethod
    def _builder(subject: x509.Name, issuer: x509.Name, public_key) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=1)))

    def pem(self, folder: Path) -> Path:
        path = folder / "ca.pem"
        path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        return path

    def leaf(self, folder: Path, name: str) -> tuple[Path, Path]:
        """A server certificate for ``name`` and its key, as files ``ssl`` loads."""
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = (self._builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]), self.certificate.subject,
                                     key.public_key())
                       .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
                       .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                       .sign(self.key, hashes.SHA256()))
        cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
        cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        return cert_path, key_path


@contextmanager
def https_site(certificate: tuple[Path, Path], keep_alive: bool = False) -> Iterator[tuple[int, list[dict]]]:
    """An https server on 127.0.0.1 serving one page; yields its port and, per request, the SNI
    name the client sent and its Host header. ``keep_alive``: HTTP/1.1, one connection serving
    several requests (http.server's default, HTTP/1.0, closes each after its reply)."""
    seen: list[dict] = []
    sni: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            seen.append({"sni": sni[-1] if sni else None, "host": self.headers.get("Host"), "path": self.path})
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: object) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    context.sni_callback = lambda connection, name, _: sni.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


def resolver(host: str, port: int) -> list[str]:
    """The test's DNS: the intranet name is on this machine."""
    return ["127.0.0.1"] if host == NAME else []


def fetcher(ca: Path | None) -> Fetcher:
    """As the operator configures it: the name on the allow-list, their CA file in CITEWELL_FETCH_CA."""
    config = Settings(fetch_allow=NAME, fetch_ca=ca)
    configured = Fetcher.configured(config, max_bytes=1_000_000)
    configured.guard = Guard.of(config.fetch_allow, resolver)
    return configured


def test_a_page_is_fetched_over_https_with_the_name_in_sni_and_its_certificate_checked(tmp_path):
    authority = Authority()
    with https_site(authority.leaf(tmp_path, NAME)) as (port, seen), fetcher(authority.pem(tmp_path)) as client:
        page = client.fetch(f"https://{NAME}:{port}/rules")
    assert page.status == "fetched" and page.data == PAGE and page.url == f"https://{NAME}:{port}/rules"
    assert seen == [{"sni": NAME, "host": f"{NAME}:{port}", "path": "/rules"}]  # the name, though 127.0.0.1 was dialled


def test_a_certificate_for_another_name_is_refused_with_a_typed_error_and_no_request_sent(tmp_path):
    authority = Authority()
    with https_site(authority.leaf(tmp_path, "payroll.northpier.test")) as (port, seen), fetcher(authority.pem(tmp_path)) as client:
        with pytest.raises(CertificateRefused, match=f"not valid for {NAME}") as refused:
            client.fetch(f"https://{NAME}:{port}/rules")
    assert refused.value.code == "certificate_refused" and seen == []


def test_a_connection_verified_for_one_name_never_carries_a_request_for_another(tmp_path):
    """Two names on one address: a kept-alive connection whose certificate was checked for the
    first must not carry the second's request (its own certificate never checked)."""
    authority, other = Authority(), "payroll.northpier.test"
    with https_site(authority.leaf(tmp_path, NAME), keep_alive=True) as (port, seen):
        client = Fetcher(Guard.of([NAME, other], lambda host, port: ["127.0.0.1"]), ca_file=authority.pem(tmp_path))
        with client:
            assert client.fetch(f"https://{NAME}:{port}/rules").status == "fetched"
            with pytest.raises(CertificateRefused, match=f"not valid for {other}"):
                client.fetch(f"https://{other}:{port}/salaries")
            assert client.fetch(f"https://{NAME}:{port}/again").status == "fetched"  # its own connection still serves it
    assert [(s["host"], s["path"]) for s in seen] == [(f"{NAME}:{port}", "/rules"), (f"{NAME}:{port}", "/again")]


def test_a_certificate_from_an_authority_not_trusted_is_refused(tmp_path):
    authority = Authority()
    with https_site(authority.leaf(tmp_path, NAME)) as (port, seen):
        with fetcher(None) as client, pytest.raises(CertificateRefused, match="certificate"):
            client.fetch(f"https://{NAME}:{port}/rules")
        stranger = tmp_path / "other"
        stranger.mkdir()
        with fetcher(Authority("Someone else's CA").pem(stranger)) as client, pytest.raises(CertificateRefused):
            client.fetch(f"https://{NAME}:{port}/rules")
    assert seen == []


def test_the_address_must_still_pass_the_guard_and_a_bad_ca_file_is_a_typed_error(tmp_path):
    authority = Authority()
    with https_site(authority.leaf(tmp_path, NAME)) as (port, seen):
        guarded = Fetcher(Guard.of([], resolver), ca_file=authority.pem(tmp_path))  # the name is not on the allow-list
        with guarded, pytest.raises(UrlRefused, match="loopback"):
            guarded.fetch(f"https://{NAME}:{port}/rules")
    assert seen == []
    broken = tmp_path / "broken.pem"
    broken.write_text("not a certificate")
    with pytest.raises(InvalidInput, match="CITEWELL_FETCH_CA"):
        Fetcher(Guard.of([]), ca_file=broken)
