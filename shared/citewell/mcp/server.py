"""The MCP server: citewell's tools (:mod:`.tools`) on the SDK's low-level server, for any transport.

The transport says who is asking (``identity_of``, called per tool call): the operator's flags
on stdio, the bearer token ``citewell serve`` verified for the HTTP request carrying the call
(see :func:`request_identity`). A tool runs in a worker thread (the stores and the model block),
under the transport's limiter. What a tool refuses comes back as a tool error the model can read
and correct (``code: message``, and ``{"error": {"code", "message"}}`` as structured content);
our own failures say only that, with the details in the log.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from anyio import CapacityLimiter
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError

from citewell import __version__
from citewell.errors import CitewellError
from citewell.mcp.tools import BY_NAME, TOOLS
from citewell.models.identity import Identity
from citewell.services import Services
from citewell.settings import InvalidSetting

logger = logging.getLogger("citewell.mcp")
IDENTITY_SCOPE_KEY = "citewell.identity"  # where citewell serve puts the verified caller in an /mcp request's ASGI scope
IDENTITY_FIELDS = {"tenant", "roles", "subject", "identity", "user", "groups"}
INSTRUCTIONS = (
    "citewell is a permission-aware knowledge base: every tool sees only the documents this connection's identity "
    "may read. Use `ask` for an answer in which every claim is cited (show the user its citations), `search` to find "
    "passages yourself, `read` to read a whole document, one section or one passage that a hit or citation names, "
    "`citations` for what an earlier answer rested on, and `documents` to list what may be read. A non-answer "
    "(not_found, unconfirmed) is the honest outcome: do not fill it in from elsewhere as if the documents said it."
)

IdentityOf = Callable[[ServerRequestContext[Any, Any]], Identity]


def request_identity(ctx: ServerRequestContext[Any, Any]) -> Identity:
    """The caller citewell serve verified for the HTTP request that carries this call. A request
    that reached the server without one (no path does) is refused, never served as anyone."""
    scope = getattr(ctx.request, "scope", None)
    identity = scope.get(IDENTITY_SCOPE_KEY) if isinstance(scope, dict) else None
    if not isinstance(identity, Identity):
        raise MCPError(code=INVALID_PARAMS, message="this request carries no verified caller")
    return identity


def tool_list() -> list[types.Tool]:
    """Each tool as a client lists it: its input schema (the closed arguments model) and output
    schema (the result model as it is sent, computed fields such as section_id included)."""
    return [
        types.Tool(
            name=tool.name, title=tool.title, description=tool.description,
            input_schema=tool.arguments.model_json_schema(),
            output_schema=tool.result.model_json_schema(mode="serialization"),
            annotations=types.ToolAnnotations(title=tool.title, read_only_hint=tool.read_only, destructive_hint=False,
                                              idempotent_hint=tool.read_only, open_world_hint=False),
        )
        for tool in TOOLS
    ]


def refusal(code: str, message: str) -> types.CallToolResult:
    """A tool error: the text a model reads, and the one error shape as structured content."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{code}: {message}")],
                                structured_content={"error": {"code": code, "message": message}}, is_error=True)


def arguments_problem(error: ValidationError) -> str:
    """What is wrong with a tool's arguments, field by field; an identity field says where identity comes from."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        if item["type"] == "extra_forbidden" and str(item["loc"][-1]) in IDENTITY_FIELDS:
            problems.append(f"{where}: not an argument: who is asking comes from this connection's identity (the "
                            "operator's flags, or the bearer token), never from a tool's arguments")
        elif item["type"] == "extra_forbidden":
            problems.append(f"{where}: not an argument of this tool")
        else:
            problems.append(f"{where}: {str(item['msg']).removeprefix('Value error, ')}")
    return "; ".join(problems)


def build_server(services: Services, identity_of: IdentityOf,
                 limiter: Callable[[], CapacityLimiter | None] = lambda: None) -> Server[Any]:
    """The server over ``services``; ``identity_of`` names each call's caller, ``limiter`` the
    worker threads tools may take (None: anyio's default)."""
    listed = tool_list()

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = BY_NAME.get(params.name)
        if tool is None:
            raise MCPError(code=INVALID_PARAMS, message=f"no tool {params.name!r}: the tools are {', '.join(BY_NAME)}")
        identity = identity_of(ctx)
        run = functools.partial(tool.call, services, identity, dict(params.arguments or {}))
        try:
            result, text = await anyio.to_thread.run_sync(run, limiter=limiter())
        except ValidationError as error:
            return refusal("invalid_input", arguments_problem(error))
        except InvalidSetting as error:  # the operator's configuration, not the caller's request
            logger.error("misconfigured: %s", error.message)
            return refusal("misconfigured", "the service is misconfigured: its operator's log says which setting")
        except CitewellError as error:
            return refusal(error.code, error.message)
        except Exception:
            request_id = uuid.uuid4().hex
            logger.exception("the tool %s failed, request id %s", tool.name, request_id)
            return refusal("internal_error", f"something went wrong on our side; if it persists, report request id {request_id}")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=result.model_dump(mode="json"))

    return Server("citewell", version=__version__, title="citewell", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)
