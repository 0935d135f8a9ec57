"""Each interleaving and attack that once leaked, resurrected or left data behind, replayed step by step."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta

import numpy as np
import pytest

from citewell.answers.service import ask, recorded_citations
from citewell.audit import audit
from citewell.cli import main as cli
from citewell.deletion import delete_document
from citewell.deployments import open_local
from citewell.errors import Conflict, InvalidInput, NotFound
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest, chunk_stage, embed_stage, parse_stage, publish_stage, register
from citewell.keys import raw_key
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.search import search
from tests.integrity.test_deletion import traces

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
HR = Identity(tenant="northpier", roles=frozenset({"hr"}))
BOTH = Identity(tenant="northpier", roles=frozenset({"staff", "hr"}))
SECRET = b"# Pay review\n\nThe vorpaltrine pay review moves every shift lead to band seven in March.\n"
PUBLIC = b"# Pay review\n\nPay reviews happen once a year; your manager tells you the date.\n"


def request(data: bytes, roles=("staff",), doc_id="pay.md", tenant="northpier") -> IngestRequest:
    return IngestRequest(document_id=doc_id, tenant=tenant, allowed_roles=frozenset(roles), data=data, filename=doc_id)


def run(services, upload):
    """Every stage of one upload in turn; None as soon as it is superseded."""
    parsed = parse_stage(services, upload)
    if parsed.status != "parsed":
        return parsed.status
    chunked = chunk_stage(services, upload)
    if chunked is None:
        return None
    embed_stage(services, chunked.chunks)
    return publish_stage(services, upload, parsed.revision, parsed.content_sha256)


def texts(services, identity, question="vorpaltrine pay review band"):
    return [h.text for h in search(services, identity, question).hits]


# -- leaks ---------------------------------------------------------------------------------


def test_a_recorded_answer_shows_only_to_readers_of_every_document_it_cites(services):
    ingest(services, [request(SECRET, roles=("hr",))])
    answer = ask(services, BOTH, "Which band does the vorpaltrine pay review move shift leads to?")
    assert not answer.refused and "band seven" in answer.answer
    with pytest.raises(NotFound):  # shares a role with the asker, but may not read the hr-only source
        recorded_citations(services, STAFF, answer.answer_id)
    assert recorded_citations(services, HR, answer.answer_id).answer == answer.answer
    with pytest.raises(NotFound):
        recorded_citations(services, Identity(tenant="bluefen", roles=frozenset({"hr"})), answer.answer_id)


def test_narrowing_a_document_withdraws_answers_that_rested_on_it(services):
    ingest(services, [request(SECRET, roles=("staff",))])
    answer = ask(services, STAFF, "Which band does the vorpaltrine pay review move shift leads to?")
    assert not answer.refused
    (narrowed,) = ingest(services, [request(SECRET, roles=("hr",))])  # the same text: only the roles change
    assert narrowed.status == "published"
    withdrawn = recorded_citations(services, STAFF, answer.answer_id)  # the asker still learns why it went
    assert withdrawn.source_deleted and withdrawn.answer is None and withdrawn.question == ""
    assert [c.model_dump() for c in withdrawn.citations] == [{"ref": "S1", "chunk_id": "", "document_id": "", "revision": "",
                                                              "title": "", "section_path": [], "quote": "", "deleted": True,
                                                              "pages": [], "sheet": None, "rows": [], "section_id": ""}]
    assert ask(services, STAFF, "Which band does the vorpaltrine pay review move shift leads to?").refused


def test_the_cli_citations_command_takes_the_readers_roles(tmp_path, capsys):
    home = tmp_path / "home"
    (tmp_path / "pay.md").write_bytes(SECRET)
    assert cli(["--home", str(home), "ingest", str(tmp_path / "pay.md"), "--tenant", "northpier", "--allow-roles", "hr", "--json"]) == 0
    capsys.readouterr()
    assert cli(["--home", str(home), "ask", "Which band does the vorpaltrine pay review move shift leads to?",
                "--tenant", "northpier", "--roles", "staff,hr", "--json"]) == 0
    answer_id = json.loads(capsys.readouterr().out)["answer_id"]
    assert cli(["--home", str(home), "citations", answer_id, "--tenant", "northpier", "--roles", "staff", "--json"]) == 2
    assert "band seven" not in capsys.readouterr().out
    assert cli(["--home", str(home), "citations", answer_id, "--tenant", "northpier", "--roles", "hr", "--json"]) == 0
    assert "band seven" in capsys.readouterr().out


def test_interleaved_uploads_never_publish_one_uploads_text_with_anothers_roles(services):
    """register B, parse B, register A, chunk B, publish A, publish B: B's staff roles must never carry A's text."""
    upload_b = register(services, request(PUBLIC, roles=("staff",)))
    parsed_b = parse_stage(services, upload_b)
    upload_a = register(services, request(SECRET, roles=("hr",)))
    assert chunk_stage(services, upload_b) is None  # superseded: it stops and cleans up
    assert run(services, upload_a) == 1
    assert publish_stage(services, upload_b, parsed_b.revision, parsed_b.content_sha256) is None
    assert texts(services, STAFF) == [] and any("band seven" in t for t in texts(services, HR))
    record = services.documents.get_document("northpier", "pay.md")
    rows = [a for a in services.index.access_inventory() if a[1] == "pay.md"]
    assert record.allowed_roles == {"hr"} and [a[3] for a in rows] == [frozenset({"hr"})]
    assert audit(services).findings == []


def test_an_older_upload_never_replaces_a_newer_one(services):
    first = register(services, request(SECRET, roles=("hr",)))
    second = register(services, request(PUBLIC, roles=("staff",)))
    assert run(services, second) == 1
    assert run(services, first) == "superseded"  # its late stages are acknowledged, not retried
    assert texts(services, HR) == [] and services.documents.get_document("northpier", "pay.md").allowed_roles == {"staff"}
    assert audit(services).findings == []


@pytest.mark.parametrize("tenant, document_id", [("other", "../northpier/pay.md"), (".", "pay.md"), ("..", "northpier/pay.md"),
                                                 ("north/pier", "pay.md"), ("other", "a/../../northpier/pay.md")])
def test_no_key_leaves_its_tenants_prefix(services, tenant, document_id):
    ingest(services, [request(SECRET)])
    with pytest.raises(InvalidInput):
        delete_document(services, tenant, document_id)
    with pytest.raises(InvalidInput):
        raw_key(tenant, document_id, "0" * 32)
    (outcome,) = ingest(services, [request(PUBLIC, tenant=tenant, doc_id=document_id)])
    assert outcome.status == "failed" and outcome.error.code == "invalid_input"
    assert services.documents.get_document("northpier", "pay.md").status is DocumentStatus.PUBLISHED
    assert any("band seven" in t for t in texts(services, STAFF))


def test_the_cli_refuses_tenants_and_ids_outside_the_grammar(tmp_path, capsys):
    home = tmp_path / "home"
    (tmp_path / "pay.md").write_bytes(SECRET)
    assert cli(["--home", str(home), "ingest", str(tmp_path / "pay.md"), "--tenant", "acme", "--allow-roles", "staff"]) == 0
    with pytest.raises(SystemExit) as refused:
        cli(["--home", str(home), "delete", "../acme/pay.md", "--tenant", "other"])
    assert refused.value.code == 2
    for tenant in (".", "..", "a/b"):
        with pytest.raises(SystemExit):
            cli(["--home", str(home), "ingest", str(tmp_path / "pay.md"), "--tenant", tenant, "--doc-id", "acme/pay.md",
                 "--allow-roles", "staff"])
    capsys.readouterr()
    assert cli(["--home", str(home), "search", "vorpaltrine pay review", "--tenant", "acme", "--roles", "staff", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"]


def test_an_id_that_is_a_path_prefix_of_another_ingests_beside_it(services):
    outcomes = ingest(services, [request(PUBLIC, doc_id="guide"), request(SECRET, doc_id="guide/pay.md")])
    assert [o.status for o in outcomes] == ["published", "published"]
    delete_document(services, "northpier", "guide")
    assert any("band seven" in t for t in texts(services, STAFF))  # the other document is untouched


# -- resurrection and rollback --------------------------------------------------------------


@pytest.mark.parametrize("deleted_after", ["register", "parse", "chunk", "embed"])
def test_a_delete_during_an_ingest_is_never_undone(services, tmp_path, deleted_after):
    ingest(services, [request(SECRET)])
    upload = register(services, request(SECRET.replace(b"March", b"April")))
    steps = {"register": [], "parse": ["parse"], "chunk": ["parse", "chunk"], "embed": ["parse", "chunk", "embed"]}[deleted_after]
    parsed = chunked = None
    for step in steps:
        if step == "parse":
            parsed = parse_stage(services, upload)
        elif step == "chunk":
            chunked = chunk_stage(services, upload)
        else:
            embed_stage(services, chunked.chunks)
    delete_document(services, "northpier", "pay.md")
    if parsed is None:
        assert parse_stage(services, upload).status == "superseded"
    elif chunked is None:
        assert chunk_stage(services, upload) is None
    else:
        assert publish_stage(services, upload, parsed.revision, parsed.content_sha256) is None
    assert services.documents.get_document("northpier", "pay.md") is None
    assert texts(services, STAFF) == [] and list(services.objects.list("")) == []
    assert services.embeddings.embedding_hashes(services.embedder.identity) == set()  # no embedding of the deleted text
    local = services.documents.__class__.__name__ == "SqliteMetadataStore"
    # What the superseded stage removed awaits a compaction (the runner's, at the end), and says so past the time limit.
    waits = local and deleted_after in ("chunk", "embed")
    assert [f.kind for f in audit(services, stuck=timedelta(0)).findings] == (["pending_compaction"] if waits else [])
    if local:
        ingest(services, [request(PUBLIC, doc_id="other.md")])  # a later writer compacts what the abandoned upload removed
        assert audit(services, stuck=timedelta(0)).findings == []
        assert traces(tmp_path, [b"vorpaltrine", b"pay.md"]) == []


def test_an_upload_is_refused_while_its_document_is_being_deleted(services, monkeypatch):
    ingest(services, [request(SECRET)])

    def power_cut(*args):
        raise RuntimeError("power cut")

    monkeypatch.setattr(services.index, "revisions", power_cut)
    with pytest.raises(RuntimeError):
        delete_document(services, "northpier", "pay.md")
    monkeypatch.undo()
    assert services.documents.get_document("northpier", "pay.md").status is DocumentStatus.DELETING
    with pytest.raises(Conflict):
        register(services, request(PUBLIC))
    (outcome,) = ingest(services, [request(PUBLIC)])
    assert outcome.status == "failed" and outcome.error.code == "conflict"
    delete_document(services, "northpier", "pay.md")
    assert ingest(services, [request(PUBLIC)])[0].status == "published"


def test_two_processes_ingesting_one_document_with_different_roles_agree(tmp_path):
    """Two real processes race on one document, ten times; the record, chunk records and index
    rows always end up with one upload's roles, and its own text."""
    script = (
        "import sys; from pathlib import Path; from citewell.cli import main; "
        "sys.exit(main(['--home', sys.argv[1], 'ingest', sys.argv[2], '--doc-id', 'pay.md', '--tenant', 'northpier', "
        "'--allow-roles', sys.argv[3], '--replace', '--json']))"
    )
    (tmp_path / "secret.md").write_bytes(SECRET)
    (tmp_path / "public.md").write_bytes(PUBLIC)
    home = tmp_path / "home"
    for round_number in range(10):
        first = (tmp_path / ("secret.md" if round_number % 2 else "public.md"), "hr" if round_number % 2 else "staff")
        second = (tmp_path / ("public.md" if round_number % 2 else "secret.md"), "staff" if round_number % 2 else "hr")
        processes = [subprocess.Popen([sys.executable, "-c", script, str(home), str(path), roles], stdout=subprocess.PIPE)
                     for path, roles in (first, second)]
        statuses = [json.loads(p.communicate(timeout=300)[0])["documents"][0]["status"] for p in processes]
        assert "published" in statuses or "unchanged" in statuses, statuses
        services = open_local(home)
        record = services.documents.get_document("northpier", "pay.md")
        chunks = services.chunks.get_chunks("northpier", "pay.md", record.active_revision)
        rows = {a[3] for a in services.index.access_inventory() if a[2] == record.active_revision}
        assert {c.allowed_roles for c in chunks} == rows == {record.allowed_roles}
        secret_served = any("band seven" in c.text for c in chunks)
        assert secret_served == (record.allowed_roles == {"hr"}), (record.allowed_roles, secret_served)
        assert audit(services).ok


