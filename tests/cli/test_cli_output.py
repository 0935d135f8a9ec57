"""What people read: at 80 columns and through a pipe, ids whole, text under its indent, sources numbered 1, 2, 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from citewell.answers.verify import verify
from citewell.models.answers import Draft
from citewell.models.evidence import EvidenceItem, EvidenceSpan
from citewell.render import snippet, where

LONG = "crane-operations-handbook-for-the-night-shift-at-the-northern-terminal.md"


def cli(home: Path, *argv: str) -> str:
    """The real command through a pipe (not a terminal), as `citewell ... | less` would run it, on
    the code under test (this checkout's, not whichever one the interpreter installed)."""
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "80", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "citewell", "--home", str(home), *argv],
                          capture_output=True, text=True, check=False, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("render")
    folder = root / "operations"
    folder.mkdir()
    (folder / LONG).write_text(
        "# Crane Operations Handbook\n\n## Storm pins\n\n"
        "When the wind exceeds the operating limit the operator parks the crane at the storm position, lowers "
        "the spreader to the ground and engages both storm pins before leaving the cabin for the shelter.\n"
    )
    (folder / "scan.pdf").write_bytes(b"this is text pretending to be a PDF file for the failing row")
    cli(root / "home", "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "operators")
    return root / "home"


def assert_fits(output: str, *ids: str) -> None:
    """Every line fits 80 columns, except one that holds an id longer than that, whole; no trailing spaces."""
    for line in output.splitlines():
        assert line == line.rstrip(), repr(line)
        assert len(line) <= 80 or any(i in line for i in ids), line


def test_ingest_and_docs_show_whole_ids_at_80_columns(home, tmp_path):
    document_id = f"operations/{LONG}"
    listing = cli(home, "docs", "--tenant", "northpier")
    assert f"{document_id}  published" in listing.splitlines()
    assert "operations/scan.pdf  failed" in listing and "…" not in listing
    assert_fits(listing, document_id)
    again = cli(home, "ingest", str(home.parent / "operations"), "--tenant", "northpier", "--allow-roles", "operators")
    assert any(line.startswith("unchanged") and line.split()[1] == document_id for line in again.splitlines())
    failed = again.splitlines()[again.splitlines().index("failed     operations/scan.pdf") + 1]
    assert failed.startswith("           type_mismatch:")  # the reason under its row, not at column 0
    assert_fits(again, document_id)


def test_search_text_wraps_under_its_indent_and_the_heading_is_not_in_the_body(home):
    out = cli(home, "search", "what does the operator do when the wind is too strong", "--tenant", "northpier",
              "--roles", "operators", "--k", "1")
    lines = out.splitlines()
    assert lines[0] == "1. Crane Operations Handbook > Storm pins"
    assert lines[1].startswith(f"   operations/{LONG}#")  # the chunk id whole, on its own line
    body = lines[2:]
    assert len(body) >= 2 and all(line.startswith("   ") and line[3] != " " for line in body)
    assert body[0].strip().startswith("When the wind exceeds")  # not "Storm pins When the wind ..."
    assert_fits(out, LONG)


def test_answer_sources_say_the_title_once(home):
    out = cli(home, "ask", "What does the operator engage before leaving the cabin?", "--tenant", "northpier",
              "--roles", "operators")
    assert "Crane Operations Handbook > Crane Operations Handbook" not in out
    assert_fits(out, LONG)


def test_where_and_snippet():
    assert where("Handbook", ["Handbook", "Leave", "Carry-over"]) == "Handbook > Leave > Carry-over"
    assert where("Handbook", []) == "Handbook"
    assert snippet("Carry-over\n\nUp to 5 days\nmay be carried.", ["Handbook", "Leave", "Carry-over"]) == \
        "Up to 5 days may be carried."
    assert snippet("word " * 100, [], limit=20).endswith("…") and len(snippet("word " * 100, [], limit=20)) <= 20


def _item(ref: str, text: str) -> EvidenceItem:
    chunk = f"handbook.md#{ref[1:]}#0"
    return EvidenceItem(ref=ref, document_id="handbook.md", revision="r1", title="Handbook", section_path=["Leave"],
                        text=text, spans=[EvidenceSpan(chunk_id=chunk, section_path=["Leave"], start=0, end=len(text))],
                        rank=int(ref[1:]))


EVIDENCE = [_item("S1", "Staff receive 27 days of annual leave."), _item("S2", "Sick leave needs a note."),
            _item("S3", "Carried days expire on 31 March.")]


def test_an_answer_citing_only_its_third_source_shows_s1_in_text_and_citations():
    verdict = verify(Draft(text="Carried days expire on 31 March [S3].", refused=False), EVIDENCE)
    assert verdict.answer == "Carried days expire on 31 March [S1]."
    assert [(c.ref, c.chunk_id) for c in verdict.citations] == [("S1", "handbook.md#3#0")]


def test_sources_are_numbered_as_the_reader_meets_them():
    draft = Draft(text="Carried days expire on 31 March [S3]. Staff receive 27 days [S1]. Again [S3].", refused=False)
    verdict = verify(draft, EVIDENCE)
    assert verdict.answer == "Carried days expire on 31 March [S1]. Staff receive 27 days [S2]. Again [S1]."
    assert [(c.ref, c.chunk_id) for c in verdict.citations] == [("S1", "handbook.md#3#0"), ("S2", "handbook.md#1#0")]


def test_the_cli_answer_and_its_sources_agree(home):
    answer = json.loads(cli(home, "ask", "What does the operator engage before leaving the cabin?", "--tenant",
                            "northpier", "--roles", "operators", "--json"))
    refs = [c["ref"] for c in answer["citations"]]
    assert refs == [f"S{n}" for n in range(1, len(refs) + 1)]
    if answer["answer"]:
        assert all(f"[{ref}]" in answer["answer"] for ref in refs)


def test_a_removed_unique_word_comes_back_only_as_a_weak_match(tmp_path):
    """After a revision replaces a unique word, nearest neighbours still bring the document back
    at rank 1; the hit says it is weak, in JSON and in the CLI, so no one takes it for the old text."""
    home, folder = tmp_path / "home", tmp_path / "parts"
    folder.mkdir()
    (folder / "gaskets.md").write_text("# Gaskets\n\nThe zorblatt gasket seals the hydraulic pump of crane 4.\n")
    cli(home, "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff")
    before = json.loads(cli(home, "search", "zorblatt", "--tenant", "northpier", "--roles", "staff", "--json"))["hits"][0]
    assert before["lanes"]["bm25"] == 1 and before["weak"] is False
    (folder / "gaskets.md").write_text("# Gaskets\n\nThe nitrile gasket seals the hydraulic pump of crane 4.\n")
    cli(home, "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff")
    after = json.loads(cli(home, "search", "zorblatt", "--tenant", "northpier", "--roles", "staff", "--json"))["hits"]
    assert after[0]["document_id"] == "parts/gaskets.md" and after[0]["lanes"] == {"bm25": None, "vector": 1, "expansion": None}
    assert after[0]["weak"] is True and after[0]["similarity"] < 0.43
    shown = cli(home, "search", "zorblatt", "--tenant", "northpier", "--roles", "staff")
    assert shown.startswith("No passage holds these words") and "weak: found by meaning only" in shown
    meant = json.loads(cli(home, "search", "which gasket seals the pump of crane 4", "--tenant", "northpier",
                           "--roles", "staff", "--json"))["hits"][0]
    assert meant["weak"] is False and meant["similarity"] > 0.43


def test_citations_say_the_pages_and_rows_to_find_them_by_hand():
    from citewell.render import place

    assert place({"pages": [3]}) == "page 3" and place({"pages": [3, 4, 5]}) == "pages 3-5"
    assert place({"sheet": "Bands", "rows": [4]}) == "sheet Bands, row 4" and place({"rows": [2, 3]}) == "rows 2-3"
    assert place({"rows": [14, 17, 18]}) == "rows 14, 17-18"  # two records an elided quote joins, not those between
    assert place({"pages": [], "sheet": None, "rows": []}) == ""


def test_an_answer_from_a_pdf_shows_its_page(tmp_path):
    from citewell.samples.writer import pdf_bytes

    home, folder = tmp_path / "home", tmp_path / "manual"
    folder.mkdir()
    (folder / "cranes.pdf").write_bytes(pdf_bytes([("Intro", ["This manual covers the quay cranes of the north terminal."]),
                                                    ("Storm pins", ["Engage both storm pins when the wind exceeds 72 km/h."])]))
    cli(home, "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff")
    out = cli(home, "ask", "When must both storm pins be engaged?", "--tenant", "northpier", "--roles", "staff")
    assert "manual/cranes.pdf#" in out and ", page 2" in out, out  # the page of the quoted sentence


def test_a_citation_shows_and_carries_the_page_of_its_quote_not_its_chunks(tmp_path):
    from tests.answers.test_citation_places import PAGE_TEXTS, plain_pdf

    home, folder = tmp_path / "home", tmp_path / "office"
    folder.mkdir()
    (folder / "office.pdf").write_bytes(plain_pdf(PAGE_TEXTS))  # one chunk over pages 1-3
    cli(home, "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff")
    asked = ("ask", "Where do visitors collect a day badge?", "--tenant", "northpier", "--roles", "staff")
    out = cli(home, *asked)
    assert ", page 2\n" in out and "pages" not in out, out
    (citation,) = json.loads(cli(home, *asked, "--json"))["citations"]
    assert citation["pages"] == [2] and citation["rows"] == [] and citation["sheet"] is None


def test_text_from_a_document_never_drives_the_terminal(tmp_path):
    """A document may hold terminal escape sequences (a log's colours, an OSC 52 clipboard
    write): parsing drops them, so they are neither searched nor quoted. What still reaches a
    terminal from outside a document (a question) is shown as \\x1b, never sent."""
    folder, home = tmp_path / "notes", tmp_path / "home"
    folder.mkdir()
    (folder / "heron.txt").write_text("# Heron survey\n\nThe heron count at the north weir is 55 birds.\x1b]52;c;ZWNobyBwd25lZA=="
                                      "\x1b\\ The \x1b[2J\x1b[31msurvey\x1b[0m is repeated every spring.\n")
    (folder / "log\x1b]0;owned\x07.txt").write_text("a file whose name is an escape sequence\n")
    ask = ["ask", "What is the heron count at the north weir?\x1b[2J", "--tenant", "northpier", "--roles", "staff"]
    printed = [cli(home, "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff"),
               cli(home, "docs", "--tenant", "northpier"),
               cli(home, "search", "heron count north weir", "--tenant", "northpier", "--roles", "staff"),
               cli(home, *ask)]
    answer_id = json.loads(cli(home, "--json", *ask))["answer_id"]
    printed.append(cli(home, "citations", answer_id, "--tenant", "northpier", "--roles", "staff"))
    for out in printed:
        assert "\x1b" not in out and "\x07" not in out, out
    assert "notes/log-]0;owned-.txt" in printed[0]  # the file name's control characters are no part of its id
    assert "55 birds" in printed[3] and "\\x1b[2J" in printed[4]  # the question as asked, shown inert
    found = json.loads(cli(home, "--json", "search", "survey repeated", "--tenant", "northpier", "--roles", "staff"))
    assert "55 birds. The survey is repeated every spring." in found["hits"][0]["text"]


def test_a_reader_that_went_away_ends_the_command_quietly(tmp_path):
    """`citewell --json search ... | head -c 1`: the pipe closes before the output is written."""
    home = tmp_path / "home"
    (tmp_path / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    cli(home, "ingest", str(tmp_path / "leave.md"), "--tenant", "northpier", "--allow-roles", "staff")
    for flags in (["--json"], []):
        read, write = os.pipe()
        os.close(read)  # nobody reads: the first write breaks the pipe
        try:
            done = subprocess.run([sys.executable, "-m", "citewell", "--home", str(home), *flags, "search", "annual leave",
                                   "--tenant", "northpier", "--roles", "staff"], stdout=write, stderr=subprocess.PIPE,
                                  text=True, check=False)
        finally:
            os.close(write)
        assert done.returncode == 141 and done.stderr == "", (flags, done.stderr)


def test_each_outcome_reads_differently_and_carries_its_name_in_json(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "staff"
    folder.mkdir()
    (folder / "hours.md").write_text("# Working hours\n\nThe standard working week is 37.5 hours, Monday to Friday. "
                                     "Core hours are 10:00 to 15:00.\n\n# Leave\n\nFull-time staff receive 27 days of "
                                     "paid annual leave per calendar year.\n")
    cli(home, "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff")
    caller = ("--tenant", "northpier", "--roles", "staff")
    answered = json.loads(cli(home, "ask", "How many days of paid annual leave do full-time staff receive?", *caller, "--json"))
    assert (answered["outcome"], answered["refused"]) == ("answered", False)

    unconfirmed = json.loads(cli(home, "ask", "What are the core hours on Saturday?", *caller, "--json"))
    assert (unconfirmed["outcome"], unconfirmed["refused"]) == ("unconfirmed", True)
    text = cli(home, "ask", "What are the core hours on Saturday?", *caller)
    assert text.startswith("Not confirmed: the closest passage I found says:\n  Core hours are 10:00 to 15:00. [S1]\n"), text
    assert '"Core hours are 10:00 to 15:00."' in text and "hours.md#" in text  # the source, its chunk and quote
    assert "do not answer" not in text
    recorded = cli(home, "citations", unconfirmed["answer_id"], *caller)
    assert "Not confirmed:" in recorded and '"Core hours are 10:00 to 15:00."' in recorded
    assert json.loads(cli(home, "citations", unconfirmed["answer_id"], *caller, "--json"))["outcome"] == "unconfirmed"

    question = "Which football team won the national cup in 1998?"
    assert json.loads(cli(home, "ask", question, *caller, "--json"))["outcome"] == "not_found"
    text = cli(home, "ask", question, *caller)
    assert text.startswith("Nothing in the documents you can read is about this.\n"), text
    assert "Sources" not in text


def test_the_operator_is_told_when_a_mistyped_tenant_or_unused_roles_found_nothing(home):
    """A `--tenant` typo or a role no document allows is an ordinary refusal to a caller; the
    operator at the CLI is told the cause (the API never says it: it would reveal what exists)."""
    typo = " ".join(cli(home, "search", "storm pins", "--tenant", "northpeir", "--roles", "operators").split())
    assert "no results" in typo and "tenant 'northpeir' has no documents; tenants with documents here: northpier" in typo
    roles = json.loads(cli(home, "ask", "Where is the crane parked in a storm?", "--tenant", "northpier",
                           "--roles", "staff", "--json"))
    assert roles["outcome"] == "not_found"
    assert roles["operator_note"] == "no document of tenant 'northpier' allows the roles staff; roles its documents allow: operators"
    found = json.loads(cli(home, "search", "storm pins", "--tenant", "northpier", "--roles", "operators", "--json"))
    assert found["hits"] and "operator_note" not in found
    narrowed = json.loads(cli(home, "ask", "Where is the crane parked in a storm?", "--tenant", "northpier",
                              "--roles", "operators", "--doc", "no-such-document.md", "--json"))
    assert narrowed["outcome"] == "not_found" and "only the documents the filters let through" in narrowed["operator_note"]

