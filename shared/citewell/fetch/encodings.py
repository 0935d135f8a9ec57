"""A reply's ``Content-Encoding`` undone as it is read, never more than a piece at a time.

httpx decodes each network read whole before its caller can count the bytes: a reply sent as
``gzip, gzip`` of a few KB decodes to a gigabyte inside one call. Here every coding of the stack
is a zlib stream asked for at most :data:`PIECE` bytes of output per call, and each layer hands
its pieces on one at a time, so what the caller counts against its limit is all that was ever
decoded, give or take a piece per layer.

Only what the fetcher asks for is read (:data:`ACCEPTED`: ``gzip`` and ``deflate``, stacked at
most :data:`MAX_CODINGS` deep); a reply in any other coding is :class:`~citewell.errors.FetchFailed`
rather than stored as bytes nobody can read.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

from citewell.errors import FetchFailed

PIECE = 64 * 1024
ACCEPTED = "gzip, deflate"  # the Accept-Encoding every request sends
MAX_CODINGS = 3  # no server stacks more for a page; a deeper stack is only ever a bomb
_GZIP, _ZLIB, _RAW = zlib.MAX_WBITS | 16, zlib.MAX_WBITS, -zlib.MAX_WBITS


def codings(header: str, shown: str) -> list[str]:
    """The codings in the order they were applied (``identity`` means none), checked readable."""
    found = [c.strip().lower() for c in header.split(",") if c.strip() and c.strip().lower() != "identity"]
    unread = [c for c in found if c not in ("gzip", "x-gzip", "deflate")]
    if unread:
        raise FetchFailed(f"{shown} was sent in the {', '.join(unread)} encoding, which is not read (only gzip and deflate)")
    if len(found) > MAX_CODINGS:
        raise FetchFailed(f"{shown} was sent through {len(found)} stacked encodings; at most {MAX_CODINGS} are read")
    return found


def decoded(raw: Iterable[bytes], applied: list[str], shown: str) -> Iterator[bytes]:
    """The body's bytes, in pieces of at most :data:`PIECE`, the last-applied coding undone first."""
    stream: Iterable[bytes] = raw
    for coding in reversed(applied):
        stream = _Inflate(_GZIP if coding in ("gzip", "x-gzip") else _ZLIB, f"{shown}'s {coding} body").through(stream)
    return iter(stream)


class _Inflate:
    """One coding's zlib stream. gzip may hold several members one after the other; ``deflate`` is
    zlib-wrapped by the standard, raw by some servers: the first bytes tell which."""

    def __init__(self, wbits: int, name: str) -> None:
        self.wbits, self.name = wbits, name
        self._stream = zlib.decompressobj(wbits)
        self._started = False

    def through(self, stream: Iterable[bytes]) -> Iterator[bytes]:
        for data in stream:
            yield from self._feed(data)
        if self._started and not self._stream.eof:
            raise FetchFailed(f"{self.name} ended before its stream did (cut off)")

    def _feed(self, data: bytes) -> Iterator[bytes]:
        while True:
            if self._stream.eof:  # a member ended: what follows is another one, or padding
                if not data.strip(b"\0"):
                    return
                self._stream, self._started = zlib.decompressobj(self.wbits), False
            try:
                piece = self._stream.decompress(data, PIECE)
            except zlib.error as error:
                if self.wbits == _ZLIB and not self._started:  # a raw deflate stream, as some servers send
                    self.wbits, self._stream = _RAW, zlib.decompressobj(_RAW)
                    continue
                raise FetchFailed(f"{self.name} cannot be decoded: {error}") from None
            self._started = self._started or bool(data)
            if piece:
                yield piece
            if self._stream.eof:
                data = self._stream.unused_data
                continue
            data = self._stream.unconsumed_tail  # what did not fit in this piece's output
            if not data and len(piece) < PIECE:  # all in, and nothing more waiting inside zlib
                return
