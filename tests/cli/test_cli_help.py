"""The help a person reads: every command listed, every argument explained, one wording per flag."""

from __future__ import annotations

import argparse
import json

import pytest

from citewell.cli import COMMANDS, _parser, main


def subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_the_top_level_help_lists_every_command_in_plain_words(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "`" not in text
    listed = {line.split()[0] for line in text.split("commands:")[1].splitlines()[2:] if line[:4] == "    " and line[4] != " "}
    assert listed == set(COMMANDS) >= {"ask", "delete", "audit"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_argument_has_help(command):
    missing = [a.dest for a in subparsers()[command]._actions if not a.help]
    assert missing == []


def test_lanes_are_described_one_way():
    helps = {name: next(a.help for a in parser._actions if a.dest == "lanes")
             for name, parser in subparsers().items() if any(a.dest == "lanes" for a in parser._actions)}
    assert set(helps) == {"search", "eval"}
    shared = "comma-separated retrieval lanes: bm25 (words), vector (meaning), hybrid (both, fused)"
    assert all(text.startswith(shared) for text in helps.values())


@pytest.mark.parametrize(("lanes", "ranked"), [("hybrid", {"bm25", "vector"}), ("bm25", {"bm25"}),
                                                ("vector,bm25", {"bm25", "vector"})])
def test_search_takes_the_lane_names_eval_takes(capsys, tmp_path, lanes, ranked):
    (tmp_path / "codes.csv").write_text("code,meaning\nE1027,twistlock sensor disagrees\n")
    home = str(tmp_path / "home")
    assert main(["--home", home, "ingest", str(tmp_path / "codes.csv"), "--tenant", "t", "--allow-roles", "r", "--json"]) == 0
    capsys.readouterr()
    assert main(["--home", home, "search", "E1027 twistlock", "--tenant", "t", "--roles", "r", "--lanes", lanes, "--json"]) == 0
    hit = json.loads(capsys.readouterr().out)["hits"][0]
    assert {lane for lane, rank in hit["lanes"].items() if rank is not None} == ranked


def test_an_unknown_lane_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["search", "x", "--tenant", "t", "--roles", "r", "--lanes", "bm25,sparse"])
    assert exited.value.code == 2 and "--lanes takes any of bm25, vector, hybrid" in capsys.readouterr().err
