"""``citewell mcp``: citewell's tools for an agent (the Model Context Protocol) on stdin and stdout,
under the identity the operator's flags give."""

from __future__ import annotations

import argparse
from typing import Any

from citewell.cli.common import EXIT_OK, ROLES_HELP, TENANT_HELP, AddCommand, _roles, _tenant
from citewell.models.identity import Identity


def add_mcp(command: AddCommand) -> None:
    """The arguments of ``citewell mcp``."""
    p = command("mcp", help="an MCP server on stdin/stdout for an agent: search, ask, read, citations, documents",
                description="Serve citewell's tools over the Model Context Protocol on stdin and stdout, for an agent "
                            "that starts this command. Every tool call reads as the identity these flags give; a "
                            "tool's arguments never name a tenant or roles. Over HTTP, citewell serve offers the "
                            "same tools at /mcp, under each request's bearer token.")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help=ROLES_HELP)


def cmd_mcp(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deployments import default_home
    from citewell.mcp.stdio import serve_stdio

    serve_stdio((args.home or default_home()).expanduser(), Identity(tenant=args.tenant, roles=args.roles))
    return {}, EXIT_OK
