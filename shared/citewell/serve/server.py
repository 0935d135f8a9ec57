"""Running the application under uvicorn, with the limits a slow or stuck client needs.

Uvicorn runs on uvloop with httptools parsing requests (its "standard" set-up): against h11 on
asyncio's loop that took about 0.3 ms off each request (a fixed reply, measured side by side;
see docs/measurements.md), a sixth of what serving added to a 50k-chunk search.

Uvicorn bounds neither a request's head nor what idle connections hold;
:class:`~citewell.serve.connections.GuardedProtocol` does (the head's size, lines and deadline,
idle and open connections per client address). Bodies have their own deadlines in the application.
SIGTERM (and Ctrl-C) stop accepting, let requests in flight finish within the grace period,
then stop the ingest worker (see :mod:`citewell.serve.worker`).
"""

from __future__ import annotations

import logging
from pathlib import Path

import uvicorn

from citewell.serve.app import Server
from citewell.serve.connections import GuardedProtocol, Holding, Waiting
from citewell.serve.settings import ServeSettings

MAX_CONNECTIONS = 256  # beyond this, new requests get a 503 at once instead of queueing


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
    protocol = type("Protocol", (GuardedProtocol,), {
        "header_seconds": settings.read_seconds, "idle_seconds": settings.idle_seconds,
        "idle_per_client": settings.idle_per_client, "per_client": settings.connections_per_client,
        "max_headers": settings.max_headers, "max_header_bytes": settings.max_header_bytes,
        "waiting": Waiting(), "holding": Holding()})
    config = uvicorn.Config(
        server.app(), host=host, port=port, http=protocol, loop="uvloop", lifespan="on", log_level=log_level,
        timeout_keep_alive=max(1, round(settings.idle_seconds)), timeout_graceful_shutdown=int(settings.grace_seconds) or 1,
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
