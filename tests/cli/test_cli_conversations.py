"""``citewell ask --conversation`` and ``citewell feedback`` on a real home: a follow-up answered
in the conversation the first ask started, an unknown or malformed id refused clearly, and
unhelpful answers listed and exported as answer-set lines that ``eval-answers`` loads."""

from __future__ import annotations

import json
from pathlib import Path

from citewell.cli import main
from citewell.conversations import give_feedback
from citewell.deployments import open_local
from citewell.evaluation.answers import load_cases
from citewell.models.identity import Identity

ALLOWANCES = "# Allowances\n\nThe meal allowance in Manchester is 18 pounds per day.\n\nThe meal allowance in Leeds is 16 pounds per day.\n"


def run(capsys, *argv: str) -> tuple[int, dict]:
    try:
        code = main(list(argv))
    except SystemExit as usage:  # argparse refuses a malformed option before the command runs
        code = int(usage.code or 0)
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_a_follow_up_in_a_conversation_and_its_feedback_exported(capsys, tmp_path: Path):
    home = tmp_path / "home"
    (tmp_path / "allowances.md").write_text(ALLOWANCES)
    code, _ = run(capsys, "--home", str(home), "ingest", str(tmp_path / "allowances.md"), "--tenant", "northpier",
                  "--allow-roles", "staff", "--json")
    assert code == 0
    asking = ["--home", str(home), "ask", "--tenant", "northpier", "--roles", "staff", "--json"]
    code, first = run(capsys, *asking, "What is the meal allowance in Manchester?")
    assert code == 0 and "18 pounds" in first["answer"] and len(first["conversation_id"]) == 32
    code, follow = run(capsys, *asking, "--conversation", first["conversation_id"], "what about Leeds?")
    assert code == 0 and follow["question"] == "What is the meal allowance in Leeds?" and "16 pounds" in follow["answer"]
    code, missing = run(capsys, *asking, "--conversation", "0" * 32, "what about Leeds?")
    assert code == 2 and missing["error"]["code"] == "not_found"
    code, bad = run(capsys, *asking, "--conversation", "../x", "what about Leeds?")
    assert code == 2 and "32 hex digits" in bad["error"]["message"]
    # another caller's roles: not theirs to follow up
    code, other = run(capsys, "--home", str(home), "ask", "--tenant", "northpier", "--roles", "staff,hr", "--json",
                      "--conversation", first["conversation_id"], "what about Leeds?")
    assert code == 2 and other["error"]["code"] == "not_found"

    give_feedback(open_local(home), Identity(tenant="northpier", roles=frozenset({"staff"})), follow["answer_id"], False,
                  "I meant the evening rate")
    exported = tmp_path / "unhelpful.jsonl"
    code, listed = run(capsys, "--home", str(home), "feedback", "--json", "--export", str(exported))
    assert code == 0 and [i["comment"] for i in listed["unhelpful"]] == ["I meant the evening rate"]
    assert listed["unhelpful"][0]["question"] == "What is the meal allowance in Leeds?"
    assert listed["exported"]["questions"] == 1
    (case,) = load_cases(exported)
    assert (case.question, case.tenant, case.roles, case.expected_documents) == (
        "What is the meal allowance in Leeds?", "northpier", ["staff"], ["allowances.md"])
    code, later = run(capsys, "--home", str(home), "feedback", "--json", "--since", "2999-01-01")
    assert code == 0 and later["unhelpful"] == []
    code, wrong = run(capsys, "--home", str(home), "feedback", "--json", "--since", "yesterday")
    assert code == 2 and "ISO date" in wrong["error"]["message"]


def test_feedback_lists_one_tenants_with_tenant(capsys, tmp_path: Path):
    home = tmp_path / "home"
    (tmp_path / "allowances.md").write_text(ALLOWANCES)
    given = {}
    for tenant in ("northpier", "bluefen"):
        code, _ = run(capsys, "--home", str(home), "ingest", str(tmp_path / "allowances.md"), "--tenant", tenant,
                      "--allow-roles", "staff", "--json")
        assert code == 0
        code, asked = run(capsys, "--home", str(home), "ask", "--tenant", tenant, "--roles", "staff", "--json",
                          "What is the meal allowance in Leeds?")
        assert code == 0
        give_feedback(open_local(home), Identity(tenant=tenant, roles=frozenset({"staff"})), asked["answer_id"], False, tenant)
        given[tenant] = asked["answer_id"]
    code, one = run(capsys, "--home", str(home), "feedback", "--tenant", "bluefen", "--json")
    assert code == 0 and [(i["tenant"], i["answer_id"], i["comment"]) for i in one["unhelpful"]] == [
        ("bluefen", given["bluefen"], "bluefen")]
    code, every = run(capsys, "--home", str(home), "feedback", "--json")
    assert code == 0 and sorted(i["tenant"] for i in every["unhelpful"]) == ["bluefen", "northpier"]
    code, bad = run(capsys, "--home", str(home), "feedback", "--tenant", "../x", "--json")
    assert code == 2 and "tenant must be" in bad["error"]["message"]
