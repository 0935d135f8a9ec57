"""The CLI on folders as people keep them: ids that do not collide, replacements only on purpose."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from citewell.cli import main
from citewell.deployments import open_local


def run(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def ingest(capsys, home: Path, *argv: str, roles: str = "staff") -> tuple[int, dict[str, dict]]:
    code, out = run(capsys, "--home", str(home), "ingest", *argv, "--tenant", "northpier", "--allow-roles", roles, "--json")
    return code, {d["document_id"]: d for d in out["documents"]}


def served(home: Path, document_id: str) -> tuple[frozenset[str], str]:
    """The roles and text a document is served with."""
    services = open_local(home)
    record = services.documents.get_document("northpier", document_id)
    chunks = services.chunks.get_chunks("northpier", document_id, record.active_revision)
    return record.allowed_roles, " ".join(c.text for c in chunks)


def test_two_teams_readmes_stay_two_documents(capsys, tmp_path):
    """`ingest teamA` then `ingest teamB`, each with a README.md: the ids carry the folder given."""
    home = tmp_path / "home"
    for team, fact in (("teamA", "Team A deploys on Tuesdays."), ("teamB", "Team B deploys on Fridays.")):
        (tmp_path / team).mkdir()
        (tmp_path / team / "README.md").write_text(f"# {team}\n\n{fact}\n")
    code, a = ingest(capsys, home, str(tmp_path / "teamA"), roles="team-a")
    assert code == 0 and a["teamA/README.md"]["status"] == "published"
    code, b = ingest(capsys, home, str(tmp_path / "teamB"), roles="team-b")
    assert code == 0 and list(b) == ["teamB/README.md"] and b["teamB/README.md"]["status"] == "published"
    assert served(home, "teamA/README.md") == ({"team-a"}, "teamA\n\nTeam A deploys on Tuesdays.")
    assert served(home, "teamB/README.md") == ({"team-b"}, "teamB\n\nTeam B deploys on Fridays.")


def test_a_same_named_folder_elsewhere_is_refused_and_replaces_only_with_replace(capsys, tmp_path):
    home = tmp_path / "home"
    for team, fact in (("teamA", "Tuesdays"), ("teamB", "Fridays")):
        (tmp_path / team / "docs").mkdir(parents=True)
        (tmp_path / team / "docs" / "README.md").write_text(f"# Deploys\n\nWe deploy on {fact}.\n")
    assert ingest(capsys, home, str(tmp_path / "teamA" / "docs"), roles="team-a")[0] == 0

    code, out = ingest(capsys, home, str(tmp_path / "teamB" / "docs"), roles="team-b")
    assert code == 1
    refused = out["docs/README.md"]
    assert refused["status"] == "failed" and refused["error"]["code"] == "id_taken"
    message = refused["error"]["message"]
    assert "'docs/README.md' already exists" in message and "--replace" in message
    assert (tmp_path / "teamA" / "docs" / "README.md").as_uri() in message and "team-a" in message
    record = open_local(home).documents.get_document("northpier", "docs/README.md")
    assert record.status == "published" and record.error is None  # left as it was, not marked failed
    assert served(home, "docs/README.md") == ({"team-a"}, "Deploys\n\nWe deploy on Tuesdays.")

    code, out = ingest(capsys, home, str(tmp_path / "teamB" / "docs"), "--replace", roles="team-b")
    assert code == 0 and out["docs/README.md"]["status"] == "published"
    assert served(home, "docs/README.md") == ({"team-b"}, "Deploys\n\nWe deploy on Fridays.")


def test_the_same_folder_again_is_unchanged_and_an_edited_file_replaces_its_document(capsys, tmp_path):
    home, folder = tmp_path / "home", tmp_path / "handbook"
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    assert ingest(capsys, home, str(folder))[1]["handbook/leave.md"]["status"] == "published"
    assert ingest(capsys, home, str(folder))[1]["handbook/leave.md"]["status"] == "unchanged"
    (folder / "leave.md").write_text("# Leave\n\nStaff receive 30 days of annual leave.\n")
    code, out = ingest(capsys, home, str(folder))
    assert code == 0 and out["handbook/leave.md"]["status"] == "published"
    assert "30 days" in served(home, "handbook/leave.md")[1]
    # a file given on its own is named by its file name, and follows the same rule
    assert ingest(capsys, home, str(folder / "leave.md"))[1]["leave.md"]["status"] == "published"


def test_other_roles_for_the_same_file_need_replace(capsys, tmp_path):
    home, folder = tmp_path / "home", tmp_path / "pay"
    folder.mkdir()
    (folder / "bands.md").write_text("# Bands\n\nA shift lead is paid in band seven.\n")
    assert ingest(capsys, home, str(folder), roles="hr")[0] == 0
    code, out = ingest(capsys, home, str(folder), roles="staff")
    assert code == 1 and out["pay/bands.md"]["error"]["code"] == "id_taken"
    assert "readable by hr, this would be by staff" in out["pay/bands.md"]["error"]["message"]
    assert served(home, "pay/bands.md")[0] == {"hr"}
    assert ingest(capsys, home, str(folder), "--replace", roles="staff")[1]["pay/bands.md"]["status"] == "published"
    assert served(home, "pay/bands.md")[0] == {"staff"}


def test_links_inside_a_folder_are_never_followed_and_each_is_reported(capsys, tmp_path):
    """One rule for linked files and linked folders, inside or outside the folder, loops and
    dangling links included: not followed, and each one said in the output."""
    home, folder, outside = tmp_path / "home", tmp_path / "handbook", tmp_path / "private"
    (folder / "policies").mkdir(parents=True)
    outside.mkdir()
    (folder / "policies" / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    (outside / "salaries.md").write_text("# Salaries\n\nThe zorblatt band pays well.\n")
    (folder / "salaries.md").symlink_to(outside / "salaries.md")  # a file outside
    (folder / "leave-again.md").symlink_to(folder / "policies" / "leave.md")  # a file inside
    (folder / "private").symlink_to(outside, target_is_directory=True)  # a folder outside
    (folder / "policies" / "loop").symlink_to(folder, target_is_directory=True)  # a loop
    (folder / "gone.md").symlink_to(tmp_path / "nowhere.md")  # dangling
    os.mkfifo(folder / "pipe")
    code, out = ingest(capsys, home, str(folder))
    assert code == 0  # left out is not failed
    assert out.pop("handbook/policies/leave.md")["status"] == "published"
    assert {d: (o["status"], o["error"]["code"]) for d, o in out.items()} == {
        "handbook/salaries.md": ("skipped", "symlink"), "handbook/leave-again.md": ("skipped", "symlink"),
        "handbook/private": ("skipped", "symlink"), "handbook/policies/loop": ("skipped", "symlink"),
        "handbook/gone.md": ("skipped", "symlink"), "handbook/pipe": ("skipped", "not_a_file"),
    }
    assert str(outside) in out["handbook/private"]["error"]["message"]
    code, hits = run(capsys, "--home", str(home), "search", "zorblatt band", "--tenant", "northpier", "--roles", "staff", "--json")
    assert all("zorblatt" not in h["text"] for h in hits["hits"])

    assert main(["--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff"]) == 0
    table = capsys.readouterr().out
    assert "skipped    handbook/private" in table.splitlines() and "links inside a folder are not followed" in " ".join(table.split())

    # a link named on the command line is what the operator asked for: it is read
    code, out = ingest(capsys, home, str(folder / "salaries.md"), roles="hr")
    assert code == 0 and out["salaries.md"]["status"] == "published"


def test_names_a_folder_really_holds_become_ids_and_one_bad_name_fails_alone(capsys, tmp_path):
    """'#' and '\\' in names, bytes that are not UTF-8, a path too long for an id, two names that
    become one id, and the same folder given twice: each file is published or fails by itself."""
    home, folder = tmp_path / "home", tmp_path / "minutes"
    folder.mkdir()
    (folder / "Meeting #3.md").write_text("# Meeting 3\n\nThe quorn budget was approved.\n")
    (folder / "back\\slash.txt").write_text("The slate roof is replaced in May.\n")
    (folder / os.fsdecode(b"caf\xe9 latin-1.txt")).write_text("The kiosk opens at seven.\n")  # a name from an old disk
    deep = folder / ("d" * 200) / ("e" * 200) / ("f" * 200)
    deep.mkdir(parents=True)
    (deep / "long.md").write_text("Too long a path for an id.\n")
    (folder / "a#1.md").write_text("One.\n")
    (folder / "a-1.md").write_text("Two.\n")
    code, out = ingest(capsys, home, str(folder), str(folder))
    assert code == 1  # some failed
    assert {d: o["status"] for d, o in out.items() if o["status"] == "published"} == {
        "minutes/Meeting -3.md": "published", "minutes/back-slash.txt": "published", "minutes/caf\ufffd latin-1.txt": "published"}
    long_id = f"minutes/{'d' * 200}/{'e' * 200}/{'f' * 200}/long.md"  # over 512 bytes
    assert out[long_id]["error"]["code"] == "invalid_input" and "--doc-id" in out[long_id]["error"]["message"]
    assert out["minutes/a-1.md"]["error"]["code"] == "id_clash" and "2 files" in out["minutes/a-1.md"]["error"]["message"]
    assert len(out) == 5  # "a#1.md" and "a-1.md" report under their one id; the folder given twice is walked once
    assert "quorn budget" in served(home, "minutes/Meeting -3.md")[1]


def test_files_renamed_or_removed_from_a_folder_are_said_gone_and_pruned_on_request(capsys, tmp_path):
    home, folder = tmp_path / "home", tmp_path / "handbook"
    (folder / "policies").mkdir(parents=True)
    (folder / "policies" / "parking.md").write_text("# Parking\n\nThe garnet car park closes at ten.\n")
    (folder / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    (tmp_path / "elsewhere.md").write_text("# Elsewhere\n\nNot from the folder.\n")
    ingest(capsys, home, str(folder))
    ingest(capsys, home, str(tmp_path / "elsewhere.md"))
    (folder / "policies" / "parking.md").rename(folder / "policies" / "car-park.md")
    code, out = run(capsys, "--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff", "--json")
    assert code == 0 and out["gone"] == [{"document_id": "handbook/policies/parking.md", "deleted": False,
                                          "source": (folder / "policies" / "parking.md").resolve().as_uri()}]
    assert "garnet car park" in served(home, "handbook/policies/parking.md")[1]  # said, not yet removed
    code, out = run(capsys, "--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff",
                    "--prune", "--json")
    assert code == 0 and [(g["document_id"], g["deleted"]) for g in out["gone"]] == [("handbook/policies/parking.md", True)]
    listed = {d.document_id for d in open_local(home).documents.list_documents("northpier")}
    assert listed == {"handbook/leave.md", "handbook/policies/car-park.md", "elsewhere.md"}  # a file ingested alone stays


def test_a_file_ingested_alone_is_not_gone_when_its_folder_is_ingested(capsys, tmp_path):
    """`ingest teamA/README.md` then `ingest teamA --prune`: the first document's file is still
    there, so it is neither listed as gone nor deleted."""
    home, folder = tmp_path / "home", tmp_path / "teamA"
    folder.mkdir()
    (folder / "README.md").write_text("# Team A\n\nTeam A deploys on Tuesdays.\n")
    code, alone = ingest(capsys, home, str(folder / "README.md"))
    assert code == 0 and alone["README.md"]["status"] == "published"
    for extra in ([], ["--prune"]):
        code, out = run(capsys, "--home", str(home), "ingest", str(folder), *extra, "--tenant", "northpier",
                        "--allow-roles", "staff", "--json")
        assert code == 0 and "gone" not in out
    assert "Tuesdays" in served(home, "README.md")[1]
    (folder / "README.md").unlink()  # now it is gone
    code, out = run(capsys, "--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff", "--json")
    assert [g["document_id"] for g in out["gone"]] == ["README.md", "teamA/README.md"]


def test_a_symbolic_link_loop_named_on_the_command_line_is_said_a_loop(capsys, tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere.md")
    (tmp_path / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    code, out = ingest(capsys, tmp_path / "home", str(tmp_path / "a"), str(tmp_path / "dangling"), str(tmp_path / "leave.md"))
    loop = out[str(tmp_path / "a")]
    assert loop["status"] == "failed" and loop["error"]["code"] == "symlink_loop" and "loops" in loop["error"]["message"]
    dangling = out[str(tmp_path / "dangling")]
    assert dangling["error"]["code"] == "not_found" and "nowhere.md" in dangling["error"]["message"]
    assert out["leave.md"]["status"] == "published" and code != 0


@pytest.mark.skipif(not Path("/proc/self/mem").is_file(), reason="needs Linux /proc")
def test_a_file_that_cannot_be_read_fails_alone(capsys, tmp_path):
    """/proc/self/mem is a file no read() can take (EIO): it fails, the others are published."""
    (tmp_path / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    code, out = ingest(capsys, tmp_path / "home", "/proc/self/mem", str(tmp_path / "leave.md"))
    assert code == 1 and out["leave.md"]["status"] == "published"
    assert out["mem"]["error"]["code"] == "unreadable" and "could not be read" in out["mem"]["error"]["message"]


def test_a_man_page_and_an_rst_readme_are_served_with_their_records_sections_and_titles(capsys, tmp_path):
    """The whole path: `ingest` of a rendered man page (as .txt) and an .rst README; the served
    chunks hold the option and table records whole under their sections, titled by the files' own titles."""
    from tests.parsers.test_document_structure import RENDERED, RST_README

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "widget.1.txt").write_text(RENDERED)
    (folder / "README.rst").write_bytes(RST_README)
    code, out = ingest(capsys, tmp_path / "home", str(folder))
    assert code == 0 and {d: r["status"] for d, r in out.items()} == {"docs/widget.1.txt": "published", "docs/README.rst": "published"}
    services = open_local(tmp_path / "home")
    titles = {d: services.documents.get_document("northpier", d).title for d in out}
    assert titles == {"docs/widget.1.txt": "widget - frobnicate widgets in a working directory", "docs/README.rst": "Widgetry"}
    for document_id, record, path in (
        ("docs/widget.1.txt", "option: -q, --quiet; description: Quiet mode.", ["OPTIONS", "General"]),
        ("docs/README.rst", "Code: 130; Meaning: Interrupted by the user (Ctrl-C).", ["Widgetry", "Exit codes"]),
    ):
        active = services.documents.get_document("northpier", document_id).active_revision
        holding = [c for c in services.chunks.get_chunks("northpier", document_id, active) if record in c.text]
        assert holding and all(c.heading_path == path for c in holding)


