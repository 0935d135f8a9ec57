"""The CLI contract: JSON shapes, exit codes, identity flags, evaluation on a BEIR folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from citewell.cli import main
from tests import files


def run(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "policies").mkdir(parents=True)
    (folder / "policies" / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    (folder / "codes.csv").write_text("code,meaning\nE1027,twistlock sensor disagrees\n")
    (folder / "travel.pdf").write_bytes(files.pdf_bytes([("Travel", ["Hotels up to 140 euros per night."])]))
    (folder / "broken.pdf").write_bytes(b"this is not a pdf")
    (folder / ".hidden.md").write_text("# Hidden\n\nnever ingested\n")
    return folder


def test_ingest_search_docs_round_trip(capsys, tmp_path, corpus):
    home = str(tmp_path / "home")
    code, out = run(capsys, "--home", home, "ingest", str(corpus), "--tenant", "northpier", "--allow-roles", "staff,support", "--json")
    assert code == 1  # one file failed, after the others were processed
    by_id = {d["document_id"]: d for d in out["documents"]}
    assert set(by_id) == {"docs/policies/leave.md", "docs/codes.csv", "docs/travel.pdf", "docs/broken.pdf"}
    assert by_id["docs/broken.pdf"]["status"] == "failed" and by_id["docs/broken.pdf"]["error"]["code"] == "type_mismatch"
    assert by_id["docs/policies/leave.md"]["status"] == "published" and len(by_id["docs/policies/leave.md"]["revision"]) == 64

    code, out = run(capsys, "--home", home, "search", "E1027", "--tenant", "northpier", "--roles", "support", "--json")
    assert code == 0 and out["degraded"] == []
    top = out["hits"][0]
    assert top["document_id"] == "docs/codes.csv" and "E1027" in top["text"]
    assert set(top) == {"rank", "chunk_id", "document_id", "revision", "title", "section_path", "text", "score", "lanes",
                        "similarity", "weak", "rerank", "locale", "section_id"}
    assert top["lanes"]["bm25"] == 1

    code, out = run(capsys, "--home", home, "search", "annual leave", "--tenant", "northpier", "--roles", "", "--json")
    assert code == 0 and out["hits"] == []
    code, out = run(capsys, "--home", home, "search", "annual leave", "--tenant", "bluefen", "--roles", "staff", "--json")
    assert out["hits"] == []

    code, out = run(capsys, "--home", home, "docs", "--tenant", "northpier", "--json")
    statuses = {d["document_id"]: (d["status"], d["chunk_count"]) for d in out["documents"]}
    assert statuses["docs/broken.pdf"] == ("failed", 0) and statuses["docs/travel.pdf"][0] == "published"

    code, out = run(capsys, "--home", home, "ingest", str(corpus / "policies" / "leave.md"), "--doc-id", "docs/policies/leave.md",
                    "--tenant", "northpier", "--allow-roles", "staff,support", "--json")
    assert code == 0 and out["documents"][0]["status"] == "unchanged"


def test_human_output_and_errors(capsys, tmp_path, corpus):
    home = str(tmp_path / "home")
    assert main(["--home", home, "ingest", str(corpus / "codes.csv"), "--tenant", "northpier", "--allow-roles", "support"]) == 0
    assert "codes.csv" in capsys.readouterr().out
    assert main(["--home", home, "search", "E1027", "--tenant", "northpier", "--roles", "support"]) == 0
    assert "E1027" in capsys.readouterr().out
    assert main(["--home", home, "ingest", str(corpus), "--doc-id", "x", "--tenant", "t", "--allow-roles", "r"]) == 2
    assert "exactly one file" in capsys.readouterr().err
    assert main(["--home", home, "ingest", str(tmp_path / "missing"), str(corpus / "codes.csv"), "--tenant", "northpier",
                 "--allow-roles", "support", "--json"]) == 1  # the missing path is a failed item; the rest goes on
    documents = json.loads(capsys.readouterr().out)["documents"]
    assert [(d["status"], (d["error"] or {}).get("code")) for d in documents] == [("failed", "not_found"), ("unchanged", None)]
    with pytest.raises(SystemExit) as exited:
        main(["--home", home, "ingest", str(corpus / "codes.csv"), "--tenant", "a/b", "--allow-roles", "r"])
    assert exited.value.code == 2 and "tenant must be 1 to 64 letters" in capsys.readouterr().err


def test_eval_on_a_beir_folder(capsys, tmp_path):
    data = tmp_path / "tiny"
    (data / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Crane safety", "text": "Storm pins secure a crane when wind exceeds the limit."},
        {"_id": "d2", "title": "Leave", "text": "Staff receive 27 days of annual leave."},
        {"_id": "d3", "title": "Salaries", "text": "Salary bands are reviewed each spring."},
    ]
    (data / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in corpus))
    (data / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"_id": "q1", "text": "what secures a crane in high wind"}, {"_id": "q2", "text": "how many days of annual leave"},
        {"_id": "q9", "text": "a query without judgements is skipped"},
    ]))
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    code, out = run(capsys, "--home", str(tmp_path / "home"), "eval", str(data), "--json")
    assert code == 0 and out["ingest"]["published"] == 3
    lanes = {lane["lane"]: lane for lane in out["lanes"]}
    assert set(lanes) == {"bm25", "vector", "hybrid"}
    for lane in lanes.values():
        assert lane["queries"] == 2 and lane["ndcg_at_10"] == 1.0 and lane["mrr_at_10"] == 1.0
    code, again = run(capsys, "--home", str(tmp_path / "home"), "eval", str(data), "--lanes", "bm25", "--json")
    assert again["ingest"]["unchanged"] == 3 and [lane["lane"] for lane in again["lanes"]] == ["bm25"]


@pytest.mark.parametrize("extra", [["--k", "0"], ["--k", "-3"], ["--k", "²"], ["--k", "101"]])
def test_usage_errors_are_errors_and_json_when_asked(capsys, tmp_path, extra):
    with pytest.raises(SystemExit) as exited:
        main(["--home", str(tmp_path / "home"), "search", "annual leave", "--tenant", "northpier", "--roles", "staff",
              "--json", *extra])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["code"] == "usage" and "--k takes a whole number from 1 to 100" in err


def test_an_empty_question_is_a_usage_error(capsys, tmp_path):
    for command in ("search", "ask"):
        with pytest.raises(SystemExit) as exited:
            main(["--home", str(tmp_path / "home"), command, "  ", "--tenant", "northpier", "--roles", "staff"])
        assert exited.value.code == 2 and "the question is empty" in capsys.readouterr().err
        for wordless in ("???", "\x00", " - ! "):
            with pytest.raises(SystemExit) as exited:
                main(["--home", str(tmp_path / "home"), command, wordless, "--tenant", "northpier", "--roles", "staff"])
            assert exited.value.code == 2 and "no word" in capsys.readouterr().err


@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """The folder and everything in it made unwritable: by mode bits for a user, by the immutable
    attribute for root (whom mode bits do not stop)."""
    paths = [folder, *folder.rglob("*")]
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in paths}
        for path in paths:
            path.chmod(modes[path] & ~0o222)
        try:
            yield
        finally:
            for path in paths:
                path.chmod(modes[path])
        return
    if subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True).returncode != 0:
        pytest.skip("this file system does not let root make files immutable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)


def test_a_home_the_user_cannot_write_is_refused_with_what_to_do_and_no_traceback(tmp_path: Path, corpus: Path) -> None:
    home = tmp_path / "home"
    cli = [sys.executable, "-m", "citewell", "--home", str(home)]
    ingested = subprocess.run([*cli, "ingest", str(corpus / "codes.csv"), "--tenant", "northpier", "--allow-roles", "support"],
                              capture_output=True, text=True)
    assert ingested.returncode == 0, ingested.stderr
    with unwritable(home):
        for command in (["search", "E1027", "--tenant", "northpier", "--roles", "support"],
                        ["ingest", str(corpus / "policies"), "--tenant", "northpier", "--allow-roles", "support"]):
            refused = subprocess.run([*cli, *command], capture_output=True, text=True)
            assert refused.returncode == 2, refused.stderr
            assert "cannot write to" in refused.stderr and "run as the user who owns it" in refused.stderr
            assert "Traceback" not in refused.stderr
    found = subprocess.run([*cli, "search", "E1027", "--tenant", "northpier", "--roles", "support"], capture_output=True, text=True)
    assert found.returncode == 0 and "E1027" in found.stdout  # nothing was lost


def test_reading_a_home_nothing_was_ingested_into_is_an_error_that_creates_nothing(tmp_path: Path, capsys) -> None:
    """A mistyped --home answered "no documents" and left databases behind."""
    absent = tmp_path / "typo" / "home"
    for argv in (["docs", "--tenant", "northpier"], ["search", "leave", "--tenant", "northpier", "--roles", "staff"],
                 ["ask", "leave?", "--tenant", "northpier", "--roles", "staff"], ["audit"], ["delete", "a.md", "--tenant", "northpier"]):
        assert main(["--home", str(absent), *argv]) == 2, argv
        assert "there is no citewell home at" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()
    with pytest.raises(SystemExit) as exited:
        main(["--home", "", "docs", "--tenant", "northpier"])
    assert exited.value.code == 2 and "--home is empty" in capsys.readouterr().err
    objects = tmp_path / "odd"
    objects.mkdir()
    (objects / "objects").write_text("a file where the objects folder goes")
    assert main(["--home", str(objects), "ingest", str(absent), "--tenant", "northpier", "--allow-roles", "staff"]) == 2
    assert "is a file, not the home's objects folder" in capsys.readouterr().err


def test_a_home_that_is_a_file_is_refused_clearly(tmp_path: Path, capsys) -> None:
    note = tmp_path / "notes.txt"
    note.write_text("not a home")
    for home in (note, note / "inside"):
        assert main(["--home", str(home), "search", "leave", "--tenant", "northpier", "--roles", "staff"]) == 2
        assert "is not a folder" in capsys.readouterr().err
    assert note.read_text() == "not a home"


def test_a_damaged_database_or_a_folder_in_its_place_is_named_as_such_not_as_a_permission_problem(
        tmp_path: Path, capsys) -> None:
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    noise = bytes(range(256)) * 64
    (damaged / "index.db").write_bytes(noise)
    folder = tmp_path / "folder"
    (folder / "index.db").mkdir(parents=True)
    for home in (damaged, folder):
        (home / "metadata.db").touch()  # a home, as an ingest left it, but for the index
    for home, said in ((damaged, "is not a SQLite database"), (folder, "is a folder, not a database file")):
        assert main(["--home", str(home), "search", "leave", "--tenant", "northpier", "--roles", "staff"]) == 2
        err = capsys.readouterr().err
        assert said in err and "run as the user who owns it" not in err, err
    assert (damaged / "index.db").read_bytes() == noise  # nothing was written over it
