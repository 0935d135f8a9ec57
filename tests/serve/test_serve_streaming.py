"""``POST /query`` as server-sent events from a real ``citewell serve`` answering with a model
generator (the stand-in model server, streaming its reply): drafts, then the verified final
answer; a retraction before the final one when verification rejects the draft, and at once when
a source changes under it; the extractive
default's single final event; and a refused request keeping its status and JSON error."""

from __future__ import annotations

import json

import pytest

from benchmarks.model_server import MODEL_NAME, serve
from benchmarks.standin_model import Fault, StandInModel
from tests.serving import CLEAN_EXIT, WRITE, Served

LEAVE = b"# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n"
EVENTS = {"Accept": "text/event-stream"}


def events(reply) -> list[tuple[str, object]]:
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream"), reply.text
    found = []
    for block in reply.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


@pytest.fixture(params=[0.0, 1.0], ids=["faithful", "misquoting"])
def served_with_model(request, tmp_path):
    model = serve(StandInModel(fault_rate=request.param, faults=(Fault.FALSE_QUOTE,)))
    server = Served(tmp_path / "home", env={"CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": f"{model.url}/v1",
                                            "CITEWELL_OPENAI_MODEL": MODEL_NAME})
    try:
        writer = server.token("northpier", ["staff", WRITE], subject="writer")
        assert server.upload(writer, "leave.md", LEAVE, ["staff"])["status"] == "published"
        yield server, request.param
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()
        model.shutdown()


def test_drafts_then_the_verified_answer_or_a_retraction(served_with_model):
    server, faults = served_with_model
    anna = server.token("northpier", ["staff"], subject="anna")
    found = events(server.call("POST", "/query", anna, {"question": "How many days of annual leave do full-time staff get?"},
                               headers=EVENTS))
    kinds = [k for k, _ in found]
    drafts = "".join(d["text"] for k, d in found if k == "draft")
    final = found[-1][1]
    assert kinds[-1] == "final" and kinds.count("final") == 1 and kinds[0] == "draft", final["degraded"]
    assert "27 days" in final["answer"] and final["outcome"] == "answered" and final["citations"]
    if faults:  # the stand-in misquoted: the draft is withdrawn and the extractive answer stands
        assert kinds[-2] == "retraction" and found[-2][1]["reason"].startswith("draft rejected")
        assert drafts.strip() and drafts.strip() not in final["answer"]
    else:
        assert "retraction" not in kinds and "27 days" in drafts
    # the plain reply is unchanged for a client that asks for JSON
    plain = server.call("POST", "/query", anna, {"question": "How many days of annual leave do full-time staff get?"})
    assert plain.status_code == 200 and plain.json()["outcome"] == "answered"


def test_the_extractive_default_sends_its_final_event_at_once_and_a_refusal_keeps_its_status(tmp_path):
    server = Served(tmp_path / "home")
    try:
        writer = server.token("northpier", ["staff", WRITE], subject="writer")
        assert server.upload(writer, "leave.md", LEAVE, ["staff"])["status"] == "published"
        anna = server.token("northpier", ["staff"], subject="anna")
        found = events(server.call("POST", "/query", anna, {"question": "How many days of annual leave do full-time staff get?"},
                                   headers=EVENTS))
        assert [k for k, _ in found] == ["final"] and "27 days" in found[0][1]["answer"]
        missing = server.call("POST", "/query", anna, {"question": "and for part-time staff?", "conversation_id": "0" * 32},
                              headers=EVENTS)
        assert missing.status_code == 404 and set(missing.json()) == {"error"}
        bad = server.call("POST", "/query", anna, {"question": ""}, headers=EVENTS)
        assert bad.status_code == 422 and bad.json()["error"]["message"]
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()


@pytest.mark.parametrize("change", ["deleted", "replaced"])
def test_a_draft_whose_source_changes_while_it_streams_is_retracted_before_the_question_is_answered_again(tmp_path, change):
    """The model writes a word a second; after its first word the source is deleted (or replaced
    and published). The answer cannot be kept on it, so the question is asked again: the page
    must hear at once that the draft it shows is withdrawn, not keep it (or add the next to it)."""
    model = serve(StandInModel(fault_rate=0.0))
    model.token_seconds = 1.0
    server = Served(tmp_path / "home", env={"CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": f"{model.url}/v1",
                                            "CITEWELL_OPENAI_MODEL": MODEL_NAME})
    try:
        writer = server.token("northpier", ["staff", WRITE], subject="writer")
        assert server.upload(writer, "leave.md", LEAVE, ["staff"])["status"] == "published"
        anna = server.token("northpier", ["staff"], subject="anna")
        found: list[tuple[str, object]] = []
        with server.client.stream("POST", "/query", json={"question": "How many days of annual leave do full-time staff get?"},
                                  headers={**EVENTS, "Authorization": f"Bearer {anna}"}) as reply:
            assert reply.status_code == 200
            kind = None
            for line in reply.iter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    found.append((kind, json.loads(line.removeprefix("data: "))))
                    if [k for k, _ in found] == ["draft"]:  # the page shows a draft: its source changes now
                        if change == "deleted":
                            assert server.call("DELETE", "/documents/leave.md", writer).status_code == 200
                        else:
                            assert server.upload(writer, "leave.md", LEAVE.replace(b"27", b"30"), ["staff"])["status"] == "published"
                        model.token_seconds = 0.0
        kinds = [k for k, _ in found]
        assert kinds[0] == "draft" and kinds[-1] == "final" and "retraction" in kinds, kinds
        withdrawn = kinds.index("retraction")
        assert found[withdrawn][1] == {"reason": "a source changed while the draft was written"}
        final = found[-1][1]
        if change == "deleted":  # asked again on what is there now: nothing
            assert kinds[withdrawn + 1:] == ["final"] and final["outcome"] != "answered" and not final["citations"]
        else:  # asked again on the new text: its own draft, then the answer from it
            again = "".join(d["text"] for k, d in found[withdrawn + 1:] if k == "draft")
            assert "30 days" in again and "30 days" in final["answer"] and final["outcome"] == "answered"
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()
        model.shutdown()
