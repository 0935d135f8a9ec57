"""``citewell serve``'s ``/mcp``: the MCP tools over streamable HTTP, driven by the MCP SDK's own
client against a real server process. The caller is the bearer token, verified as for every API
request: none, a forged one or one without roles is refused before the SDK sees the request; a
token's tenant and roles bound every tool call it carries, whatever the arguments say; a
document deleted through the API between two calls takes its answer with it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from citewell.serve.tokens import LOCAL_AUDIENCE, LOCAL_ISSUER
from tests.mcp.corpus import BUDGET, SERVER_ENV, build_home, refused, structured
from tests.serving import CLEAN_EXIT, WRITE, Served

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(build_home(tmp_path_factory.mktemp("mcp-http")), env=SERVER_ENV)
    try:
        yield server
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()


@asynccontextmanager
async def agent(served: Served, token: str, mode: Any = "auto") -> AsyncIterator[Client]:
    """The SDK's client on ``/mcp`` sending ``token``, as an agent configured with it does."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http), mode=mode) as client:
            yield client


def test_tools_over_http_a_cited_answer_and_every_read(served):
    staff = served.token("northpier", ["staff"])

    async def scenario() -> None:
        async with agent(served, staff) as client:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS  # each request carries its own envelope
            assert {t.name for t in (await client.list_tools()).tools} == {"search", "ask", "read", "citations", "documents"}
            answer = structured(await client.call_tool("ask", {"question": "When does the staff car park close?"}))
            assert answer["outcome"] == "answered" and answer["citations"][0]["document_id"] == "notice.md"
            record = structured(await client.call_tool("citations", {"answer_id": answer["answer_id"]}))
            assert record["citations"][0]["quote"] == answer["citations"][0]["quote"]
            found = structured(await client.call_tool("search", {"question": "meal allowance on a travel day", "k": 2}))
            meals = found["hits"][0]
            assert meals["document_id"] == "travel.md" and "35 euros" in meals["text"]
            assert refused(await client.call_tool("read", {"document_id": "travel.md"}))["code"] == "over_budget"
            section = structured(await client.call_tool("read", {"document_id": "travel.md", "section_id": meals["section_id"]}))
            assert "35 euros" in section["text"] and section["chars"] <= BUDGET
            documents = structured(await client.call_tool("documents", {}))
            assert [d["document_id"] for d in documents["documents"]] == ["handbook.md", "notice.md", "travel.md"]
        async with agent(served, staff, mode="legacy") as client:  # the initialize handshake, then stateless calls
            assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            again = structured(await client.call_tool("search", {"question": "meal allowance on a travel day", "k": 2}))
            assert again["hits"][0]["chunk_id"] == meals["chunk_id"]

    anyio.run(scenario)


def post(served: Served, body: Any, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
    return served.client.post("/mcp", headers={**MCP_HEADERS, **(headers or {})}, content=json.dumps(body), **kwargs)


def test_no_verified_token_no_tools(served):
    stranger = ec.generate_private_key(ec.SECP256R1())
    forged = jwt.encode({"iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE, "sub": "x", "exp": 4102444800, "custom:tenant": "northpier",
                         "cognito:groups": ["staff", "hr"]}, stranger, algorithm="ES256")
    for headers, said in (({}, "this needs a token"), ({"Authorization": "Bearer not-a-jwt"}, "not a JSON Web Token"),
                          ({"Authorization": f"Bearer {forged}"}, "signature does not verify"),
                          ({"Authorization": "Basic bm9ydGhwaWVyOnN0YWZm"}, "must be 'Bearer TOKEN'")):
        reply = post(served, INITIALIZE, headers)
        assert reply.status_code == 401, reply.text
        assert said in reply.json()["error"]["message"] and reply.headers["www-authenticate"].startswith("Bearer ")
    no_roles = served.token("northpier", [])
    reply = post(served, INITIALIZE, {"Authorization": f"Bearer {no_roles}"})
    assert reply.status_code == 403 and "no tenant or no roles" in reply.json()["error"]["message"]
    staff = {"Authorization": f"Bearer {served.token('northpier', ['staff'])}"}
    reply = post(served, INITIALIZE, {**staff, "Origin": "http://evil.example"})
    assert reply.status_code == 403 and "http://evil.example" in reply.json()["error"]["message"]
    reply = post(served, INITIALIZE, staff)  # the same request with the token: the SDK answers it
    assert reply.status_code == 200 and reply.json()["result"]["serverInfo"]["name"] == "citewell"
    for method in ("GET", "DELETE", "PUT"):  # no event stream to hold a connection open: each reply is its response
        reply = served.client.request(method, "/mcp", headers={**staff, "Accept": "text/event-stream"})
        assert reply.status_code == 405 and reply.headers["allow"] == "POST", reply.text
    huge = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"question": "x" * 100_000}}}
    reply = post(served, huge, staff)  # read by the server within the API's limit, before the SDK parses it
    assert reply.status_code == 413 and "64 KiB" in reply.json()["error"]["message"]
    reply = post(served, INITIALIZE, staff)
    assert reply.headers["cache-control"] == "no-store" and len(reply.headers["x-request-id"]) == 32


