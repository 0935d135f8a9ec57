"""Fetching one URL's bytes over httpx, through the guard, within limits.

Each hop (the URL, then every redirect's target) is parsed, its host vetted by the
:class:`~citewell.fetch.guard.Guard`, and the request sent to the vetted address itself with the
name in the Host header and in TLS's SNI, whose certificate is checked against the name: there
is no second resolution a rebinding resolver could answer differently. Nothing but what a fetch
needs is sent: no cookies (none are kept), no credentials, no proxy or netrc from the
environment. The body is streamed, decoded a piece at a time (:mod:`citewell.fetch.encodings`:
a stack of encodings cannot decode past the limit inside one read) and cut off past
``max_bytes``; a fetch has a time limit as a whole (on every socket operation,
:mod:`citewell.fetch.deadline`) as well as per read. A certificate not valid for the name (or
from an authority neither the system nor the operator's ``CITEWELL_FETCH_CA`` trusts) is
``certificate_refused``.

Connections are pooled by the address dialled, and a kept-alive TLS connection was checked for
the name it was opened for only. So https goes through one pool per name: a request for
``b.example`` never rides a connection whose certificate proved ``a.example`` at the same address.
"""

from __future__ import annotations

import hashlib
import http.cookiejar
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeGuard

import httpx

from citewell import __version__
from citewell.errors import (
    CertificateRefused,
    CitewellError,
    FetchFailed,
    HttpStatus,
    InvalidInput,
    OutOfScope,
    TooLarge,
    UrlRefused,
)
from citewell.fetch.deadline import Transport, until
from citewell.fetch.encodings import ACCEPTED, codings, decoded
from citewell.fetch.guard import Guard
from citewell.fetch.urls import Scope, normalise, parse_url
from citewell.models.documents import Fetched
from citewell.settings import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from citewell.settings import Settings

USER_AGENT = f"citewell/{__version__} (+https://github.com/citewell)"
MAX_REDIRECTS = 5
_REDIRECTS = {301, 302, 303, 307, 308}
TLS_NAMES_KEPT = 32  # https pools kept, one per name, least recently used dropped first
GONE = {404, 410}  # the page is no longer there: its document is listed gone, as a file no longer in its folder


def said_gone(error: CitewellError | None) -> TypeGuard[HttpStatus]:
    """Whether a fetch's failure is the site's own word that the page is gone (404, 410); any other
    failure leaves the page, and its links, unknown."""
    return isinstance(error, HttpStatus) and error.status in GONE


@dataclass(frozen=True)
class Page:
    """One fetch's answer. ``modified`` False: a 304, ``data`` empty, the stored bytes still hold."""

    url: str  # the normalised URL asked for: the document's id
    final_url: str  # where the last redirect led: the base of the page's relative links
    status: Literal["fetched", "not_modified"]
    data: bytes = b""
    fetched: Fetched | None = None


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    def set_ok(self, cookie: http.cookiejar.Cookie, request: object) -> bool:
        return False


