"""gzip for text replies a client accepts it for; streams pass untouched.

Text (the page, its script and stylesheet, JSON) shrinks to a fifth or less with gzip; a
browser asks for it in every request. A reply sent whole (one body message) is compressed here
when its client accepts gzip; one sent in pieces (the server-sent events of ``POST /query``)
goes through as it is, piece by piece, since a gzip stream holds back what it has not flushed
and a draft must reach the page as it is written. The page's files come compressed already
(:mod:`citewell.serve.page`): a reply with a ``Content-Encoding`` is left alone.
"""

from __future__ import annotations

import gzip

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MIN_BYTES = 512  # below this the gzip header and the work outweigh what it saves
LEVEL = 5  # of 9: nearly level 6's size on JSON at two thirds of its time
OFF_LOOP_BYTES = 256 * 1024  # a larger body (a document's text) is compressed in a pool thread
COMPRESSIBLE = (b"text/html", b"text/css", b"text/javascript", b"text/plain", b"application/json",
                b"application/javascript", b"image/svg+xml")


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` value allows gzip: named (or ``x-gzip``) with a q above 0,
    or else ``*`` with a q above 0 (RFC 9110, 12.5.3)."""
    star = None
    for part in header.split(","):
        coding, *parameters = part.split(";")
        coding = coding.strip().lower()
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if coding in ("gzip", "x-gzip"):
            return weight > 0
        if coding == "*":
            star = weight
    return star is not None and star > 0


def gzipped(data: bytes) -> bytes:
    """``data`` as gzip, the same bytes for the same data (no timestamp)."""
    return gzip.compress(data, compresslevel=LEVEL, mtime=0)


def compressible(content_type: bytes) -> bool:
    return content_type.split(b";", 1)[0].strip().lower() in COMPRESSIBLE


def with_vary(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` saying the reply depends on Accept-Encoding (a cache keeps each form apart)."""
    for index, (name, value) in enumerate(headers):
        if name.lower() == b"vary":
            if b"accept-encoding" in value.lower() or value.strip() == b"*":
                return headers
            return [*headers[:index], (name, value + b", Accept-Encoding"), *headers[index + 1:]]
    return [*headers, (b"vary", b"Accept-Encoding")]


class Compressed:
    """ASGI middleware: a whole text reply gzipped when the request accepts it, with ``Vary``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        accept = b",".join(value for name, value in scope.get("headers") or [] if name == b"accept-encoding")
        accepted = accepts_gzip(accept.decode("latin-1")) if accept else False
        held: Message | None = None

        async def maybe_compressed(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                held = message  # until the first body part says whether the reply comes whole
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            start, held = held, None
            headers = list(start.get("headers") or [])
            names = {name.lower(): value for name, value in headers}
            if b"content-encoding" in names or not compressible(names.get(b"content-type", b"")):
                await send(start)
                await send(message)
                return
            headers = with_vary(headers)
            body = message.get("body", b"")
            if accepted and not message.get("more_body", False) and len(body) >= MIN_BYTES:
                body = await anyio.to_thread.run_sync(gzipped, body) if len(body) > OFF_LOOP_BYTES else gzipped(body)
                headers = [(n, v) for n, v in headers if n.lower() != b"content-length"]
                headers += [(b"content-encoding", b"gzip"), (b"content-length", str(len(body)).encode())]
                message = {**message, "body": body}
            await send({**start, "headers": headers})
            await send(message)

        await self.app(scope, receive, maybe_compressed)


__all__ = ["Compressed", "accepts_gzip", "gzipped"]