_NO_OVERRIDE = ["--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-dac_override,-dac_read_search"]


@pytest.fixture
def bound_by_modes(tmp_path: Path) -> list[str]:
    """The prefix that runs a command as mode bits bind it: root without the capabilities that
    override them (setpriv), any other user as it is. Skips where that cannot be had."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads what mode bits forbid, and setpriv is not here to drop that")
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0)
    tried = subprocess.run([setpriv, *_NO_OVERRIDE, sys.executable, "-c", f"open({str(probe)!r})"], capture_output=True, text=True)
    if "PermissionError" not in tried.stderr:
        pytest.skip(f"setpriv could not drop CAP_DAC_OVERRIDE here: {tried.stderr.strip()[-200:]}")
    return [setpriv, *_NO_OVERRIDE]


def ingest_bound(prefix: list[str], home: Path, *argv: str) -> tuple[int, dict]:
    """``citewell ingest --json`` in its own process under ``prefix``; no traceback, valid JSON."""
    done = subprocess.run([*prefix, sys.executable, "-m", "citewell", "--home", str(home), "ingest", *argv,
                           "--tenant", "northpier", "--allow-roles", "staff", "--json"],
                          capture_output=True, text=True, env={**os.environ, "CITEWELL_EMBED_THREADS": "1"})
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def top_folder(tmp_path: Path) -> Path:
    top = tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    (top / "a.txt").write_text("The amber gate opens at six.\n")
    (top / "sub" / "b.txt").write_text("The basalt stair is closed in winter.\n")
    return top


@pytest.mark.parametrize(("mode", "failed"), [(0o000, "top/sub"), (0o311, "top/sub"), (0o644, "top/sub/b.txt")],
                         ids=["000", "311", "644"])
def test_a_folder_that_cannot_be_read_is_a_failed_item_not_left_out_in_silence(tmp_path, bound_by_modes, mode, failed):
    """Not listable (000, 311: the folder is named), or listable but not enterable (644: its
    file is named): the rest is published and the batch exits 1, as for a file that fails."""
    top = top_folder(tmp_path)
    (top / "sub").chmod(mode)
    try:
        code, out = ingest_bound(bound_by_modes, tmp_path / "home", str(top))
    finally:
        (top / "sub").chmod(0o755)
    by_id = {d["document_id"]: d for d in out["documents"]}
    assert code == 1 and set(by_id) == {"top/a.txt", failed} and by_id["top/a.txt"]["status"] == "published"
    assert by_id[failed]["status"] == "failed" and by_id[failed]["error"]["code"] == "unreadable"
    assert "Permission denied" in by_id[failed]["error"]["message"]


def test_a_file_that_cannot_be_checked_is_kept_and_said_not_gone_nor_pruned(capsys, tmp_path, bound_by_modes):
    """A folder ingested, then one of its folders made unreadable: its documents cannot be seen,
    which is not gone; --prune deletes nothing, and each is said with the reason."""
    home, top = tmp_path / "home", top_folder(tmp_path)
    assert ingest(capsys, home, str(top))[0] == 0
    (top / "sub").chmod(0)
    try:
        for extra in ([], ["--prune"]):
            code, out = ingest_bound(bound_by_modes, home, str(top), *extra)
            by_id = {d["document_id"]: d for d in out["documents"]}
            assert code == 1 and "gone" not in out and by_id["top/a.txt"]["status"] == "unchanged"
            assert by_id["top/sub"]["error"]["code"] == "unreadable"
            unchecked = by_id["top/sub/b.txt"]
            assert unchecked["status"] == "failed" and unchecked["error"]["code"] == "unreadable"
            assert "could not be checked: Permission denied" in unchecked["error"]["message"]
        code, out = ingest_bound(bound_by_modes, home, str(top / "sub" / "b.txt"))  # a file named under it
        assert code == 1 and out["documents"][0]["error"]["code"] == "unreadable"
    finally:
        (top / "sub").chmod(0o755)
    assert "basalt stair" in served(home, "top/sub/b.txt")[1]


def test_a_file_removed_after_the_walk_is_not_found(capsys, tmp_path, monkeypatch):
    """The file is removed just before it is read (the read itself is real): the same cause as
    a missing path on the command line, so the same code."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kept.md").write_text("# Kept\n\nThe cedar hall seats forty.\n")
    (folder / "vanishing.md").write_text("# Vanishing\n\nGone before it is read.\n")
    read_bytes = Path.read_bytes

    def removed_first(path: Path) -> bytes:
        if path.name == "vanishing.md":
            path.unlink()
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", removed_first)
    code, out = ingest(capsys, tmp_path / "home", str(folder))
    assert code == 1 and out["notes/kept.md"]["status"] == "published"
    error = out["notes/vanishing.md"]["error"]
    assert error["code"] == "not_found" and "vanishing.md" in error["message"]


