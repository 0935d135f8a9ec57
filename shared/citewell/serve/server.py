"""Running the application under uvicorn, with the limits a slow or stuck client needs.

Uvicorn runs on uvloop with httptools parsing requests (its "standard" set-up): against h11 on
asyncio's loop that took about 0.3 ms off each request (a fixed reply, measured side by side;
see docs/measurements.md), a sixth of what serving added to a 50k-chunk search.

Uvicorn closes an idle keep-alive connection, but waits forever for a request whose headers
trickle in (or never come); :class:`TimedHttpToolsProtocol` closes such a connection after
``read_seconds``. Bodies have their own deadlines in the application. SIGTERM (and Ctrl-C)
stop accepting, let requests in flight finish within the grace period, then stop the
ingest worker (see :mod:`citewell.serve.worker`).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from citewell.serve.app import Server
from citewell.serve.settings import ServeSettings

MAX_CONNECTIONS = 256  # beyond this, new requests get a 503 at once instead of queueing


class TimedHttpToolsProtocol(HttpToolsProtocol):
    """Closes a connection whose request line and headers have not all arrived within ``header_seconds``,
    from the moment it opens or its previous response ends."""

    header_seconds = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_seconds, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.cycle is None or self.cycle.response_complete:  # still waiting for a request's headers
            self.transport.close()

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._disarm()  # a request's headers are complete: the body has the app's deadline

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()


def origin(host: str, port: int, settings: ServeSettings) -> str:
    """Where clients reach this server: ``CITEWELL_PUBLIC_URL``, else the address it listens on.
    A wildcard address names no host a client could call, so it needs the setting."""
    if settings.public_url:
        return settings.public_url
    if host in ("", "0.0.0.0", "::", "[::]"):
        raise ValueError(f"listening on every address ({host or 'all'}) needs CITEWELL_PUBLIC_URL, the URL "
                         "clients reach this server at (upload forms point there), e.g. http://kb.example.org:8000")
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(home: Path, *, host: str = "127.0.0.1", port: int = 8000, demo: bool = False,
          settings: ServeSettings | None = None, log_level: str = "info") -> None:
    """Serve ``home`` until SIGTERM or Ctrl-C. After a clean shutdown uvicorn raises the signal
    again, so the process ends as killed by it (what a supervisor expects of a stopped service)."""
    settings = settings or ServeSettings.from_env()
    server = Server(home, settings, origin(host, port, settings), demo=demo)
    protocol = type("Protocol", (TimedHttpToolsProtocol,), {"header_seconds": settings.read_seconds})
    config = uvicorn.Config(
        server.app(), host=host, port=port, http=protocol, loop="uvloop", lifespan="on", log_level=log_level,
        timeout_keep_alive=5, timeout_graceful_shutdown=int(settings.grace_seconds) or 1,
        limit_concurrency=MAX_CONNECTIONS, proxy_headers=False, server_header=False, date_header=True,
    )
    ours = logging.getLogger("citewell.serve")  # the worker's outcomes, beside uvicorn's access log
    ours.setLevel(log_level.upper())
    if not ours.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        ours.addHandler(handler)
    if demo:
        ours.warning(
            "--demo: anyone who can reach this server can take a demo identity's token (GET /demo/identities)")
    uvicorn.Server(config).run()
