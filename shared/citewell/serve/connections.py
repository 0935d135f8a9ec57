"""What one connection, and one client address, may hold of ``citewell serve``, and for how long.

Uvicorn's httptools protocol bounds neither a request's head nor idle connections. One
connection streaming header lines grew the server by hundreds of MB, and a header value that
arrives in pieces is copied whole at every piece, which stalled all other requests for seconds.
It also counts an idle connection like a busy one against its connection limit: 256 that sent
nothing made every other request a 503 until they timed out. :class:`GuardedProtocol`:

- answers a request line and headers over ``max_header_bytes``, or over ``max_headers`` lines,
  with a 431 and closes, as the bytes arrive (never after buffering them);
- closes a connection whose request head has not arrived within ``header_seconds`` of it
  opening or of its previous response, and one that sent nothing for ``idle_seconds``;
- keeps at most ``idle_per_client`` connections of one client address waiting for a request
  (none under way), closing the one that has waited longest past that;
- keeps at most ``per_client`` connections of one client address open, busy or not: past it the
  address's longest waiting one is closed, and with none waiting the new connection is answered
  503 at once. Idle limits alone left one address free to hold every slot with requests under
  way (upload heads, then a body that never came), and every other client got a 503 until the
  body's deadline;
- and when every connection slot is taken, closes the connection that has waited longest for a
  request, so a new client is served unless every slot is busy with a request.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class Waiting:
    """The connections waiting for a request, oldest first: all of them and by client address."""

    def __init__(self) -> None:
        self._all: dict[GuardedProtocol, None] = {}
        self._by_client: dict[str, dict[GuardedProtocol, None]] = {}

    def add(self, connection: GuardedProtocol) -> None:
        self.discard(connection)  # to the end: the newest
        self._all[connection] = None
        self._by_client.setdefault(connection.address, {})[connection] = None

    def discard(self, connection: GuardedProtocol) -> None:
        self._all.pop(connection, None)
        mine = self._by_client.get(connection.address)
        if mine is not None:
            mine.pop(connection, None)
            if not mine:
                del self._by_client[connection.address]

    def count(self, address: str) -> int:
        return len(self._by_client.get(address, ()))

    def oldest(self, address: str | None = None) -> GuardedProtocol | None:
        among = self._all if address is None else self._by_client.get(address, {})
        return next(iter(among), None)


class Holding:
    """Every open connection by client address, busy or waiting: each address's share of the slots."""

    def __init__(self) -> None:
        self._by_client: dict[str, set[GuardedProtocol]] = {}

    def add(self, connection: GuardedProtocol) -> None:
        self._by_client.setdefault(connection.address, set()).add(connection)

    def discard(self, connection: GuardedProtocol) -> None:
        mine = self._by_client.get(connection.address)
        if mine is not None:
            mine.discard(connection)
            if not mine:
                del self._by_client[connection.address]

    def count(self, address: str) -> int:
        return len(self._by_client.get(address, ()))


class HeadTooLarge(Exception):
    """Raised in the parser's callback to stop it: the head is answered with a 431."""


