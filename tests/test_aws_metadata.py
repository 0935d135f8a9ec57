"""The DynamoDB store answers "is this embedding still used?" with a strongly consistent read
of the table itself: a global secondary index is eventually consistent, so right after a
chunk record is deleted (or written) it may still say the opposite, and a purge would keep a
deleted document's embedding, or drop one a new chunk just started to use."""

from __future__ import annotations

from citewell.aws.metadata import SORT_KEY_BYTES
from citewell.models import MAX_DOCUMENT_ID_BYTES, Chunk
from tests.conftest import moto_dynamodb


def chunk(n: int, text: str, revision: str = "r1") -> Chunk:
    return Chunk(chunk_id=f"handbook.md#0#{n}", document_id="handbook.md", tenant="northpier", allowed_roles=frozenset({"staff"}),
                 revision=revision, title="Handbook", section_index=0, index=n, heading_path=["Leave"], start=0, end=len(text),
                 body_start=0, text=text)


def test_hashes_in_use_reads_the_table_consistently(monkeypatch):
    with moto_dynamodb(monkeypatch) as store:
        reads = []
        store.client.meta.events.register("before-parameter-build.dynamodb.Query",
                                          lambda params, **_: reads.append(dict(params)))
        first, second = chunk(0, "Staff get 27 days."), chunk(1, "Report sickness early.")
        store.put_chunks([first, second])
        reads.clear()
        assert store.hashes_in_use([first.content_hash, "unused"]) == {first.content_hash}
        assert reads and all(r.get("ConsistentRead") is True and "IndexName" not in r for r in reads), reads
        store.delete_chunks("northpier", "handbook.md", "r1")
        assert store.hashes_in_use([first.content_hash, second.content_hash]) == set()
        # the same text in two revisions: deleting one leaves it in use
        store.put_chunks([chunk(0, "Staff get 27 days.", "r1"), chunk(0, "Staff get 27 days.", "r2")])
        store.delete_chunks("northpier", "handbook.md", "r1")
        assert store.hashes_in_use([first.content_hash]) == {first.content_hash}


def test_references_fit_for_the_longest_ids_and_keep_the_spelling_of_those_that_fit(monkeypatch):
    longest = "d" * MAX_DOCUMENT_ID_BYTES
    long = chunk(999, "Staff get 27 days.").model_copy(update={
        "tenant": "t" * 64, "revision": "f" * 64, "document_id": longest, "chunk_id": Chunk.make_id(longest, 99, 999)})
    with moto_dynamodb(monkeypatch) as store:
        store.put_chunks([long])
        store.put_chunks([chunk(0, "Report sickness early.")])
        references = {i["sk"] for i in store.table.scan()["Items"] if i["pk"].startswith("H#")}
        assert "REF#northpier#handbook.md#r1#handbook.md#0#0" in references  # written before: the same key
        assert len(references) == 2 and all(len(sk.encode()) <= SORT_KEY_BYTES for sk in references)
        assert store.hashes_in_use([long.content_hash]) == {long.content_hash}
        store.delete_chunks(long.tenant, longest, long.revision)
        assert store.hashes_in_use([long.content_hash]) == set()  # its reference went with it


def test_the_audit_inventories_query_and_never_scan(monkeypatch):
    import numpy as np

    from citewell.models import AnswerRecord, Document, Upload

    with moto_dynamodb(monkeypatch) as store:
        operations = []
        store.client.meta.events.register("before-parameter-build.dynamodb", lambda model, **_: operations.append(model.name))
        for tenant in ("northpier", "bluefen"):
            upload = Upload(tenant=tenant, document_id="handbook.md", upload_id="1" * 32, seq=1, generation="2" * 32,
                            allowed_roles=frozenset({"staff"}), title="Handbook")
            store.put_upload(upload)
            assert store.save_document(Document(tenant=tenant, document_id="handbook.md", allowed_roles=frozenset({"staff"}),
                                                title="Handbook", source="", upload_seq=1, generation="2" * 32))
        store.put_chunks([chunk(0, "Staff get 27 days.")])
        store.put_embeddings("model@1:2", {"h": np.ones(2, dtype=np.float32)})
        store.put_cached_answer("key", "bluefen", 0, "a" * 32)
        store.put_answer(AnswerRecord.model_validate({
            "answer_id": "b" * 32, "tenant": "northpier", "roles": ["staff"], "question": "q", "answer": "a", "refused": False,
            "generator": "extractive", "citations": [{"ref": "S1", "chunk_id": "handbook.md#0#0", "document_id": "handbook.md", "revision": "r1"}]}))
        operations.clear()
        assert sorted((d.tenant, d.document_id) for d in store.all_documents()) == [("bluefen", "handbook.md"), ("northpier", "handbook.md")]
        assert sorted(u.tenant for u in store.upload_inventory()) == ["bluefen", "northpier"]
        assert store.chunk_inventory() == [("northpier", "handbook.md", "r1", 1)]
        assert store.cache_inventory() == [("bluefen", "a" * 32)]
        assert store.citation_inventory() == [("northpier", "handbook.md", "r1", "b" * 32)]
        assert store.embedding_identities() == {"model@1:2": 1}
        assert operations and "Scan" not in operations, operations
        store.delete_identity("model@1:2")
        assert store.embedding_identities() == {}
