"""Races and crashes beyond one operation at a time: the audit beside live uploads, an ask beside
a delete, a model's words from a source it does not cite, and processes killed between a
removal and its compaction or between a revision switch and its purge.

Concurrency is injected at the stores' boundary (a store call runs the other operation first),
and a kill is a real SIGKILL of a child process at a store call.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from citewell import leases
from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator
from citewell.answers.service import SOURCES_CHANGED, ask, recorded_citations
from citewell.audit import audit
from citewell.cli import main as cli
from citewell.deletion import delete_document, unfinished_removals
from citewell.deployments import open_local
from citewell.errors import NotFound
from citewell.ingest.orphans import adopt_orphans
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest, register
from citewell.keys import raw_key
from citewell.models.identity import Identity
from citewell.search import search
from tests.conftest import make_services
from tests.fake_model_service import start
from tests.integrity.test_deletion import traces
from tests.residue import tantivy_residue

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
BOTH = Identity(tenant="northpier", roles=frozenset({"staff", "hr"}))
ROOT = Path(__file__).resolve().parents[2]


def add(services, doc_id: str, text: str, roles=("staff",)):
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset(roles),
                                                 data=text.encode(), filename=doc_id)])
    return outcome


def served_whole(services, doc_id: str) -> None:
    """The document's active revision is indexed in full, its chunk records and raw upload are there."""
    document = services.documents.get_document("northpier", doc_id)
    assert document is not None and document.active_revision is not None, doc_id
    assert services.index.count("northpier", doc_id, document.active_revision) == document.chunk_count > 0
    assert len(services.chunks.get_chunks("northpier", doc_id, document.active_revision)) == document.chunk_count
    assert services.objects.exists(raw_key("northpier", doc_id, document.active_upload))


def first_call_runs(monkeypatch, target, method: str, concurrent) -> list:
    """``target.method`` runs ``concurrent`` once, before its first call: another process's work landing there."""
    original, ran, started = getattr(target, method), [], []

    def call(*args, **kwargs):
        if not started:  # the concurrent work may call the same method: it runs once, plainly
            started.append(True)
            ran.append(concurrent())
        return original(*args, **kwargs)

    monkeypatch.setattr(target, method, call)
    return ran


# -- the audit beside live uploads -------------------------------------------------------


@pytest.mark.parametrize("after", ["upload_inventory", "inventory", "chunk_inventory", "list"])
def test_audit_repair_never_removes_uploads_that_registered_or_published_after_its_snapshot(services, monkeypatch, after):
    add(services, "policy.md", "# Policy\n\nThe old rule: gates close at nine.\n")
    add(services, "new.md", "# Placeholder\n\nnothing\n")
    delete_document(services, "northpier", "new.md")

    def concurrent_ingest():
        return [add(services, "policy.md", "# Policy\n\nThe new rule: gates close at ten, and badges are checked.\n").status,
                add(services, "new.md", "# Berths\n\nBerth twelve takes reefer ships only.\n").status]

    store = {"list": services.objects, "inventory": services.index, "upload_inventory": services.uploads,
             "chunk_inventory": services.chunks}[after]
    ran = first_call_runs(monkeypatch, store, after, concurrent_ingest)
    audit(services, repair=True)
    monkeypatch.undo()
    assert ran == [["published", "published"]]
    for doc_id in ("policy.md", "new.md"):
        served_whole(services, doc_id)
    assert "badges" in search(services, STAFF, "gates close badges").hits[0].text
    assert "reefer" in search(services, STAFF, "berth twelve reefer").hits[0].text
    assert audit(services).ok


def test_the_audit_finishes_a_stuck_delete_only_for_the_life_of_the_record_it_saw(services, monkeypatch):
    add(services, "memo.md", "# Memo\n\nThe first memo about berth nine.\n")
    monkeypatch.setattr(services.documents, "delete_document", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("power cut")))
    with pytest.raises(RuntimeError):
        delete_document(services, "northpier", "memo.md")
    monkeypatch.undo()
    stuck = services.documents.get_document("northpier", "memo.md")
    assert stuck.status.value == "deleting"
    with pytest.raises(NotFound):  # another life of the record is left alone
        delete_document(services, "northpier", "memo.md", generation="another-life")
    delete_document(services, "northpier", "memo.md", generation=stuck.generation)
    assert services.documents.get_document("northpier", "memo.md") is None


