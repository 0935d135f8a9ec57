"""``make demo`` run twice on the same folder: the second run rebuilds the demo in place, and what
the user added to its home while following the README's tour (a document, a conversation, its
feedback) is still there. The Makefile runs ``citewell.demo``, which the test runs itself."""

from __future__ import annotations

import json
from pathlib import Path

from citewell.cli import main
from citewell.conversations import give_feedback, thread
from citewell.demo import run
from citewell.models.identity import Identity
from citewell.samples.writer import write_samples

ROOT = Path(__file__).resolve().parents[2]
STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))  # the CLI operator's, as `citewell ask` makes it
PARKING = "# Parking\n\nVisitors park in lot A, staff in lot C.\n"


def cli(capsys, home: Path, *argv: str) -> dict:
    assert main(["--home", str(home), *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_samples_are_the_same_bytes_each_time_they_are_written(tmp_path):
    first, second = write_samples(tmp_path / "a"), write_samples(tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_a_second_demo_keeps_what_the_user_added(capsys, tmp_path):
    from citewell.deployments import open_local

    demo, home = tmp_path / ".demo", tmp_path / ".demo" / "home"
    assert run(demo) == 0
    capsys.readouterr()
    (tmp_path / "parking.md").write_text(PARKING)
    cli(capsys, home, "ingest", str(tmp_path / "parking.md"), "--tenant", "northpier", "--allow-roles", "staff")
    asked = cli(capsys, home, "ask", "Where do visitors park?", "--tenant", "northpier", "--roles", "staff")
    assert "lot A" in asked["answer"]
    give_feedback(open_local(home, existing=True), STAFF, asked["answer_id"], False, "which lot for vans?")

    assert run(demo) == 0
    said = capsys.readouterr().out
    hits = cli(capsys, home, "search", "Where do visitors park?", "--tenant", "northpier", "--roles", "staff")["hits"]
    assert hits[0]["document_id"] == "parking.md"
    kept = thread(open_local(home, existing=True), STAFF, asked["conversation_id"])
    assert [t.answer_id for t in kept.turns] == [asked["answer_id"]] and not kept.turns[0].withdrawn
    listed = cli(capsys, home, "feedback")["unhelpful"]
    assert [(f["answer_id"], f["comment"]) for f in listed] == [(asked["answer_id"], "which lot for vans?")]
    assert "unchanged  staff/handbook.md" in said and "audit: ok" in said  # the samples were not made anew


def test_make_demo_runs_the_module_and_removes_nothing():
    recipe = ROOT.joinpath("Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "python -m citewell.demo $(DEMO)" in recipe and "rm " not in recipe