# -- residue -------------------------------------------------------------------------------


def test_a_delete_behind_a_reader_says_the_removal_is_pending_and_the_audit_finishes_it(services, tmp_path):
    if services.documents.__class__.__name__ != "SqliteMetadataStore":
        pytest.skip("write-ahead logs are a property of the embedded stores")
    ingest(services, [request(SECRET)])
    readers = [sqlite3.connect(tmp_path / name) for name in ("metadata.db", "index.db")]
    for reader in readers:
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # a read transaction pins the log
    report = delete_document(services, "northpier", "pay.md")
    assert report.pending and report.removed["documents"] == 1
    for reader in readers:
        reader.close()
    repaired = audit(services, repair=True)
    assert repaired.ok and not [f for f in repaired.findings if f.kind == "pending_compaction"]
    assert traces(tmp_path, [b"vorpaltrine", b"pay.md"]) == []


def test_a_deleted_documents_refusals_lose_their_question(services, tmp_path):
    ingest(services, [request(SECRET)])
    refusal = ask(services, STAFF, "Who chairs the vorpaltrine pay review committee?")
    assert refusal.refused
    delete_document(services, "northpier", "pay.md")
    record = recorded_citations(services, STAFF, refusal.answer_id)
    assert record.question == "" and record.source_deleted
    if services.documents.__class__.__name__ == "SqliteMetadataStore":
        assert traces(tmp_path, [b"vorpaltrine"]) == []