def test_an_intent_left_by_a_register_killed_before_its_record_write_never_becomes_current(services, monkeypatch):
    """The next register takes the same sequence number; only the one the record names may move it on."""
    from citewell.records import current_upload, is_current

    add(services, "memo.md", "# Memo\n\nThe first memo about berth nine.\n")
    monkeypatch.setattr(services.documents, "save_document", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("power cut")))
    with pytest.raises(RuntimeError):
        register(services, IngestRequest(document_id="memo.md", tenant="northpier", allowed_roles=frozenset({"staff"}),
                                         data=b"# Memo\n\nA memo that never registered.\n", filename="memo.md"))
    monkeypatch.undo()
    (dead,) = [u for u in services.uploads.list_uploads("northpier", "memo.md") if u.seq == 2]
    live = register(services, IngestRequest(document_id="memo.md", tenant="northpier", allowed_roles=frozenset({"staff"}),
                                            data=b"# Memo\n\nThe second memo: berth nine opens at six.\n", filename="memo.md"))
    assert live.seq == dead.seq and live.generation == dead.generation
    record = services.documents.get_document("northpier", "memo.md")
    assert not is_current(record, dead) and is_current(record, live)
    assert current_upload(services.uploads, record).upload_id == live.upload_id
    report = audit(services, repair=True)  # the live upload is fresh: not stuck
    assert [f.kind for f in report.findings] == ["orphan_upload"]  # the dead intent, never the live one
    assert {u.upload_id for u in services.uploads.list_uploads("northpier", "memo.md")} >= {live.upload_id}
    assert dead.upload_id not in {u.upload_id for u in services.uploads.list_uploads("northpier", "memo.md")}


# -- an ask beside a delete ----------------------------------------------------------------


SECRET = ("# Zorbflax berth\n\nThe zorbflax berth handles reefer containers for the Quillamonte fruit line. "
          "Reefer plugs at the zorbflax berth are checked every four hours.\n")
NEEDLES = [b"quillamonte", b"fruit line"]  # the document's words, not the question's (the asker's own words are kept)


def test_an_ask_racing_a_delete_records_nothing_of_the_deleted_text(services, tmp_path, monkeypatch):
    add(services, "handbook.md", "# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n")
    add(services, "secret.md", SECRET)
    # The delete lands after retrieval and read-back, while the answer is written (the answerer reads its unit cache).
    ran = first_call_runs(monkeypatch, services.embeddings, "get_embeddings",
                          lambda: delete_document(services, "northpier", "secret.md"))
    answer = ask(services, STAFF, "How often are reefer plugs checked at the zorbflax berth?")
    monkeypatch.undo()
    assert ran and ran[0].pending == []
    assert answer.refused  # asked again, on what is there now
    record = services.answers.get_answer("northpier", answer.answer_id)
    assert answer.degraded != [SOURCES_CHANGED] and {s.document_id for s in record.considered} <= {"handbook.md"}
    assert traces(tmp_path, NEEDLES) == []
    assert tantivy_residue(tmp_path, {"Quillamonte"}) == {}
    assert audit(services).ok


# -- a model's words from a source it does not cite ---------------------------------------------


