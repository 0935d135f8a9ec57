"""Options a person types before or after the command: ``--home`` and ``--json`` are taken in
either place by every command, and when both places name a home, the one after the command wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citewell.cli import COMMANDS, main
from tests.serving import WRITE, Served

LEAVE = "# Staff handbook\n\n## Annual leave\n\nFull-time staff receive 27 days of paid annual leave per year.\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def home(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A home with one document, ingested with ``--home`` after the command."""
    (tmp_path / "handbook.md").write_text(LEAVE, encoding="utf-8")
    home = tmp_path / "home"
    ingested = run(capsys, "ingest", str(tmp_path / "handbook.md"), "--tenant", "northpier", "--allow-roles", "staff",
                   "--home", str(home), "--json")
    assert [d["status"] for d in ingested["documents"]] == ["published"]
    return home


def test_home_and_json_work_before_and_after_the_command(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    query = ["search", "annual leave", "--tenant", "northpier", "--roles", "staff"]
    before = run(capsys, "--home", str(home), "--json", *query)
    after = run(capsys, *query, "--json", "--home", str(home))
    assert before == after and before["hits"][0]["document_id"] == "handbook.md"
    listed = [run(capsys, "--home", str(home), "docs", "--tenant", "northpier", "--json"),
              run(capsys, "docs", "--tenant", "northpier", "--home", str(home), "--json")]
    assert listed[0] == listed[1] and [d["document_id"] for d in listed[0]["documents"]] == ["handbook.md"]


def test_the_home_after_the_command_wins(capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    listed = run(capsys, "--home", str(elsewhere), "docs", "--tenant", "northpier", "--home", str(home), "--json")
    assert [d["document_id"] for d in listed["documents"]] == ["handbook.md"]
    assert not elsewhere.exists(), "the home before the command was not opened"
    assert main(["--home", str(home), "docs", "--tenant", "northpier", "--home", str(elsewhere), "--json"]) == 2
    assert "there is no citewell home at" in capsys.readouterr().err and not elsewhere.exists()


def test_every_command_takes_the_options_after_it(capsys: pytest.CaptureFixture[str]) -> None:
    for command in COMMANDS:
        with pytest.raises(SystemExit) as exited:
            main([command, "--home", "somewhere", "--json", "--help"])
        assert exited.value.code == 0
        assert "--home DIR" in capsys.readouterr().out, command


def test_serve_takes_home_after_the_command(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    token = run(capsys, "token", "--tenant", "northpier", "--roles", "staff", "--home", str(home), "--json")["token"]
    served = Served(home, home_after=True)
    try:
        reply = served.call("POST", "/search", token, {"question": "annual leave", "k": 3})
        assert reply.status_code == 200, reply.text
        assert [hit["document_id"] for hit in reply.json()["hits"]][:1] == ["handbook.md"]
        writer = served.token("northpier", ["staff", WRITE])
        assert served.call("GET", "/documents", writer).json()["documents"][0]["document_id"] == "handbook.md"
    finally:
        served.stop()
