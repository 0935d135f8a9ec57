"""Conversations and feedback through a real ``citewell serve`` process: a follow-up rewritten and
answered, a thread and history only its owner's token reaches, feedback with the one error
shape for a bad body, both kept across ``kill -9``, and a delete of the cited document leaving
none of its words in any file of the home (conversations and feedback included)."""

from __future__ import annotations

import signal

from tests.residue import file_residue
from tests.serving import CLEAN_EXIT, WRITE, Served

ALLOWANCES = (b"# Quillfeather travel allowances\n\n"
              b"The Quillfeather meal allowance in Manchester is 18 pounds per day.\n\n"
              b"The Quillfeather meal allowance in Leeds is 16 pounds per day.\n")


def refused(reply, status: int) -> str:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == {"error"} and body["error"]["message"], body
    return body["error"]["message"]


def test_conversations_and_feedback_survive_kill_9_and_leave_nothing_after_a_delete(tmp_path):
    home = tmp_path / "home"
    server = Served(home)
    try:
        writer = server.token("northpier", ["staff", WRITE], subject="writer")
        assert server.upload(writer, "allowances.md", ALLOWANCES, ["staff"])["status"] == "published"
        anna = server.token("northpier", ["staff"], subject="anna")
        ben = server.token("northpier", ["staff"], subject="ben")

        first = server.call("POST", "/query", anna, {"question": "What is the Quillfeather meal allowance in Manchester?"})
        assert first.status_code == 200, first.text
        first = first.json()
        assert first["outcome"] == "answered" and "18 pounds" in first["answer"] and len(first["conversation_id"]) == 32
        follow = server.call("POST", "/query", anna, {"question": "what about Leeds?", "conversation_id": first["conversation_id"]})
        follow = follow.json()
        assert follow["question"] == "What is the Quillfeather meal allowance in Leeds?" and "16 pounds" in follow["answer"]
        assert follow["conversation_id"] == first["conversation_id"]

        # another caller: the same tenant and roles, another subject
        refused(server.call("GET", f"/conversations/{first['conversation_id']}", ben), 404)
        refused(server.call("POST", "/query", ben, {"question": "and Leeds?", "conversation_id": first["conversation_id"]}), 404)
        refused(server.call("POST", f"/answers/{first['answer_id']}/feedback", ben, {"helpful": False}), 404)
        assert server.call("GET", "/conversations", ben).json() == {"history": []}
        # bad bodies and ids: a 4xx that says what is wrong
        assert "helpful" in refused(server.call("POST", f"/answers/{first['answer_id']}/feedback", anna, {"comment": "x"}), 422)
        refused(server.call("POST", f"/answers/{first['answer_id']}/feedback", anna, {"helpful": True, "comment": "x" * 2001}), 422)
        refused(server.call("POST", "/answers/not-an-id/feedback", anna, {"helpful": True}), 404)
        refused(server.call("POST", "/query", anna, {"question": "and Leeds?", "conversation_id": "../../etc"}), 422)
        refused(server.call("GET", "/conversations/" + "0" * 32, anna), 404)

        noted = server.call("POST", f"/answers/{first['answer_id']}/feedback", anna,
                            {"helpful": False, "comment": "Quillfeather evening rate missing"})
        assert noted.status_code == 200 and noted.json()["feedback"]["helpful"] is False
        assert server.stop(signal.SIGKILL) == -signal.SIGKILL

        server = Served(home)
        anna = server.token("northpier", ["staff"], subject="anna")
        thread = server.call("GET", f"/conversations/{first['conversation_id']}", anna).json()
        assert [t["asked"] for t in thread["turns"]] == ["What is the Quillfeather meal allowance in Manchester?", "what about Leeds?"]
        assert thread["turns"][0]["feedback"]["comment"] == "Quillfeather evening rate missing"
        assert [h["question"] for h in server.call("GET", "/conversations", anna).json()["history"]] == [
            "what about Leeds?", "What is the Quillfeather meal allowance in Manchester?"]

        writer = server.token("northpier", ["staff", WRITE], subject="writer")
        deleted = server.call("DELETE", "/documents/allowances.md", writer).json()
        assert deleted["removed"]["conversations"] == 1 and deleted["pending"] == []
        thread = server.call("GET", f"/conversations/{first['conversation_id']}", anna).json()
        assert all(t["withdrawn"] and not t["asked"] and t["feedback"] is None for t in thread["turns"])
        assert server.call("GET", "/conversations", anna).json() == {"history": []}
        assert file_residue(home, {"quillfeather", "manchester", "leeds"}) == []
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()