def test_a_model_answer_borrowing_words_from_an_uncited_source_is_rejected_and_recorded_with_every_source(services):
    add(services, "handbook.md", "# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n")
    add(services, "hr/leave-cases.md",
        "# Leave cases\n\nAnnual leave for Margot Vellacourt was refused because of her disciplinary review.\n", roles=("hr",))
    service, server = start()
    try:
        generator = OpenAICompatibleGenerator(base_url=service.url, model="m", api_key=None, timeout=10)
        service.replies.append(service.chat(
            'Staff get paid annual leave: "Full-time staff receive 27 days of paid annual leave per calendar year." [S1] '
            'Margot Vellacourt had hers refused pending a disciplinary review.'))
        borrowed = ask(services, BOTH, "How much annual leave do staff get, and was anyone refused leave?", generator=generator)
        assert any("uncited_evidence" in d for d in borrowed.degraded)  # the extractive fallback answered instead
        record = services.answers.get_answer("northpier", borrowed.answer_id)
        assert {s.document_id for s in record.considered} == {"handbook.md", "hr/leave-cases.md"}
        with pytest.raises(NotFound):  # it was given an hr-only source: a staff-only reader may not see it
            recorded_citations(services, STAFF, borrowed.answer_id)
        assert recorded_citations(services, BOTH, borrowed.answer_id).answer_id == borrowed.answer_id
        delete_document(services, "northpier", "hr/leave-cases.md")  # uncited, yet it withdraws the answer
        withdrawn = services.answers.get_answer("northpier", borrowed.answer_id)
        assert withdrawn.source_deleted and withdrawn.answer is None and withdrawn.question == ""
    finally:
        server.shutdown()


# -- kill -9 between a removal and its compaction, or between a switch and its purge --------------------


KILLED_AT = """
import os, signal, sys
sys.argv = ["citewell", "--home", {home!r}, *{argv!r}]
from citewell.{module} import {store}
def power_cut(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
setattr({store}, {method!r}, power_cut)
from citewell.__main__ import main
main()
"""


