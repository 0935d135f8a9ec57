"""``citewell mcp``: the MCP server on this process's stdin and stdout, for an agent that starts
it. The identity is the operator's, given once by the flags (``--tenant``, ``--roles``) for the
whole session: a tool's arguments never name one."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp.server.stdio import stdio_server

from citewell.deployments import open_local
from citewell.mcp.server import build_server
from citewell.models.identity import Identity


def serve_stdio(home: Path, identity: Identity) -> None:
    """Serve until the client closes stdin. While serving, fd 1 points at stderr (the SDK's
    stdio_server), so no stray print can corrupt the protocol."""
    services = open_local(home, existing=True)
    server = build_server(services, lambda ctx: identity)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
