"""Deletion leaves no trace in any store, including the raw bytes of the local database files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import pytest

from citewell.answers.service import ask, recorded_citations
from citewell.deletion import STORES, delete_document, purge_revision
from citewell.errors import NotFound
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.search import search
from tests.residue import tantivy_residue

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
SECRET_ID = "quokka-memo.md"
SECRET = (
    b"# Zanzibarquokka berth\n\nThe zanzibarquokka berth handles reefer containers for the Tasmanian "
    b"fruit line. Reefer plugs at the zanzibarquokka berth are checked every four hours.\n"
)
KEEP = b"# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n"


def add(services, data: bytes, doc_id: str):
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                                 data=data, filename=doc_id)])
    assert outcome.status == "published", outcome
    return outcome


def traces(home: Path, needles: list[bytes]) -> list[str]:
    """Every file under the home whose raw bytes contain a needle (any case), every file or
    folder whose name does (a folder named after a deleted document is a trace too), and every
    lexical segment that still indexes a needle that is one distinctive word."""
    found = []
    for path in sorted(home.rglob("*")):
        name = unquote(path.relative_to(home).as_posix()).lower().encode()
        found += [f"{path.relative_to(home)}: {n.decode()} (in its name)" for n in needles if n.lower() in name]
        if path.is_file():
            data = path.read_bytes().lower()
            found += [f"{path.relative_to(home)}: {n.decode()}" for n in needles if n.lower() in data]
    # tantivy's term dictionary holds no term as plain bytes: it is asked for the distinctive words itself
    words = {w for n in needles if (w := n.decode()).isalpha() and len(w) >= 9}
    found += [f"lexical segment {segment}: {term}" for segment, terms in tantivy_residue(home, words).items() for term in terms]
    return found


NEEDLES = [b"zanzibarquokka", b"tasmanian", b"quokka-memo", b"reefer plugs"]


def test_delete_after_ingest_search_answer_and_citation_leaves_no_trace(services, tmp_path):
    add(services, KEEP, "handbook.md")
    add(services, SECRET, SECRET_ID)
    assert search(services, STAFF, "zanzibarquokka berth reefer").hits[0].document_id == SECRET_ID
    answer = ask(services, STAFF, "How often are reefer plugs checked at the zanzibarquokka berth?")
    assert not answer.refused and answer.citations[0].document_id == SECRET_ID
    kept = ask(services, STAFF, "How many days of paid annual leave do full-time staff receive?")
    assert traces(tmp_path, NEEDLES)  # the test can see the text while it is there

    secret_revision = services.documents.get_document("northpier", SECRET_ID).active_revision
    given_secret = SECRET_ID in {s.document_id for s in services.answers.get_answer("northpier", kept.answer_id).considered}
    assert any(secret_revision in i for i in services.embeddings.embedding_identities())  # its unit vectors, cached by ask
    report = delete_document(services, "northpier", SECRET_ID)
    assert not any(secret_revision in i for i in services.embeddings.embedding_identities())

    assert set(report.removed) == set(STORES)
    assert report.removed["documents"] == 1 and report.removed["raw_objects"] == 1
    assert report.removed["index_chunks"] >= 1 and report.removed["chunk_records"] >= 1
    assert report.removed["artifacts"] == 2 and report.removed["embeddings"] >= 1 and report.removed["citations"] >= 1
    assert report.removed["uploads"] == 1 and report.pending == []
    assert traces(tmp_path, NEEDLES) == []
    assert search(services, STAFF, "zanzibarquokka berth reefer").hits == [] or all(
        h.document_id != SECRET_ID for h in search(services, STAFF, "zanzibarquokka berth reefer").hits
    )
    withdrawn = recorded_citations(services, STAFF, answer.answer_id)
    assert withdrawn.source_deleted and withdrawn.answer is None and withdrawn.citations[0].deleted
    # An answer given the deleted text as evidence goes with it, cited or not; any other stays.
    kept_record = recorded_citations(services, STAFF, kept.answer_id)
    assert kept_record.answer == (None if given_secret else kept.answer) and kept_record.source_deleted == given_secret
    assert ask(services, STAFF, "How often are reefer plugs checked at the zanzibarquokka berth?").refused


def test_replacing_a_revision_leaves_nothing_of_the_old_one(services, tmp_path):
    add(services, SECRET, SECRET_ID)
    answer = ask(services, STAFF, "How often are reefer plugs checked at the zanzibarquokka berth?")
    assert not answer.refused
    add(services, b"# Berth\n\nThe berth now handles bulk grain only.\n", SECRET_ID)
    assert traces(tmp_path, [b"zanzibarquokka", b"tasmanian", b"reefer plugs"]) == []
    assert recorded_citations(services, STAFF, answer.answer_id).source_deleted


def test_deleting_an_unknown_document_is_a_clear_error_and_other_tenants_are_out_of_reach(services):
    add(services, SECRET, SECRET_ID)
    with pytest.raises(NotFound):
        delete_document(services, "northpier", "no-such.md")
    with pytest.raises(NotFound):
        delete_document(services, "bluefen", SECRET_ID)
    assert services.documents.get_document("northpier", SECRET_ID) is not None


def test_deletion_is_idempotent_and_finishes_after_a_crash_between_any_two_steps(services, tmp_path, monkeypatch):
    """A crash is injected after each step of the cascade in turn; a rerun always ends with zero residue."""
    steps = [
        ("documents", "save_document"), ("answers", "bump_epoch"), ("index", "delete_revision"),
        ("chunks", "delete_chunks"), ("objects", "delete"), ("embeddings", "delete_unused_embeddings"),
        ("index", "delete_document"), ("index", "compact"), ("documents", "delete_document"), ("removals", "compact"),
    ]
    for number, (store, method) in enumerate(steps):
        doc_id = f"memo-{number}.md"
        add(services, SECRET.replace(b"fruit line", f"fruit line {number}".encode()), doc_id)
        ask(services, STAFF, "How often are reefer plugs checked at the zanzibarquokka berth?")
        target = getattr(services, store)
        original = getattr(target, method)

        def crash(*args, **kwargs):
            raise RuntimeError("power cut")

        monkeypatch.setattr(target, method, crash)
        with pytest.raises(RuntimeError):
            delete_document(services, "northpier", doc_id)
        monkeypatch.setattr(target, method, original)
        record = services.documents.get_document("northpier", doc_id)
        assert record is None or record.status is DocumentStatus.DELETING or method == "save_document"
        assert all(h.document_id != doc_id for h in search(services, STAFF, "zanzibarquokka reefer").hits) or method == "save_document"
        try:
            delete_document(services, "northpier", doc_id)
        except NotFound:  # the crash came after the record was removed: the rerun only compacts
            assert method == "compact"
        with pytest.raises(NotFound):
            delete_document(services, "northpier", doc_id)
        assert traces(tmp_path, NEEDLES + [doc_id.encode()]) == [], (store, method)


def test_embeddings_shared_with_a_live_chunk_stay(services):
    add(services, SECRET, SECRET_ID)
    add(services, SECRET, "copy.md")  # same text, same content hash... but another title
    shared = {c.content_hash for c in services.chunks.get_chunks("northpier", "copy.md", services.documents.get_document("northpier", "copy.md").active_revision)}
    removed: Counter[str] = Counter()
    revision = services.documents.get_document("northpier", SECRET_ID).active_revision
    purge_revision(services, "northpier", SECRET_ID, revision, removed)
    assert services.embeddings.get_embeddings(services.embedder.identity, shared).keys() == shared
