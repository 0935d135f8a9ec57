"""The DynamoDB store answers "is this embedding still used?" with a strongly consistent read
of the table itself: a global secondary index is eventually consistent, so right after a
chunk record is deleted (or written) it may still say the opposite, and a purge would keep a
deleted document's embedding, or drop one a new chunk just started to use."""

from __future__ import annotations

from citewell.metadata.dynamodb import SORT_KEY_BYTES
from citewell.models.chunks import Chunk
from citewell.models.values import MAX_DOCUMENT_ID_BYTES
from tests.conftest import moto_dynamodb
from tests.contract.test_contract_metadata import citations


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

    from citewell.models.answers import AnswerRecord
    from citewell.models.documents import Document, Upload

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
        assert citations(store) == [("northpier", "handbook.md", "r1", "b" * 32)]
        assert store.embedding_identities() == {"model@1:2": 1}
        assert operations and "Scan" not in operations, operations
        store.delete_identity("model@1:2")
        assert store.embedding_identities() == {}


def test_bulk_reads_take_keys_only_and_miss_no_key_at_a_range_bound(monkeypatch):
    """The embedding partition is read in sort-key ranges at once: a key on a bound, or not hex
    at all, is read exactly once; every Query names a projection (a whole vector item read per
    key is what made the audit too slow at 1M chunks); deletes go 25 keys a call."""
    import numpy as np

    with moto_dynamodb(monkeypatch) as store:
        keys = ["0", "1", "1" + "f" * 63, "2", "9zz", "a", "f", "f" * 64, "g", "A", "~", "", "-"]
        keys = [k for k in keys if k]  # DynamoDB refuses an empty sort key
        store.put_embeddings("minilm", {k: np.ones(4, dtype=np.float32) for k in keys})
        calls = []
        store.client.meta.events.register("before-parameter-build.dynamodb",
                                          lambda params, model, **_: calls.append((model.name, dict(params))))
        assert store.embedding_hashes("minilm") == set(keys)
        queries = [p for name, p in calls if name == "Query"]
        assert len(queries) == 16 and all(p.get("ProjectionExpression") == "sk" for p in queries), queries
        calls.clear()
        assert store.delete_identity("minilm") == len(keys)
        writes = [p for name, p in calls if name == "BatchWriteItem"]
        assert writes and all(len(p["RequestItems"][store.table.name]) <= 25 for p in writes)
        assert store.embedding_hashes("minilm") == set()


def test_a_delete_of_many_chunks_removes_every_record_reference_and_embedding(monkeypatch):
    import numpy as np

    with moto_dynamodb(monkeypatch) as store:
        chunks = [chunk(n, f"Clause {n} of the leave policy.") for n in range(120)]
        store.put_chunks(chunks)
        hashes = {c.content_hash for c in chunks}
        store.put_embeddings("minilm", {h: np.ones(4, dtype=np.float32) for h in hashes})
        assert store.hashes_in_use(hashes) == hashes
        assert store.delete_chunks("northpier", "handbook.md", "r1") == 120
        assert store.hashes_in_use(hashes) == set()
        assert store.delete_unused_embeddings("minilm", hashes) == 120
        assert store.get_chunks("northpier", "handbook.md", "r1") == [] and store.embedding_hashes("minilm") == set()
