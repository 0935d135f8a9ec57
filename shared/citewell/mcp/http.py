"""The MCP server over streamable HTTP, as ``citewell serve`` mounts it at ``/mcp``.

Stateless, with JSON replies: each request is one call under the caller its own bearer token
names (``citewell serve`` verifies it, as for every API request, before the SDK sees the
request), so no session holds an identity a later request could borrow, and no session state
grows with the clients. The server reads the body within the API's limits (64 KiB, and its
deadline) before the SDK parses it (:func:`replayed`). The SDK's Host and Origin
checks are off: the server checks a browser's Origin itself (:func:`foreign_origin`), and any
Host is served, as by the API, since the token, which another page cannot send, is what admits.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from citewell.api.events import MAX_BODY_BYTES

PATH = "/mcp"


def session_manager(server: Server[Any]) -> StreamableHTTPSessionManager:
    """The SDK's transport for ``server``: run it (``.run()``) for the application's lifetime."""
    return StreamableHTTPSessionManager(
        app=server, stateless=True, json_response=True, max_request_body_size=MAX_BODY_BYTES,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


def header(scope: Scope, name: bytes) -> str | None:
    """A request header's value (the first, if sent more than once)."""
    return next((value.decode("latin-1") for key, value in scope["headers"] if key == name), None)


def foreign_origin(scope: Scope, origin: str) -> str | None:
    """A browser's ``Origin`` other than this server's own (``scheme://host:port``), or None:
    the transport's rule against DNS rebinding, whatever Host the request names."""
    sent = header(scope, b"origin")
    return sent if sent is not None and sent.rstrip("/") != origin.rstrip("/") else None


def replayed(body: bytes, receive: Receive) -> Receive:
    """``receive`` for a body already read (within the server's limits): the body, then whatever
    the connection says next (a disconnect)."""
    sent = False

    async def once() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return once


def not_stored(send: Send, request_id: str) -> Send:
    """``send`` that marks the reply as the API's are: never cached (it is one caller's), with its request id."""

    async def marked(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"cache-control", b"no-store"),
                                              (b"x-request-id", request_id.encode())]}
        await send(message)

    return marked
