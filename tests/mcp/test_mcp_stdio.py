"""``citewell mcp`` over stdio, driven by the MCP SDK's own client: ``python -m citewell mcp`` started
as an agent starts it, on a small real home. Who is asking is the operator's flags and nothing
else: ids of another tenant's documents and answers are not found (and say nothing of them),
filters and extra arguments cannot widen what is read, oversized arguments are refused clearly,
a read over the budget is refused (never cut), and a document deleted between two calls takes
its answer with it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from citewell.audit import audit
from citewell.cli import main
from citewell.deletion import delete_document
from citewell.deployments import open_local
from tests.mcp.corpus import BUDGET, build_home, refused, server_env, structured

TOOLS = {"search", "ask", "read", "citations", "documents"}


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return build_home(tmp_path_factory.mktemp("mcp-stdio"))


def agent(home: Path, tenant: str = "northpier", roles: str = "staff", mode: Any = "auto") -> Client:
    """A client that starts ``citewell mcp`` with the operator's flags, as an agent's config does."""
    command = ["-m", "citewell", "--home", str(home), "mcp", "--tenant", tenant, "--roles", roles]
    return Client(StdioServerParameters(command=sys.executable, args=command, env=server_env()), mode=mode)


def test_tools_listed_with_schemas_a_cited_answer_and_every_read(home):
    async def scenario() -> None:
        async with agent(home) as client:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == TOOLS
            for tool in listed.values():
                assert tool.description and tool.input_schema["additionalProperties"] is False
                assert tool.output_schema and tool.output_schema["type"] == "object"
                assert not {"tenant", "roles"} & set(tool.input_schema["properties"])
            assert listed["search"].annotations.read_only_hint and not listed["ask"].annotations.read_only_hint

            answer = structured(await client.call_tool("ask", {"question": "When does the staff car park close?"}))
            assert answer["outcome"] == "answered" and "3 March" in answer["answer"]
            (cited,) = answer["citations"]
            assert (cited["document_id"], cited["ref"]) == ("notice.md", "S1") and "Quay Road" in cited["quote"]
            assert cited["section_id"] and cited["chunk_id"].startswith("notice.md#")

            record = structured(await client.call_tool("citations", {"answer_id": answer["answer_id"]}))
            assert record["answer"] == answer["answer"] and record["citations"][0]["chunk_id"] == cited["chunk_id"]

            follow = structured(await client.call_tool("ask", {"question": "and where do staff park meanwhile?",
                                                               "conversation_id": answer["conversation_id"]}))
            assert follow["conversation_id"] == answer["conversation_id"] and "Dock Street" in (follow["answer"] or "")

            found = structured(await client.call_tool("search", {"question": "hotel night refund", "k": 3}))
            assert 1 <= len(found["hits"]) <= 3 and found["hits"][0]["document_id"] == "travel.md"
            hotels = found["hits"][0]

            whole = structured(await client.call_tool("read", {"document_id": "handbook.md"}))
            assert whole["unit"] == "document" and "27 days" in whole["text"] and whole["chars"] == len(whole["text"])

            too_long = refused(await client.call_tool("read", {"document_id": "travel.md"}))
            assert too_long["code"] == "over_budget" and f"over the budget of {BUDGET}" in too_long["message"]
            assert hotels["section_id"] in too_long["message"]  # the sections it has, to read one instead

            section = structured(await client.call_tool("read", {"document_id": "travel.md",
                                                                 "section_id": hotels["section_id"]}))
            assert section["unit"] == "section" and "140 euros" in section["text"] and "Mileage" not in section["text"]
            assert section["chars"] <= BUDGET

            passage = structured(await client.call_tool("read", {"chunk_id": hotels["chunk_id"]}))
            assert passage["unit"] == "chunk" and passage["text"] == hotels["text"]

            listed_documents = structured(await client.call_tool("documents", {}))
            assert [d["document_id"] for d in listed_documents["documents"]] == ["handbook.md", "notice.md", "travel.md"]
            first = structured(await client.call_tool("documents", {"limit": 2}))
            rest = structured(await client.call_tool("documents", {"limit": 2, "cursor": first["next"]}))
            assert [d["document_id"] for d in first["documents"] + rest["documents"]] == ["handbook.md", "notice.md", "travel.md"]
            assert rest["next"] is None

    anyio.run(scenario)


def test_nothing_another_tenant_or_role_holds_is_reached_whatever_the_arguments(home):
    async def scenario() -> None:
        async with agent(home, "bluefen", "staff") as theirs:
            their_answer = structured(await theirs.call_tool("ask", {"question": "How many days of annual leave?"}))
            assert their_answer["citations"][0]["document_id"] == "guide.md"
        async with agent(home) as client:
            missing = {"document_id": "hr/salaries.md"}, {"document_id": "guide.md"}, {"chunk_id": "guide.md#0#0"}
            messages = []
            for arguments in missing:
                error = refused(await client.call_tool("read", arguments))
                assert error["code"] == "not_found"
                messages.append(error["message"])
            assert "salary" not in " ".join(messages).lower() and "bluefen" not in " ".join(messages).lower()
            error = refused(await client.call_tool("citations", {"answer_id": their_answer["answer_id"]}))
            assert error["code"] == "not_found"
            error = refused(await client.call_tool("ask", {"question": "and next year?",
                                                           "conversation_id": their_answer["conversation_id"]}))
            assert error["code"] == "not_found"

            # filters narrow what the identity may read, never widen it
            narrowed = structured(await client.call_tool("search", {
                "question": "salary band annual leave", "filters": {"document_ids": ["hr/salaries.md", "guide.md"]}}))
            assert narrowed["hits"] == []
            answer = structured(await client.call_tool("ask", {
                "question": "What is the salary band of a shift lead?", "filters": {"document_ids": ["hr/salaries.md"]}}))
            assert answer["outcome"] == "not_found" and answer["citations"] == [] and answer["closest"] == []
            for widening in ({"tenant": "bluefen"}, {"roles": ["hr"]}, {"filters": {"tenant": "bluefen"}},
                             {"filters": {"roles": ["hr"]}}):
                error = refused(await client.call_tool("search", {"question": "salary band", **widening}))
                assert error["code"] == "invalid_input" and "not an argument" in error["message"]
            everything = structured(await client.call_tool("search", {"question": "salary band shift lead", "k": 100}))
            assert {h["document_id"] for h in everything["hits"]} <= {"handbook.md", "notice.md", "travel.md"}

            # arguments out of bounds: said what and where, never run
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("search", {"question": "leave " * 2000}, "question: String should have at most 2000 characters"),
                ("search", {"question": "leave", "k": 10_000}, "k: Input should be less than or equal to 100"),
                ("search", {"question": "leave", "filters": {"document_ids": [f"d{i}" for i in range(500)]}},
                 "filters.document_ids"),
                ("ask", {"question": "???"}, "no word"),
                ("read", {"document_id": "x/" * 2000}, "document_id"),
                ("read", {"document_id": "handbook.md", "chunk_id": "handbook.md#0#0"}, "not both"),
                ("read", {"chunk_id": "no-such-shape"}, "chunk_id"),
                ("citations", {"answer_id": "../../etc/passwd"}, "answer_id"),
                ("documents", {"cursor": "garbage"}, "cursor"),
            ]
            for name, arguments, said in cases:
                error = refused(await client.call_tool(name, arguments))
                assert error["code"] == "invalid_input" and said in error["message"], (name, error)
            with pytest.raises(MCPError, match="no tool 'delete'"):
                await client.call_tool("delete", {"document_id": "handbook.md"})

    anyio.run(scenario)


def test_a_document_deleted_between_two_calls_takes_its_answer_with_it(home):
    async def scenario() -> None:
        async with agent(home, mode="legacy") as client:  # the initialize handshake (the other tests: per-request envelopes)
            assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            question = {"question": "When does the car park on Quay Road close?"}
            answer = structured(await client.call_tool("ask", question))
            assert answer["outcome"] == "answered" and answer["citations"][0]["document_id"] == "notice.md"
            chunk_id = answer["citations"][0]["chunk_id"]

            report = await anyio.to_thread.run_sync(delete_document, open_local(home, existing=True), "northpier", "notice.md")
            assert not report.pending

            record = await client.call_tool("citations", {"answer_id": answer["answer_id"]})
            withdrawn = structured(record)  # kept only to say it was withdrawn: nothing of the deleted text
            assert withdrawn["source_deleted"] and withdrawn["answer"] is None and withdrawn["question"] == ""
            assert all(c["deleted"] and not c["quote"] and not c["chunk_id"] for c in withdrawn["citations"])
            assert "Withdrawn" in record.content[0].text and "Quay Road" not in record.content[0].text
            again = structured(await client.call_tool("ask", question))
            assert "notice.md" not in {c["document_id"] for c in again["citations"]} and "Dock Street" not in str(again)
            assert refused(await client.call_tool("read", {"chunk_id": chunk_id}))["code"] == "not_found"
            found = structured(await client.call_tool("search", {"question": "car park resurfacing Dock Street"}))
            assert "notice.md" not in {h["document_id"] for h in found["hits"]}

    anyio.run(scenario)
    report = audit(open_local(home, existing=True))  # what the calls recorded and the delete removed agree
    assert report.ok, report


def test_a_home_that_is_not_there_is_said_before_serving(capsys, tmp_path):
    assert main(["--home", str(tmp_path / "nowhere"), "mcp", "--tenant", "northpier", "--roles", "staff"]) == 2
    assert "there is no citewell home at" in capsys.readouterr().err and not (tmp_path / "nowhere").exists()