def test_an_unfinished_write_is_found_and_removed(services, tmp_path):
    if services.objects.__class__.__name__ != "FolderObjectStore":
        pytest.skip("a folder store's temporary files")
    ingest(services, [request(SECRET)])
    record = services.documents.get_document("northpier", "pay.md")
    folder = tmp_path / "objects" / raw_key("northpier", "pay.md", record.active_upload).rsplit("/", 1)[0]
    (folder / ".tmp-killed").write_bytes(SECRET)  # what a write killed before its rename leaves
    assert [f.kind for f in audit(services, stuck=timedelta(0)).findings] == ["leftover_temporary"]
    assert audit(services).findings == []  # a fresh one may be a write in progress
    delete_document(services, "northpier", "pay.md")
    assert not (folder / ".tmp-killed").exists()


# -- audit ---------------------------------------------------------------------------------


def test_the_audit_finds_a_missing_raw_upload_and_access_that_disagrees(services):
    ingest(services, [request(SECRET, roles=("hr",))])
    record = services.documents.get_document("northpier", "pay.md")
    services.objects.delete(raw_key("northpier", "pay.md", record.active_upload))
    chunks = services.chunks.get_chunks("northpier", "pay.md", record.active_revision)
    widened = [c.model_copy(update={"allowed_roles": frozenset({"staff"})}) for c in chunks]
    vectors = services.embeddings.get_embeddings(services.embedder.identity, [c.content_hash for c in chunks])
    services.index.upsert(widened, np.stack([vectors[c.content_hash] for c in chunks]), services.embedder.identity)
    report = audit(services, repair=True)
    assert sorted(f.kind for f in report.findings) == ["access_mismatch", "missing_raw_upload"]
    assert [f.repaired for f in sorted(report.findings, key=lambda f: f.kind)] == [True, False]
    assert [a[3] for a in services.index.access_inventory()] == [frozenset({"hr"})]
    assert texts(services, STAFF) == []