def test_the_token_bounds_every_call_whatever_the_arguments(served):
    async def scenario() -> None:
        async with agent(served, served.token("bluefen", ["staff"])) as theirs:
            their_answer = structured(await theirs.call_tool("ask", {"question": "How many days of annual leave?"}))
            assert their_answer["citations"][0]["document_id"] == "guide.md"
        async with agent(served, served.token("northpier", ["staff"])) as client:
            assert refused(await client.call_tool("citations", {"answer_id": their_answer["answer_id"]}))["code"] == "not_found"
            for arguments in ({"document_id": "guide.md"}, {"document_id": "hr/salaries.md"}, {"chunk_id": "hr/salaries.md#0#0"}):
                error = refused(await client.call_tool("read", arguments))
                assert error["code"] == "not_found" and "euros" not in error["message"]
            narrowed = structured(await client.call_tool("search", {"question": "salary band shift lead",
                                                                    "filters": {"document_ids": ["hr/salaries.md"]}}))
            assert narrowed["hits"] == []
            for widening in ({"tenant": "bluefen"}, {"roles": ["hr"]}, {"filters": {"roles": ["hr"]}}):
                error = refused(await client.call_tool("ask", {"question": "What is the salary band of a shift lead?", **widening}))
                assert error["code"] == "invalid_input" and "not an argument" in error["message"]
            error = refused(await client.call_tool("ask", {"question": "leave " * 1000}))
            assert "question: String should have at most 2000 characters" in error["message"]
        async with agent(served, served.token("northpier", ["hr"])) as hr:  # the same server, another token: its own reach
            answer = structured(await hr.call_tool("ask", {"question": "What is the salary band of a shift lead?"}))
            assert answer["outcome"] == "answered" and answer["citations"][0]["document_id"] == "hr/salaries.md"

    anyio.run(scenario)


def test_a_document_deleted_through_the_api_between_two_calls_takes_its_answer_with_it(served):
    staff = served.token("northpier", ["staff"])
    writer = served.token("northpier", ["staff", WRITE])
    question = {"question": "When does the car park on Quay Road close?"}

    async def scenario() -> None:
        async with agent(served, staff) as client:
            answer = structured(await client.call_tool("ask", question))
            assert answer["outcome"] == "answered" and answer["citations"][0]["document_id"] == "notice.md"
            deleted = await anyio.to_thread.run_sync(lambda: served.call("DELETE", "/documents/notice.md", writer))
            assert deleted.status_code == 200, deleted.text
            withdrawn = structured(await client.call_tool("citations", {"answer_id": answer["answer_id"]}))
            assert withdrawn["source_deleted"] and withdrawn["answer"] is None
            assert all(c["deleted"] and not c["quote"] for c in withdrawn["citations"])
            again = structured(await client.call_tool("ask", question))
            assert "notice.md" not in {c["document_id"] for c in again["citations"]} and "Dock Street" not in str(again)
            listed = structured(await client.call_tool("documents", {}))
            assert "notice.md" not in {d["document_id"] for d in listed["documents"]}

    anyio.run(scenario)
