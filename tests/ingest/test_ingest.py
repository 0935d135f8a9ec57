"""Ingestion through the real local stores: revisions, failures, caching, identity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from citewell.errors import EmbedderMismatch
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest, chunk_stage, embed_stage, parse_stage, publish_stage, register
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.search import search
from tests.conftest import make_services

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
HR = Identity(tenant="northpier", roles=frozenset({"hr"}))

V1 = b"# Leave\n\nStaff receive 27 days of annual leave.\n\n# Sick leave\n\nReport sickness before your shift.\n\n# Hours\n\nShifts last eight hours.\n"
V2 = V1.replace(b"27 days", b"30 days")


class CountingEmbedder:
    """Delegates to the real model and counts the texts it was asked to embed."""

    def __init__(self, inner, identity: str | None = None) -> None:
        self.inner = inner
        self.identity = identity or inner.identity
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.embed(texts)


def request(data: bytes = V1, doc_id: str = "handbook.md", roles=("staff",), **extra) -> IngestRequest:
    return IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset(roles), data=data,
                         filename=doc_id, **extra)


def test_first_ingest_publishes_and_reingest_of_same_content_is_a_noop(services):
    (first,) = ingest(services, [request()])
    assert first.status == "published" and first.chunks == 3
    counting = CountingEmbedder(services.embedder)
    services.embedder = counting
    (second,) = ingest(services, [request()])
    assert second.status == "unchanged" and second.revision == first.revision and second.chunks == 3
    assert counting.texts == 0
    assert services.index.count("northpier", "handbook.md", first.revision) == 3


def test_changed_content_switches_revision_and_leaves_nothing_of_the_old(services):
    (old,) = ingest(services, [request(V1)])
    (new,) = ingest(services, [request(V2)])
    assert new.status == "published" and new.revision != old.revision
    document = services.documents.get_document("northpier", "handbook.md")
    assert document.active_revision == new.revision and document.status is DocumentStatus.PUBLISHED
    assert services.index.count("northpier", "handbook.md", old.revision) == 0
    assert services.chunks.get_chunks("northpier", "handbook.md", old.revision) == []
    assert [key.rsplit("/", 1)[1].removesuffix(".json") for key in services.objects.list("")] == [document.active_upload] * 3
    texts = [h.text for h in search(services, STAFF, "how many days of annual leave").hits]
    assert any("30 days" in t for t in texts) and not any("27 days" in t for t in texts)


def test_only_changed_chunks_are_embedded(services):
    ingest(services, [request(V1)])
    counting = CountingEmbedder(services.embedder)
    services.embedder = counting
    ingest(services, [request(V2)])
    assert counting.texts == 1  # one of three sections changed


def test_a_failing_file_is_recorded_and_the_batch_goes_on(services):
    outcomes = ingest(services, [request(doc_id="a.md"), request(b"not a pdf", doc_id="b.pdf"), request(doc_id="c.md")])
    assert [o.status for o in outcomes] == ["published", "failed", "published"]
    assert outcomes[1].error.code == "type_mismatch"
    record = services.documents.get_document("northpier", "b.pdf")
    assert record.status is DocumentStatus.FAILED and record.error.code == "type_mismatch"
    assert record.active_revision is None


def test_a_failed_update_keeps_serving_the_previous_revision(services):
    (good,) = ingest(services, [request(V1, doc_id="handbook.txt")])
    (bad,) = ingest(services, [request(b"\x00\x01binary\x00" * 50, doc_id="handbook.txt")])
    assert bad.status == "failed" and bad.error.code == "unsupported_type"
    record = services.documents.get_document("northpier", "handbook.txt")
    assert record.active_revision == good.revision and record.status is DocumentStatus.FAILED
    assert search(services, STAFF, "annual leave").hits


def test_changing_roles_with_the_same_content_republishes_access(services):
    ingest(services, [request(roles=("staff",))])
    (again,) = ingest(services, [request(roles=("hr",))])
    assert again.status == "published"
    assert search(services, STAFF, "annual leave").hits == []
    assert search(services, HR, "annual leave").hits
    assert search(services, STAFF, "annual leave", lanes=("bm25",)).hits == []


def stages_until_indexed(services, data=V1, **extra):
    """Register, parse, chunk, embed and index an upload, stopping right before its publish."""
    upload = register(services, request(data, **extra))
    parsed = parse_stage(services, upload)
    chunked = chunk_stage(services, upload)
    embed_stage(services, chunked.chunks)
    vectors = services.embeddings.get_embeddings(services.embedder.identity, [c.content_hash for c in chunked.chunks])
    services.index.upsert(chunked.chunks, np.stack([vectors[c.content_hash] for c in chunked.chunks]), services.embedder.identity)
    return upload, parsed


def test_a_crash_before_the_switch_leaves_the_previous_revision_served(services):
    (old,) = ingest(services, [request(V1)])
    upload, parsed = stages_until_indexed(services, V2)  # then "crash"
    # Both revisions are in the index now; only the active one may be served.
    hits = search(services, STAFF, "annual leave days").hits
    assert hits and {h.revision for h in hits} == {old.revision}
    # The rerun of publish finishes the job.
    assert publish_stage(services, upload, parsed.revision, parsed.content_sha256) == 3
    assert {h.revision for h in search(services, STAFF, "annual leave days").hits} == {parsed.revision}
    assert services.index.count("northpier", "handbook.md", old.revision) == 0


def test_publish_twice_is_a_noop(services):
    upload = register(services, request())
    parsed = parse_stage(services, upload)
    embed_stage(services, chunk_stage(services, upload).chunks)
    assert publish_stage(services, upload, parsed.revision, parsed.content_sha256) == 3
    assert publish_stage(services, upload, parsed.revision, parsed.content_sha256) == 3
    assert services.index.count("northpier", "handbook.md", parsed.revision) == 3


def test_an_index_refuses_another_embedding_model(tmp_path, embedder):
    services = make_services(tmp_path, embedder)
    ingest(services, [request()])
    other = CountingEmbedder(embedder, identity="other-model@2:384")
    renamed = make_services(tmp_path, embedder, embedder=other)
    with pytest.raises(EmbedderMismatch):
        ingest(renamed, [request(doc_id="more.md")])
    with pytest.raises(EmbedderMismatch):
        search(renamed, STAFF, "annual leave")
    assert other.texts == 1  # only the question was embedded; no document was


def test_an_id_no_record_can_hold_fails_alone(services):
    outcomes = ingest(services, [request(doc_id="bad#id.md"), request(doc_id="../escape.md"), request(doc_id="fine.md")])
    assert [o.status for o in outcomes] == ["failed", "failed", "published"]
    assert {o.error.code for o in outcomes[:2]} == {"invalid_input"}
    assert services.documents.get_document("northpier", "bad#id.md") is None
    (key,) = services.objects.list("raw")
    assert key.startswith("raw/northpier/fine.md/")


def test_the_record_names_the_encoding_its_text_was_read_in(services):
    text = "# Menu\n\nLa crème brûlée costs €5 at the “harbour” café.\n".encode("cp1252")
    (outcome,) = ingest(services, [request(text, doc_id="menu.txt")])
    assert outcome.status == "published"
    record = services.documents.get_document("northpier", "menu.txt")
    assert record.encoding == "cp1252"
    assert search(services, STAFF, "crème brûlée").hits[0].text.count("€5") == 1


def test_a_document_deleted_while_it_is_embedded_stops_costing_the_model(tmp_path, embedder):
    """A 20 MB file deleted mid-ingest kept the model busy for 21 minutes: the ingest now asks
    before each slice whether the revision is still served, and leaves nothing of it behind."""
    from citewell.deletion import delete_document
    from citewell.ingest.stages import EMBED_SLICE

    counting = CountingEmbedder(embedder)
    services = make_services(tmp_path, embedder, counting)
    text = "\n\n".join(f"# Part {p}\n\n" + " ".join(f"Shift {p} moves crate {w} to bay {w % 7}." for w in range(40))
                       for p in range(150))
    deleted, planned = [], []

    class DeleteAfterTheFirstSlice:
        def step(self, stage: str, document_id: str) -> None:
            pass

        def embedding(self, done: int, total: int) -> None:
            planned.append(total)
            if done and not deleted:  # another process's `citewell delete`, at this moment
                deleted.append(delete_document(services, "northpier", "big.md"))

        def finished(self, outcome) -> None:
            pass

        def advance(self, stage: str, done: int, total: int) -> None:
            pass

    [outcome] = ingest(services, [request(text.encode(), "big.md")], progress=DeleteAfterTheFirstSlice())
    assert outcome.status == "published" and deleted  # published by words first, deleted while its vectors were made
    assert planned[0] > 2 * EMBED_SLICE and counting.texts == EMBED_SLICE and planned[-1] == EMBED_SLICE
    assert services.documents.get_document("northpier", "big.md") is None
    assert not services.index.inventory() and not services.embeddings.embedding_hashes(embedder.identity)