def test_the_audit_rewrites_chunk_records_and_rows_whose_access_drifted(services):
    """Records and rows that carry other roles and title than the record are rewritten from the
    record, records first, a page at a time, and the rows from them (embedded anew: the title is
    in the embedded text)."""
    ingest(services, [request(SECRET, roles=("hr",))])
    record = services.documents.get_document("northpier", "pay.md")
    revision = record.active_revision
    assert services.chunks.set_access("northpier", "pay.md", revision, frozenset({"staff"}), "Widened") > 0
    widened = services.chunks.get_chunks("northpier", "pay.md", revision)
    embed_stage(services, widened)
    vectors = services.embeddings.get_embeddings(services.embedder.identity, [c.content_hash for c in widened])
    services.index.upsert(widened, np.stack([vectors[c.content_hash] for c in widened]), services.embedder.identity)
    assert [a[3] for a in services.index.access_inventory()] == [frozenset({"staff"})]  # the read-back still hides it
    report = audit(services, repair=True)
    # beside it, the vectors of the widened title, which no record uses once it is repaired
    assert ("access_mismatch", True) in [(f.kind, f.repaired) for f in report.findings] and report.ok, report.findings
    assert {(c.allowed_roles, c.title) for c in services.chunks.get_chunks("northpier", "pay.md", revision)} == {
        (frozenset({"hr"}), record.title)}
    assert [a[3] for a in services.index.access_inventory()] == [frozenset({"hr"})]
    assert texts(services, STAFF) == [] and audit(services).findings == []


