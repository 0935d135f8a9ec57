"""The revision audit finds each kind of planted inconsistency, and --repair fixes it."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from citewell.answers.service import ask, cache_key
from citewell.audit import audit
from citewell.deletion import delete_document
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest, register
from citewell.keys import parsed_key, raw_key
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.search import search
from tests.integrity.test_deletion import NEEDLES, SECRET, traces

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
HANDBOOK = b"# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n"


def add(services, data=HANDBOOK, doc_id="handbook.md"):
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                                 data=data, filename=doc_id)])
    return outcome


def kinds(report) -> list[str]:
    return sorted(f.kind for f in report.findings)


def test_a_consistent_home_is_ok(services):
    add(services)
    ask(services, STAFF, "How many days of paid annual leave?")
    report = audit(services)
    assert report.ok and report.findings == []


def test_orphan_and_missing_index_chunks(services):
    outcome = add(services)
    chunks = services.chunks.get_chunks("northpier", "handbook.md", outcome.revision)
    stale = [c.model_copy(update={"revision": "0" * 64}) for c in chunks]
    services.index.upsert(stale, np.zeros((len(stale), 384), dtype=np.float32), services.embedder.identity)
    assert kinds(audit(services)) == ["orphan_index_chunks"]

    services.index.delete_revision("northpier", "handbook.md", outcome.revision)
    assert kinds(audit(services)) == ["missing_revision", "orphan_index_chunks"]
    repaired = audit(services, repair=True)
    assert repaired.ok and all(f.repaired for f in repaired.findings)
    assert services.index.count("northpier", "handbook.md", outcome.revision) == len(chunks)
    assert services.index.count("northpier", "handbook.md", "0" * 64) == 0
    assert search(services, STAFF, "annual leave").hits
    assert audit(services).findings == []


def test_stuck_documents_are_marked_failed(services):
    register(services, IngestRequest(document_id="half.md", tenant="northpier", allowed_roles=frozenset({"staff"}),
                                     data=HANDBOOK, filename="half.md"))
    assert audit(services).findings == []  # in flight, not yet stuck
    report = audit(services, repair=True, stuck=timedelta(0))
    assert kinds(report) == ["stuck"] and report.ok
    record = services.documents.get_document("northpier", "half.md")
    assert record.status is DocumentStatus.FAILED and record.error.code == "stuck"


def test_orphan_records_objects_and_foreign_embeddings(services):
    outcome = add(services)
    chunks = services.chunks.get_chunks("northpier", "handbook.md", outcome.revision)
    services.chunks.put_chunks([c.model_copy(update={"revision": "1" * 64}) for c in chunks])
    ghost = raw_key("northpier", "ghost.md", "3" * 32)
    services.objects.put(ghost, b"no record")
    services.objects.put(parsed_key("northpier", "handbook.md", "2" * 32), b"{}")
    services.embeddings.put_embeddings("another-model@3:384", {"abc": np.zeros(384, dtype=np.float32)})
    report = audit(services)
    assert not report.ok
    assert kinds(report) == ["foreign_embeddings", "orphan_chunk_records", "orphan_object", "orphan_object"]
    assert audit(services, repair=True).ok
    assert audit(services).findings == []
    assert services.chunks.get_chunks("northpier", "handbook.md", "1" * 64) == []
    assert not services.objects.exists(ghost)
    assert services.chunks.get_chunks("northpier", "handbook.md", outcome.revision)  # the served one stays


def test_dangling_citations_and_cache_entries(services):
    add(services)
    answer = ask(services, STAFF, "How many days of paid annual leave do full-time staff receive?")
    assert not answer.refused
    services.documents.delete_document("northpier", "handbook.md")  # a record lost without its cascade
    services.answer_cache.put_cached_answer(cache_key(STAFF, "other", 0, "extractive"), "northpier", 0, "no-such-answer")
    # An intent without a record is a register in progress until the time limit: judged past it.
    assert {"dangling_citation", "dangling_cache", "orphan_index_chunks", "orphan_chunk_records"} <= set(kinds(audit(services)))
    report = audit(services, stuck=timedelta(0))
    assert {"dangling_citation", "dangling_cache", "orphan_index_chunks", "orphan_chunk_records", "orphan_object",
            "orphan_upload"} <= set(kinds(report))
    assert audit(services, repair=True, stuck=timedelta(0)).ok
    assert audit(services).findings == []
    assert services.answers.get_answer("northpier", answer.answer_id).source_deleted


@pytest.mark.parametrize(
    ("store", "method"),
    [("answers", "bump_epoch"), ("index", "delete_revision"), ("chunks", "delete_chunks"), ("objects", "delete"),
     ("embeddings", "delete_unused_embeddings"), ("index", "delete_document"), ("index", "compact"),
     ("documents", "delete_document"), ("removals", "compact")],
)
def test_an_interrupted_deletion_is_finished_by_the_audit(services, tmp_path, monkeypatch, store, method):
    add(services, SECRET, "quokka-memo.md")
    ask(services, STAFF, "How often are reefer plugs checked at the zanzibarquokka berth?")

    def crash(*args, **kwargs):
        raise RuntimeError("power cut")

    monkeypatch.setattr(getattr(services, store), method, crash)
    with pytest.raises(RuntimeError):
        delete_document(services, "northpier", "quokka-memo.md")
    monkeypatch.undo()
    assert audit(services, repair=True, stuck=timedelta(0)).ok
    assert traces(tmp_path, NEEDLES + [b"quokka-memo"]) == []
    assert audit(services).findings == []