class Fetcher:
    """One client for many fetches (its connections are reused), safe to share between threads."""

    def __init__(self, guard: Guard, *, max_bytes: int = DEFAULT_MAX_BYTES, seconds: float = 30.0,
                 max_redirects: int = MAX_REDIRECTS, ca_file: Path | None = None) -> None:
        """``ca_file``: certificate authorities (PEM) trusted beside the system's."""
        self.guard, self.max_bytes, self.seconds, self.max_redirects = guard, max_bytes, seconds, max_redirects
        trusted = ssl.create_default_context()
        if ca_file is not None:
            try:
                trusted.load_verify_locations(cafile=str(ca_file))
            except (OSError, ssl.SSLError) as error:
                raise InvalidInput(
                    f"CITEWELL_FETCH_CA: the certificate authorities in {ca_file} cannot be read: {error}") from None
        self._trusted = trusted
        self.client = self._new_client()  # plain http, and the headers every request carries
        self._tls: OrderedDict[str, httpx.Client] = OrderedDict()
        self._tls_lock = threading.Lock()

    def _new_client(self) -> httpx.Client:
        return httpx.Client(
            transport=Transport(self._trusted, httpx.Limits(max_connections=16, max_keepalive_connections=8)),
            follow_redirects=False, trust_env=False, cookies=http.cookiejar.CookieJar(policy=_NoCookies()),
            timeout=httpx.Timeout(min(self.seconds, 10.0)),
            headers={"User-Agent": USER_AGENT, "Accept": "*/*", "Accept-Encoding": ACCEPTED},
        )

    def _client_for(self, url: httpx.URL) -> httpx.Client:
        """The shared client for http; for https the pool of the name (see the module's docstring)."""
        if url.scheme != "https":
            return self.client
        with self._tls_lock:
            client = self._tls.pop(url.host, None) or self._new_client()
            self._tls[url.host] = client
            while len(self._tls) > TLS_NAMES_KEPT:  # dropped, not closed: a fetch may still be using it
                self._tls.popitem(last=False)
            return client

    @classmethod
    def configured(cls, config: Settings, max_bytes: int, allow: tuple[str, ...] = ()) -> Fetcher:
        """The fetcher the operator's settings describe: their allow-list (with ``allow``), time limit and CAs."""
        return cls(Guard.of([*config.fetch_allow, *allow]), max_bytes=max_bytes, seconds=config.fetch_seconds,
                   ca_file=config.fetch_ca)

    def close(self) -> None:
        self.client.close()
        with self._tls_lock:
            for client in self._tls.values():
                client.close()
            self._tls.clear()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def fetch(self, raw_url: str, known: Fetched | None = None, within: Scope | None = None) -> Page:
        """The page's bytes, or ``not_modified`` when ``known``'s validators still hold.

        ``within``: a crawl's scope, which every hop must stay in (a redirect out of it is
        :class:`OutOfScope`). Raises :class:`UrlRefused`, :class:`FetchFailed`, :class:`TooLarge` or
        :class:`HttpStatus` (a 404 or 410 among them: the caller lists the page as gone)."""
        url = parse_url(raw_url)
        asked = normalise(url)
        if within is not None and not within.holds(asked):
            raise OutOfScope(f"{asked} is outside the crawl's scope {within.prefix}")
        deadline = time.monotonic() + self.seconds
        conditional = {}
        if known is not None and known.etag:
            conditional["If-None-Match"] = known.etag
        if known is not None and known.last_modified:
            conditional["If-Modified-Since"] = known.last_modified
        for _ in range(self.max_redirects + 1):
            response, body = self._send(url, conditional, deadline)
            if response.status_code in _REDIRECTS and "location" in response.headers:
                try:
                    url = parse_url(str(url.join(response.headers["location"])))
                except UrlRefused as error:
                    raise UrlRefused(f"{normalise(url)} redirects to a URL that is not fetched: {error.message}") from None
                if within is not None and not within.holds(normalise(url)):
                    raise OutOfScope(f"{asked} redirects to {normalise(url)}, outside the crawl's scope {within.prefix}")
                continue
            if response.status_code == 304 and known is not None:
                return Page(asked, normalise(url), "not_modified", fetched=known)
            if response.status_code >= 300:
                raise HttpStatus(f"{normalise(url)} answered {response.status_code} {response.reason_phrase}".rstrip(),
                                 response.status_code)
            fetched = Fetched(etag=response.headers.get("etag"), last_modified=response.headers.get("last-modified"),
                              sha256=hashlib.sha256(body).hexdigest())
            return Page(asked, normalise(url), "fetched", body, fetched)
        raise FetchFailed(f"{asked} redirected more than {self.max_redirects} times")

    def _send(self, url: httpx.URL, conditional: dict[str, str], deadline: float) -> tuple[httpx.Response, bytes]:
        port = url.port or (443 if url.scheme == "https" else 80)
        addresses = self.guard.vet(url.host, port)
        host_header = url.netloc.decode("ascii")
        last: Exception | None = None
        for address in addresses:
            pinned = url.copy_with(host=address)
            request = httpx.Request("GET", pinned, headers={**self.client.headers, "Host": host_header, **conditional},
                                    extensions={"sni_hostname": url.host} if url.scheme == "https" else {})
            try:
                return self._read(self._client_for(url), request, deadline, normalise(url))
            except httpx.ConnectError as error:  # the next address the name has, if any
                refused = _certificate_error(error)
                if refused is not None:  # every address serves the name's certificate: no other is tried
                    raise CertificateRefused(f"{normalise(url)} presented a certificate that is not valid for "
                                             f"{url.host}: {refused.verify_message}") from None
                last = error
            except httpx.TimeoutException:
                raise FetchFailed(f"{normalise(url)} did not answer within the time limit") from None
            except httpx.HTTPError as error:
                raise FetchFailed(f"{normalise(url)} could not be fetched: {type(error).__name__}: {error}") from None
        raise FetchFailed(f"{normalise(url)} could not be reached: {last}")

    def _read(self, client: httpx.Client, request: httpx.Request, deadline: float,
              shown: str) -> tuple[httpx.Response, bytes]:
        with until(deadline):  # connect, handshake, headers and body: all within the fetch's time
            return self._read_by(client, request, deadline, shown)

    def _read_by(self, client: httpx.Client, request: httpx.Request, deadline: float,
                 shown: str) -> tuple[httpx.Response, bytes]:
        response = client.send(request, stream=True)
        try:
            if response.status_code != 200:
                return response, b""
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise TooLarge(f"{shown} is {int(declared):,} bytes, over the limit of {self.max_bytes:,} bytes")
            body = bytearray()
            for piece in decoded(response.iter_raw(), codings(response.headers.get("content-encoding", ""), shown), shown):
                body += piece
                if len(body) > self.max_bytes:
                    raise TooLarge(f"{shown} sent more than the limit of {self.max_bytes:,} bytes; the rest was not read")
                if time.monotonic() > deadline:
                    raise FetchFailed(f"{shown} took longer than the time limit to send its page")
            return response, bytes(body)
        finally:
            response.close()


def _certificate_error(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate check that failed a connection, if that is what failed it."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