class GuardedProtocol(HttpToolsProtocol):
    """Uvicorn's httptools protocol with the limits above; a subclass per server sets them."""

    header_seconds = 30.0
    idle_seconds = 5.0
    idle_per_client = 32
    per_client = 32
    refusal_linger_seconds = 1.0  # a refused connection is closed after this, so its client reads the 503 first
    max_headers = 100
    max_header_bytes = 32 * 1024
    waiting = Waiting()
    holding = Holding()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address = ""
        self._header_timer: asyncio.TimerHandle | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._reading_head = True  # the bytes arriving are a request's line and headers
        self._arrived = 0  # bytes received since the head began, whole or not
        self._head_bytes = self._head_lines = 0  # of the head's line and headers the parser has completed
        self._too_large = False
        self._refused = False  # over its address's share: answered 503, its bytes ignored until it closes

    # -- waiting for a request ---------------------------------------------------------------

    def _wait(self) -> None:
        """No request under way: this connection may be closed to make room, and is on the clock."""
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_seconds, self._headers_too_slow)
        self._idle_timer = self.loop.call_later(self.idle_seconds, self._idle_too_long)
        self.waiting.add(self)
        while self.waiting.count(self.address) > self.idle_per_client:
            oldest = self.waiting.oldest(self.address)
            if oldest is None or oldest is self:
                break
            oldest._close_waiting()

    def _within_share(self) -> bool:
        """Whether this new connection fits its address's share, once that address's longest
        waiting connections are closed to make room; if not, it is answered 503 and closed."""
        while self.holding.count(self.address) > self.per_client:
            oldest = self.waiting.oldest(self.address)
            if oldest is None:
                self._refuse_over_share()
                return False
            oldest._close_waiting()
        return True

    def _refuse_over_share(self) -> None:
        """A 503 in the API's error shape before any request is read, then the end of the stream;
        the socket closes shortly after, so a client that already sent its request reads the 503
        rather than a reset. The slot is given back now."""
        self._refused = True
        self.holding.discard(self)
        self.connections.discard(self)
        message = (f"this client address already holds {self.per_client} connections with requests under way; "
                   "retry when one of them has finished")
        body = json.dumps({"error": {"code": "ServiceUnavailable", "message": message}}).encode()
        self.transport.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
                             b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(self.refusal_linger_seconds, self.transport.close)

    def _make_room(self) -> None:
        """Uvicorn answers 503 once its connections reach its limit: the longest waiting go first."""
        limit = self.limit_concurrency
        while limit and len(self.connections) >= limit:
            oldest = self.waiting.oldest()
            if oldest is None or oldest is self:
                break
            oldest._close_waiting()

    def _close_waiting(self) -> None:
        self.waiting.discard(self)
        self.holding.discard(self)
        self.connections.discard(self)  # its slot is free now, not when the loop reports it lost
        self._disarm()
        self.transport.close()

    def _disarm(self) -> None:
        for timer in (self._header_timer, self._idle_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._idle_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.cycle is None or self.cycle.response_complete:  # still waiting for a request's head
            self._close_waiting()

    def _idle_too_long(self) -> None:
        self._idle_timer = None
        if self.cycle is None or self.cycle.response_complete:
            self._close_waiting()

    # -- the request's head --------------------------------------------------------------------

    def _count(self, size: int, lines: int = 0) -> None:
        self._head_bytes += size
        self._head_lines += lines
        if self._head_bytes > self.max_header_bytes or self._head_lines > self.max_headers:
            self._too_large = True
            raise HeadTooLarge()

    def _refuse_head(self) -> None:
        """A 431 in the API's error shape, unless a response is under way on this connection; then close."""
        self._too_large = True
        if self.cycle is None or self.cycle.response_complete:
            message = (f"the request's line and headers are over {self.max_header_bytes:,} bytes "
                       f"or {self.max_headers} header lines")
            body = json.dumps({"error": {"code": "RequestHeaderFieldsTooLarge", "message": message}}).encode()
            self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
                                 b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
        self.waiting.discard(self)
        self.holding.discard(self)
        self._disarm()
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        if self._too_large:  # the parser stopped because a callback raised HeadTooLarge
            self._refuse_head()
        else:
            super().send_400_response(msg)

    # -- uvicorn's callbacks ---------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.address = self.client[0] if self.client else ""
        self.holding.add(self)
        if not self._within_share():
            return
        self._make_room()
        self._wait()

    def connection_lost(self, exc: Exception | None) -> None:
        self.waiting.discard(self)
        self.holding.discard(self)
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused or self.transport.is_closing():
            return
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self._reading_head:
            self._arrived += len(data)  # a value arriving in pieces reaches on_header only when whole
        super().data_received(data)
        if self._reading_head and self._arrived > self.max_header_bytes and not self.transport.is_closing():
            self._refuse_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_bytes = self._head_lines = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._count(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4, lines=1)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._reading_head, self._arrived = False, 0
        self.waiting.discard(self)
        self._disarm()  # the body has the application's deadline

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading_head, self._arrived = True, 0  # what follows on this connection is the next request's head

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.cycle.response_complete:  # not a pipelined request started
            self._wait()
