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


def test_a_conversation_is_viewed_a_page_at_a_time_and_a_cursor_reaches_only_its_own(tmp_path):
    """``GET /conversations/{id}`` as the web page and any client call it: the newest ``limit``
    turns and ``next``, the cursor back to the earlier ones; a cursor or limit it did not return
    is a 400 that says so, and another caller's token gets a 404 with the id and the cursor."""
    server = Served(tmp_path / "home")
    try:
        writer = server.token("northpier", ["staff", WRITE], subject="writer")
        assert server.upload(writer, "allowances.md", ALLOWANCES, ["staff"])["status"] == "published"
        anna = server.token("northpier", ["staff"], subject="anna")
        first = server.call("POST", "/query", anna, {"question": "What is the Quillfeather meal allowance in Manchester?"}).json()
        cid = first["conversation_id"]
        for question in ("what about Leeds?", "and in Manchester?"):
            assert server.call("POST", "/query", anna, {"question": question, "conversation_id": cid}).status_code == 200

        newest = server.call("GET", f"/conversations/{cid}?limit=2", anna).json()
        assert [t["seq"] for t in newest["turns"]] == [2, 3] and newest["turn_count"] == 3 and newest["next"]
        earlier = server.call("GET", f"/conversations/{cid}", anna, params={"limit": "2", "cursor": newest["next"]}).json()
        assert [t["seq"] for t in earlier["turns"]] == [1] and earlier["next"] is None
        assert "18 pounds" in earlier["turns"][0]["answer"]
        whole = server.call("GET", f"/conversations/{cid}", anna).json()  # the default page holds all three
        assert [t["seq"] for t in whole["turns"]] == [1, 2, 3] and whole["next"] is None

        for query in ({"cursor": newest["next"][:-3]}, {"cursor": "e30"}, {"limit": "0"}, {"limit": "101"}, {"limit": "ten"}):
            assert refused(server.call("GET", f"/conversations/{cid}", anna, params=query), 400)
        other = server.call("POST", "/query", anna, {"question": "What is the Quillfeather meal allowance in Leeds?"}).json()
        assert "another conversation" in refused(
            server.call("GET", f"/conversations/{other['conversation_id']}", anna, params={"cursor": newest["next"]}), 400)
        for stranger in (server.token("northpier", ["staff"], subject="ben"), server.token("southgate", ["staff"], subject="anna")):
            refused(server.call("GET", f"/conversations/{cid}", stranger), 404)
            assert "18 pounds" not in refused(server.call("GET", f"/conversations/{cid}", stranger,
                                                          params={"cursor": newest["next"]}), 404)
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()