@pytest.mark.parametrize("roles", ["", " , "])
def test_no_allowed_role_is_a_usage_error_before_any_file_is_read(capsys, tmp_path, roles):
    home = tmp_path / "home"
    (tmp_path / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    assert ingest(capsys, home, str(tmp_path / "leave.md"))[0] == 0  # an existing id: no garbled id_taken either
    with pytest.raises(SystemExit) as exited:
        main(["--home", str(home), "ingest", str(tmp_path / "leave.md"), "--tenant", "northpier", "--allow-roles", roles, "--json"])
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and json.loads(out)["error"]["code"] == "usage"
    assert err.count("\n") == 1 and "at least one allowed role" in err
    assert served(home, "leave.md")[0] == {"staff"}


def test_a_title_from_a_file_name_has_no_control_characters(capsys, tmp_path):
    """A name may hold a newline or a tab; the title, printed on one line, holds spaces there."""
    home, folder = tmp_path / "home", tmp_path / "odd"
    folder.mkdir()
    (folder / "new\nline.txt").write_text("The copper kettle is descaled weekly.\n")
    (folder / "tab\there.txt").write_text("The pewter jug is polished monthly.\n")
    code, out = ingest(capsys, home, str(folder))
    assert code == 0 and set(out) == {"odd/new-line.txt", "odd/tab-here.txt"}
    code, listed = run(capsys, "--home", str(home), "docs", "--tenant", "northpier", "--json")
    assert {d["document_id"]: d["title"] for d in listed["documents"]} == {"odd/new-line.txt": "new line",
                                                                           "odd/tab-here.txt": "tab here"}
