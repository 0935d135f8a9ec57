"""The MCP server over streamable HTTP, as ``citewell serve`` mounts it at ``/mcp``.

Stateless, with JSON replies: each request is one call under the caller its own bearer token
names (``citewell serve`` verifies it, as for every API request, before the SDK sees the
request), so no session holds an identity a later request could borrow, and no session state
grows with the clients. Bodies are held to the API's limit (64 KiB). The SDK's Host and Origin
checks are off: the server checks a browser's Origin itself (:func:`foreign_origin`), and any
Host is served, as by the API, since the token, which another page cannot send, is what admits.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from citewell.api.events import MAX_BODY_BYTES

PATH = "/mcp"


def session_manager(server: Server[Any]) -> StreamableHTTPSessionManager:
    """The SDK's transport for ``server``: run it (``.run()``) for the application's lifetime."""
    return StreamableHTTPSessionManager(
        app=server, stateless=True, json_response=True, max_request_body_size=MAX_BODY_BYTES,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


def foreign_origin(headers: list[tuple[bytes, bytes]], origin: str) -> str | None:
    """A browser's ``Origin`` other than this server's own (``scheme://host:port``), or None:
    the transport's rule against DNS rebinding, whatever Host the request names."""
    sent = next((value.decode("latin-1") for name, value in headers if name == b"origin"), None)
    return sent if sent is not None and sent.rstrip("/") != origin.rstrip("/") else None