def test_the_audit_finishes_an_upload_that_was_indexed_but_never_switched(services):
    ingest(services, [request(PUBLIC)])
    upload = register(services, request(SECRET))
    parsed = parse_stage(services, upload)
    chunked = chunk_stage(services, upload)
    embed_stage(services, chunked.chunks)
    vectors = services.embeddings.get_embeddings(services.embedder.identity, [c.content_hash for c in chunked.chunks])
    services.index.upsert(chunked.chunks, np.stack([vectors[c.content_hash] for c in chunked.chunks]), services.embedder.identity)
    # the process dies here, before its switch
    assert audit(services).findings == []  # not yet: it may still be running
    report = audit(services, repair=True, stuck=timedelta(0))
    assert [f.kind for f in report.findings] == ["unswitched_upload"] and report.ok
    assert services.documents.get_document("northpier", "pay.md").active_revision == parsed.revision
    assert audit(services).findings == []


def test_the_audit_removes_embeddings_no_chunk_uses(services):
    ingest(services, [request(SECRET)])
    services.embeddings.put_embeddings(services.embedder.identity, {"f" * 64: np.ones(384, dtype=np.float32)})
    report = audit(services, repair=True)
    assert [f.kind for f in report.findings] == ["unused_embeddings"] and report.ok
    assert "f" * 64 not in services.embeddings.embedding_hashes(services.embedder.identity)
    assert search(services, STAFF, "vorpaltrine").hits


@pytest.mark.alone  # the kills are timed by a measured run, which another test's load would stretch
def test_kill_9_during_ingest_then_the_audit_leaves_every_document_whole(tmp_path):
    """A real `citewell ingest` is killed at spread-out moments; each time `audit --repair` (with
    nothing considered fresh) must leave a home whose documents are each served whole or failed,
    that a second audit finds clean, and in which a delete still removes every byte."""
    folder = tmp_path / "docs"
    folder.mkdir()
    home = tmp_path / "home"
    env = {**os.environ, "CITEWELL_STUCK_MINUTES": "0"}
    ingest_cmd = [sys.executable, "-m", "citewell", "--home", str(home), "ingest", str(folder), "--tenant", "northpier",
                  "--allow-roles", "staff", "--json"]
    audit_cmd = [sys.executable, "-m", "citewell", "--home", str(home), "audit", "--json"]
    killed, full = 0, None
    for fraction in (None, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9):  # first a whole run, to time it
        delay = None if full is None else full * fraction
        for number in range(8):  # new text each round, every paragraph its own chunk to embed
            paragraphs = [f"# Part {p}\n\nThe vorpaltrine pay review {fraction} moves shift lead {p} of memo {number} to band {p % 9}.\n"
                          for p in range(60)]
            (folder / f"memo-{number}.md").write_text("\n".join(paragraphs))
        started = time.monotonic()
        process = subprocess.Popen(ingest_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            process.wait(timeout=delay)
            full = full or time.monotonic() - started
        except subprocess.TimeoutExpired:
            process.kill()  # SIGKILL: no clean-up of any kind
            process.wait()
            killed += 1
        subprocess.run([*audit_cmd, "--repair"], capture_output=True, env=env, check=False)
        report = json.loads(subprocess.run(audit_cmd, capture_output=True, env=env, check=False).stdout)
        assert report == {"ok": True, "findings": []}, (delay, report)
        services = open_local(home)
        for document in services.documents.list_documents("northpier"):
            assert document.status in (DocumentStatus.PUBLISHED, DocumentStatus.FAILED), document
            if document.active_revision:
                chunks = services.chunks.get_chunks("northpier", document.document_id, document.active_revision)
                assert services.index.count("northpier", document.document_id, document.active_revision) == len(chunks) > 0
    assert killed >= 4  # most rounds died mid-way, at moments spread over a whole run's length
    for document in open_local(home).documents.list_documents("northpier"):
        delete_document(open_local(home), "northpier", document.document_id)
    assert traces(home, [b"vorpaltrine", b"memo-"]) == []