def killed_at(home: Path, module: str, store: str, method: str, *argv: str) -> int:
    """Run a CLI command in a child process that is killed (SIGKILL) at its first call of a store method."""
    script = KILLED_AT.format(home=str(home), argv=list(argv), module=module, store=store, method=method)
    env = {**os.environ, "CITEWELL_EMBED_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, timeout=300).returncode


def test_a_delete_killed_before_its_compaction_is_reported_and_finished_by_the_next_start(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "docs"
    folder.mkdir()
    (folder / "keep.md").write_text("# Keep\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n")
    (folder / "secret.md").write_text("# Secret\n\nThe thornquibble vault stores the plaxendor ledger for auditors.\n")
    assert cli(["--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff", "--json"]) == 0
    assert tantivy_residue(home, {"thornquibble"})  # the check sees the word while it is there
    code = killed_at(home, "index.sqlite", "SqliteSearchIndex", "compact", "delete", "docs/secret.md", "--tenant", "northpier")
    assert code == -9
    services = open_local(home)
    assert services.documents.get_document("northpier", "docs/secret.md") is None
    assert unfinished_removals(services)
    report = audit(services)  # read-only: it says so
    assert not report.ok and [f.kind for f in report.findings] == ["pending_compaction"]
    adopt_orphans(services, leases.current())  # what a restarted server runs first
    assert unfinished_removals(services) == []
    assert tantivy_residue(home, {"thornquibble", "plaxendor"}) == {}
    assert traces(home, [b"thornquibble", b"plaxendor"]) == []
    assert audit(services).ok


def test_a_delete_killed_between_its_chunk_records_and_their_vectors_leaves_no_vector_after_the_next_start(tmp_path):
    """The rerun no longer knows the deleted chunks' hashes: the start drops every cached vector no chunk uses."""
    home, folder = tmp_path / "home", tmp_path / "docs"
    folder.mkdir()
    (folder / "keep.md").write_text("# Keep\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n")
    (folder / "secret.md").write_text("# Secret\n\nThe thornquibble vault stores the plaxendor ledger for auditors.\n")
    assert cli(["--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff", "--json"]) == 0
    services = open_local(home)
    identity = services.embedder.identity
    document = services.documents.get_document("northpier", "docs/secret.md")
    secret = {c.content_hash for c in services.chunks.get_chunks("northpier", "docs/secret.md", document.active_revision)}
    assert secret <= services.embeddings.embedding_hashes(identity)
    code = killed_at(home, "metadata.sqlite", "SqliteMetadataStore", "delete_unused_embeddings",
                     "delete", "docs/secret.md", "--tenant", "northpier")
    assert code == -9
    services = open_local(home)
    adopted = adopt_orphans(services, leases.current())  # what a restarted server runs first, then the deletions it took
    for taken in adopted.deleting:
        delete_document(services, taken.tenant, taken.document_id)
    assert services.documents.get_document("northpier", "docs/secret.md") is None
    assert services.embeddings.embedding_hashes(identity) & secret == set()
    assert audit(services).ok


def test_a_replacement_killed_between_its_switch_and_its_purge_is_finished_by_the_next_start(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe gribbleworth ledger is kept in the vorpalicious cabinet.\n")
    assert cli(["--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff", "--json"]) == 0
    (folder / "notes.md").write_text("# Notes\n\nNothing to see here any more.\n")
    # bump_epoch runs right after the switch, before the purge
    code = killed_at(home, "metadata.sqlite", "SqliteMetadataStore", "bump_epoch",
                     "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff")
    assert code == -9
    services = open_local(home)
    document = services.documents.get_document("northpier", "docs/notes.md")
    assert document.purging and "Nothing to see" in search(services, STAFF, "nothing to see").hits[0].text
    assert not audit(services).ok
    adopted = adopt_orphans(services, leases.current())
    assert [d.document_id for d in adopted.purged] == ["docs/notes.md"]
    assert services.documents.get_document("northpier", "docs/notes.md").purging == []
    assert tantivy_residue(home, {"gribbleworth", "vorpalicious"}) == {}
    assert traces(home, [b"gribbleworth", b"vorpalicious"]) == []
    # Published by words, killed before its vectors: the next ingest, or audit --repair, embeds them.
    assert [f.kind for f in audit(services).findings] == ["vectors_pending"]
    assert [f.repaired for f in audit(services, repair=True).findings] == [True]
    assert audit(services).ok


def test_an_ingest_killed_between_its_word_publication_and_its_vectors_is_reported_and_finished_by_the_audit(tmp_path, capsys):
    home, folder = tmp_path / "home", tmp_path / "docs"
    folder.mkdir()
    (folder / "berths.md").write_text("# Berths\n\nBerth twelve takes reefer ships only; the quaybrindle crane serves it.\n")
    code = killed_at(home, "index.sqlite", "SqliteSearchIndex", "set_vectors",
                     "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff")
    assert code == -9
    services = open_local(home)
    (waiting,) = services.index.vectorless()
    assert waiting[:2] == ("northpier", "docs/berths.md")
    assert search(services, STAFF, "quaybrindle crane", lanes=("bm25",)).hits[0].document_id == "docs/berths.md"
    assert search(services, STAFF, "quaybrindle crane", lanes=("vector",)).hits == []
    report = audit(services)  # read-only: it says what waits, and repairs nothing
    assert not report.ok and [(f.kind, f.document_id, f.repaired) for f in report.findings] == [
        ("vectors_pending", "docs/berths.md", False)]
    assert cli(["--home", str(home), "audit", "--json"]) == 1
    assert '"vectors_pending"' in capsys.readouterr().out
    repaired = audit(services, repair=True)
    assert [(f.kind, f.repaired) for f in repaired.findings] == [("vectors_pending", True)]
    assert services.index.vectorless() == []
    assert search(services, STAFF, "quaybrindle crane", lanes=("vector",)).hits[0].document_id == "docs/berths.md"
    served_whole(services, "docs/berths.md")
    assert audit(services).ok


def chunked_berths(services):
    """berths.md registered, parsed and chunked, not published: where publication by words
    starts (skipped where the index takes whole publications only)."""
    from citewell.ingest.stages import chunk_stage, parse_stage
    from citewell.ports import StagedIndex

    if not isinstance(services.index, StagedIndex):
        pytest.skip("only the embedded index publishes by words first")
    upload = register(services, IngestRequest(document_id="berths.md", tenant="northpier", allowed_roles=frozenset({"staff"}),
                                              data=b"# Berths\n\nThe quaybrindle crane serves berth twelve.\n", filename="berths.md"))
    parsed = parse_stage(services, upload)
    chunk_stage(services, upload)
    return upload, parsed


def test_the_audit_gives_vectors_only_to_a_revision_still_served(services, monkeypatch):
    """A replacement landing while the audit embeds the waiting revision: the old rows take no
    vector and leave nothing, the new revision is served whole."""
    from citewell.ingest.stages import publish_stage

    upload, parsed = chunked_berths(services)
    assert publish_stage(services, upload, parsed.revision, parsed.content_sha256, vectors_follow=True) == 1  # then killed
    ran = first_call_runs(monkeypatch, services.index, "set_vectors",
                          lambda: add(services, "berths.md", "# Berths\n\nThe zelquarin crane serves berth twelve now.\n").status)
    report = audit(services, repair=True, stuck=timedelta(0))
    monkeypatch.undo()
    assert ran == ["published"]
    assert [f.kind for f in report.findings] == ["vectors_pending"]
    assert services.index.vectorless() == [] and services.index.revisions("northpier", "berths.md") == [
        services.documents.get_document("northpier", "berths.md").active_revision]
    served_whole(services, "berths.md")
    assert "zelquarin" in search(services, STAFF, "crane berth twelve", lanes=("vector",)).hits[0].text
    assert audit(services, stuck=timedelta(0)).ok


def test_a_replacement_beside_another_process_s_reader_says_what_is_pending_and_exits_1(tmp_path, capsys):
    home, folder = tmp_path / "home", tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe gribbleworth ledger is kept in the vorpalicious cabinet.\n")
    assert cli(["--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff"]) == 0
    readers = []
    for name in ("index.db", "metadata.db"):
        reader = sqlite3.connect(home / name, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
        readers.append(reader)
    (folder / "notes.md").write_text("# Notes\n\nNothing to see here any more.\n")
    capsys.readouterr()
    try:
        code = cli(["--home", str(home), "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff", "--json"])
    finally:
        for reader in readers:
            reader.execute("ROLLBACK")
            reader.close()
    (replaced,) = json.loads(capsys.readouterr().out)["documents"]
    assert code == 1 and replaced["status"] == "published" and replaced["pending"]
    assert cli(["--home", str(home), "audit", "--repair"]) == 0
    assert traces(home, [b"gribbleworth", b"vorpalicious"]) == []
    assert tantivy_residue(home, {"gribbleworth"}) == {}


def test_removals_are_seen_through_only_by_a_compaction_that_started_after_they_ended(tmp_path, embedder):
    services = make_services(tmp_path, embedder)
    ended, running = services.removals.begin_removal(leases.current()), services.removals.begin_removal(leases.current())
    services.removals.end_removal(ended)
    from citewell.deletion import compact

    assert unfinished_removals(services) == [ended]
    compact(services)
    assert [r.removal_id for r in services.removals.removals()] == [running]  # still running: not the compaction's to clear
    services.removals.end_removal(running)
    compact(services)
    assert services.removals.removals() == []


def test_an_upload_killed_between_its_rows_by_words_and_the_switch_is_published_whole_by_the_audit(services, monkeypatch):
    """Publication by words writes the index rows without vectors, then switches the record. A
    kill between the two leaves a fully indexed upload never switched and chunks with no
    embedding: the audit's repair embeds them before it publishes (publish_stage refuses chunks
    without one, so the repair failed and the upload stayed unswitched: the kill -9 test, at times)."""
    from citewell.ingest import stages
    from citewell.ingest.stages import publish_stage

    upload, parsed = chunked_berths(services)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed before the switch")

    monkeypatch.setattr(stages, "update_document", killed)
    with pytest.raises(KeyboardInterrupt):
        publish_stage(services, upload, parsed.revision, parsed.content_sha256, vectors_follow=True)
    monkeypatch.undo()
    from citewell.models.documents import DocumentStatus

    assert services.documents.get_document("northpier", "berths.md").status is DocumentStatus.PROCESSING
    report = audit(services, repair=True, stuck=timedelta(0))
    assert [(f.kind, f.repaired) for f in report.findings] == [("unswitched_upload", True)], report
    assert services.documents.get_document("northpier", "berths.md").status is DocumentStatus.PUBLISHED
    served_whole(services, "berths.md")
    assert search(services, STAFF, "quaybrindle crane", lanes=("vector",)).hits[0].document_id == "berths.md"
    assert audit(services, stuck=timedelta(0)).ok
