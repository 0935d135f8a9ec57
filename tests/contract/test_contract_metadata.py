"""One contract for every MetadataStore adapter, SQLite and DynamoDB (moto), port by port: a class per
record role (``citewell.ports.records``), each test run on both stores."""

from __future__ import annotations

import numpy as np
import pytest

from citewell.metadata.sqlite import SqliteMetadataStore
from citewell.models.answers import AnswerRecord, Citation, Outcome, SourceRef
from citewell.models.chunks import Chunk
from citewell.models.documents import Document, DocumentStatus, Upload
from citewell.ports import AnswerRecords
from tests.conftest import moto_dynamodb


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request, tmp_path, monkeypatch):
    if request.param == "sqlite":
        yield SqliteMetadataStore(tmp_path / "metadata.db")
        return
    with moto_dynamodb(monkeypatch) as dynamo:
        yield dynamo


GEN = "a" * 32


def document(doc_id="handbook.md", tenant="northpier", **extra) -> Document:
    return Document(document_id=doc_id, tenant=tenant, allowed_roles=frozenset({"staff"}), title="Handbook", source="test", **extra)


def chunk(n: int, revision="r1", doc_id="handbook.md", text=None) -> Chunk:
    body = text or f"Passage number {n} about annual leave."
    return Chunk(chunk_id=f"{doc_id}#0#{n}", document_id=doc_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                 revision=revision, title="Handbook", section_index=0, index=n, heading_path=["Leave"], start=n * 40,
                 end=n * 40 + len(body), body_start=n * 40, text=body)


def citations(store: AnswerRecords) -> list[tuple[str, str, str, str]]:
    """``(tenant, document_id, revision, answer_id)`` of every source an answer rests on, read
    through the port as the audit reads it (every cited document's citations, none served)."""
    return [(tenant, document_id, revision, answer_id) for tenant, document_id in store.cited_documents()
            for revision, answer_id in store.stale_citations(tenant, document_id, None)]


class TestDocumentRecords:
    """DocumentRecords: get, get many, list, page, find, save (compare-and-set), delete; every record."""

    def test_documents_are_written_only_by_compare_and_set(self, store):
        assert store.get_document("northpier", "handbook.md") is None
        first = store.save_document(document(generation=GEN))
        assert first is not None and first.version == 1
        assert store.save_document(document(generation=GEN)) is None  # version 0 means "no record yet": it exists
        assert store.save_document(document("other.md", generation=GEN)) and store.save_document(document("handbook.md", tenant="bluefen"))
        assert [d.document_id for d in store.list_documents("northpier")] == ["handbook.md", "other.md"]
        assert set(store.get_documents("northpier", ["handbook.md", "absent.md"])) == {"handbook.md"}
        published = store.save_document(first.model_copy(update={"active_revision": "r1", "status": DocumentStatus.PUBLISHED}))
        assert published is not None and published.version == 2
        # A writer that read version 1 lost the race: nothing it wrote lands.
        assert store.save_document(first.model_copy(update={"status": DocumentStatus.FAILED})) is None
        record = store.get_document("northpier", "handbook.md")
        assert (record.active_revision, record.status, record.version) == ("r1", DocumentStatus.PUBLISHED, 2)
        assert store.get_document("bluefen", "handbook.md").active_revision is None
        assert store.delete_document("northpier", "handbook.md", generation="f" * 32) == 0  # another life of the record
        assert store.delete_document("northpier", "other.md") == 1 and store.delete_document("northpier", "other.md") == 0
        assert {(d.tenant, d.document_id) for d in store.all_documents()} == {("northpier", "handbook.md"), ("bluefen", "handbook.md")}
        assert store.delete_document("northpier", "handbook.md", generation=GEN) == 1

    def test_a_listing_comes_in_pages_by_key_with_only_what_the_reader_may_read(self, store):
        from citewell.models.identity import Identity

        for n in range(23):  # every third one is for hr only; ids sort as the store sorts them
            roles = frozenset({"hr"}) if n % 3 == 0 else frozenset({"staff", "support"})
            store.save_document(Document(document_id=f"doc-{n:02}.md", tenant="northpier", allowed_roles=roles, title="t", source="test"))
        store.save_document(document("doc-99.md", tenant="bluefen"))
        staff = Identity(tenant="northpier", roles=frozenset({"staff"}))
        seen, after, pages = [], None, 0
        while True:
            page = store.page_documents("northpier", 4, after, reader=staff)
            assert len(page.documents) <= 4 and all("staff" in d.allowed_roles and d.tenant == "northpier" for d in page.documents)
            seen += [d.document_id for d in page.documents]
            pages += 1
            if (after := page.after) is None:
                break
        readable = [f"doc-{n:02}.md" for n in range(23) if n % 3]
        assert seen == readable and pages == 4  # 15 records: 4 + 4 + 4 + 3, never an hr one, never counted
        everything = store.page_documents("northpier", 100)  # the operator's: every record of the tenant
        assert [d.document_id for d in everything.documents] == [f"doc-{n:02}.md" for n in range(23)] and everything.after is None
        exact = store.page_documents("northpier", 15, reader=staff)
        assert len(exact.documents) == 15 and exact.after is None  # a page that ends the listing says so
        assert store.page_documents("northpier", 5, "doc-22.md", reader=staff) == type(exact)([], None)
        assert store.page_documents("northpier", 5, "doc-05", reader=staff).documents[0].document_id == "doc-05.md"  # any key resumes
        for nobody in (Identity(tenant="northpier"), Identity(tenant="bluefen", roles=frozenset({"hr"})), Identity(roles=frozenset({"staff"}))):
            assert store.page_documents("northpier", 5, reader=nobody).documents == []

    def test_a_dynamodb_listing_reads_a_bounded_number_of_records_a_page(self, monkeypatch):
        """A reader of 2 of 30 records gets short pages that still go on, each read bounded, never a miss."""
        from citewell.metadata import dynamodb as dynamo
        from citewell.models.identity import Identity

        with moto_dynamodb(monkeypatch) as store:
            for n in range(30):
                roles = frozenset({"staff"}) if n in (3, 27) else frozenset({"hr"})
                store.save_document(Document(document_id=f"doc-{n:02}.md", tenant="northpier", allowed_roles=roles, title="t", source="test"))
            monkeypatch.setattr(dynamo, "PAGE_READ", 10)
            staff, after, pages = Identity(tenant="northpier", roles=frozenset({"staff"})), None, []
            while True:
                page = store.page_documents("northpier", 5, after, reader=staff)
                pages.append([d.document_id for d in page.documents])
                if (after := page.after) is None:
                    break
            assert pages == [["doc-03.md"], [], ["doc-27.md"]]


class TestUploadRecords:
    """UploadRecords: upload intents by document, oldest first."""

    def test_upload_intents(self, store):
        uploads = [Upload(upload_id=f"{n:032x}", seq=n, generation=GEN, document_id=doc, tenant="northpier",
                          allowed_roles=frozenset({"hr"}), source="test")
                   for n, doc in ((2, "guide"), (1, "guide"), (3, "guide/intro.md"))]
        for upload in uploads:
            store.put_upload(upload)
        assert [u.seq for u in store.list_uploads("northpier", "guide")] == [1, 2]  # in order; not guide/intro.md's
        assert store.get_upload("northpier", "guide", f"{2:032x}") == uploads[0]
        assert store.get_upload("bluefen", "guide", f"{2:032x}") is None
        assert store.delete_upload("northpier", "guide", f"{2:032x}") == 1 and store.delete_upload("northpier", "guide", f"{2:032x}") == 0
        assert sorted(u.seq for u in store.upload_inventory()) == [1, 3]


class TestChunkRecords:
    """ChunkRecords: a revision's records replaced whole, looked up by id, their hashes in use."""

    def test_chunk_records_replace_a_revision_and_answer_lookups(self, store):
        store.put_chunks([chunk(0), chunk(1), chunk(2)])
        store.put_chunks([chunk(0), chunk(1)])  # the same revision again: exactly these now
        store.put_chunks([chunk(0, revision="r2", text="Changed passage.")])
        assert [c.chunk_id for c in store.get_chunks("northpier", "handbook.md", "r1")] == ["handbook.md#0#0", "handbook.md#0#1"]
        assert store.chunk_revisions("northpier", "handbook.md") == ["r1", "r2"]
        found = store.get_chunks_by_id("northpier", [("handbook.md", "r1", "handbook.md#0#1"), ("handbook.md", "r1", "handbook.md#0#9")])
        assert list(found) == [("handbook.md", "r1", "handbook.md#0#1")]
        hashes = {chunk(0).content_hash, chunk(5).content_hash}
        assert store.hashes_in_use(hashes) == {chunk(0).content_hash}
        assert sorted(store.chunk_inventory()) == [("northpier", "handbook.md", "r1", 2), ("northpier", "handbook.md", "r2", 1)]
        assert store.delete_chunks("northpier", "handbook.md", "r1") == 2
        assert store.get_chunks("northpier", "handbook.md", "r1") == [] and store.chunk_revisions("northpier", "handbook.md") == ["r2"]

    def test_a_revision_is_read_a_page_at_a_time_each_record_once(self, store):
        store.put_chunks([chunk(n) for n in range(7)])
        store.put_chunks([chunk(0, revision="r2")])  # another revision's record is never in a page
        pages = list(store.chunk_pages("northpier", "handbook.md", "r1", 3))
        assert [len(p) for p in pages] == [3, 3, 1]
        read = [c for p in pages for c in p]
        assert [c.chunk_id for c in read] == sorted(c.chunk_id for c in read)  # chunk-id order
        assert sorted(read, key=lambda c: c.index) == store.get_chunks("northpier", "handbook.md", "r1")
        assert [len(p) for p in store.chunk_pages("northpier", "handbook.md", "r1", 7)] == [7]
        assert list(store.chunk_pages("northpier", "handbook.md", "r9", 3)) == []

    def test_chunk_records_keep_their_page_and_row_maps(self, store):
        mapped = chunk(0).model_copy(update={"pages": [1, 2], "page_starts": [(0, 1), (19, 2)]})
        rows = chunk(1).model_copy(update={"sheet": "Codes", "rows": [4, 6], "row_starts": [(0, 4), (12, 6)]})
        store.put_chunks([mapped, rows, chunk(2)])
        found = store.get_chunks("northpier", "handbook.md", "r1")
        assert [c.page_starts for c in found] == [[(0, 1), (19, 2)], [], []]
        assert [c.row_starts for c in found] == [[], [(0, 4), (12, 6)], []]
        assert found == [mapped, rows, chunk(2)]
        assert "page_starts" not in chunk(2).record_json()  # a chunk on one page stores no map at all


    def test_a_revision_is_read_a_bounded_page_at_a_time(self, store):
        chunks = [chunk(n) for n in range(1100)]
        store.put_chunks(chunks + [chunk(0, revision="r2")])
        pages = list(store.chunk_pages("northpier", "handbook.md", "r1"))
        assert len(pages) >= 2 and all(0 < len(p) <= 1000 for p in pages)  # SQLite's 500 a statement; DynamoDB's 1,000
        assert sorted(c.chunk_id for p in pages for c in p) == sorted(c.chunk_id for c in chunks)
        assert list(store.chunk_pages("northpier", "handbook.md", "r9")) == []

    def test_access_is_rewritten_over_pages_in_place_and_references_follow_the_title(self, store):
        chunks = [chunk(n) for n in range(1100)]  # more than a page of either store
        store.put_chunks(chunks)
        store.put_chunks([chunk(0, revision="r2")])  # another revision, with chunk 0's text and title
        assert store.set_access("northpier", "handbook.md", "r1", frozenset({"hr"}), "Pay") == 1100
        found = store.get_chunks("northpier", "handbook.md", "r1")
        assert found == [c.model_copy(update={"allowed_roles": frozenset({"hr"}), "title": "Pay"}) for c in chunks]  # in order
        assert store.get_chunks("northpier", "handbook.md", "r2") == [chunk(0, revision="r2")]
        old, new = {c.content_hash for c in chunks}, {c.content_hash for c in found}
        assert not old & new and store.hashes_in_use(new) == new  # the title is embedded: new hashes, referenced
        assert store.hashes_in_use(old) == {chunk(0).content_hash}  # the old ones only where r2 still uses one
        assert store.chunk_inventory() == [("northpier", "handbook.md", "r1", 1100), ("northpier", "handbook.md", "r2", 1)]
        assert store.set_access("northpier", "handbook.md", "r9", frozenset({"hr"}), "Pay") == 0


class TestEmbeddingCache:
    """EmbeddingCache: vectors by identity and hash."""

    def test_embedding_cache(self, store):
        v = np.arange(384, dtype=np.float32)
        store.put_embeddings("model@1:384", {"h1": v, "h2": v * 2})
        store.put_embeddings("other@2:384", {"h1": v})
        got = store.get_embeddings("model@1:384", ["h1", "h2", "h3"])
        assert set(got) == {"h1", "h2"} and np.array_equal(got["h2"], v * 2)
        assert store.embedding_identities() == {"model@1:384": 2, "other@2:384": 1}
        assert store.delete_embeddings("model@1:384", ["h1", "h9"]) == 1
        assert store.delete_identity("other@2:384") == 1 and store.embedding_identities() == {"model@1:384": 1}

    def test_only_the_embeddings_no_chunk_record_uses_are_dropped_as_unused(self, store):
        v = np.ones(384, dtype=np.float32)
        used, unused = chunk(0).content_hash, chunk(1).content_hash
        store.put_chunks([chunk(0)])
        store.put_embeddings("model@1:384", {used: v, unused: v})
        assert store.embedding_hashes("model@1:384") == {used, unused} and store.embedding_hashes("other@2:384") == set()
        assert store.delete_unused_embeddings("model@1:384", [used, unused]) == 1
        assert store.embedding_hashes("model@1:384") == {used}


    def test_the_cache_is_read_a_range_of_hashes_at_a_time(self, store):
        v = np.ones(384, dtype=np.float32)
        keys = ["0" * 64, "1" + "a" * 63, "9" * 64, "a" * 64, "abc", "f" * 64]
        store.put_embeddings("model@1:384", dict.fromkeys(keys, v))
        assert store.embedding_hashes("model@1:384", None, "1") == {"0" * 64}
        assert store.embedding_hashes("model@1:384", "1", "a") == {"1" + "a" * 63, "9" * 64}  # from low, below high
        assert store.embedding_hashes("model@1:384", "a", "b") == {"a" * 64, "abc"}  # any key, not only a hash
        assert store.embedding_hashes("model@1:384", "f", None) == {"f" * 64}


class TestAnswerRecords:
    """AnswerRecords: answers and their citations, the answer cache, tenant epochs."""

    def test_answers_citations_cache_and_epochs(self, store):
        cited = Citation(ref="S1", chunk_id="handbook.md#0#0", document_id="handbook.md", revision="r1", title="Handbook",
                         section_path=["Leave"], quote="27 days")
        record = AnswerRecord(answer_id="a1", tenant="northpier", roles=["staff"], question="leave?", answer="27 days [S1]",
                              refused=False, citations=[cited], generator="extractive")
        store.put_answer(record)
        assert store.get_answer("northpier", "a1") == record and store.get_answer("bluefen", "a1") is None
        assert [a.answer_id for a in store.answers_citing("northpier", "handbook.md")] == ["a1"]
        assert store.answers_citing("northpier", "handbook.md", "r2") == []
        assert citations(store) == [("northpier", "handbook.md", "r1", "a1")]
        withdrawn = record.model_copy(update={"citations": [Citation(ref="S1", deleted=True)], "answer": None})
        store.put_answer(withdrawn)
        assert store.answers_citing("northpier", "handbook.md") == [] and citations(store) == []
        refusal = record.model_copy(update={"answer_id": "a3", "answer": None, "refused": True, "outcome": Outcome.NOT_FOUND, "citations": [],
                                            "considered": [SourceRef(document_id="guide.md", revision="r7")]})
        store.put_answer(refusal)  # a refusal rests on what it read: a delete of that must find it
        assert [a.answer_id for a in store.answers_citing("northpier", "guide.md", "r7")] == ["a3"]

        assert store.tenant_epoch("northpier") == 0
        store.put_cached_answer("k1", "northpier", 0, "a1")
        store.put_cached_answer("k2", "northpier", 0, "a2")
        assert store.get_cached_answer("k1", "northpier", 0) == "a1"
        assert store.get_cached_answer("k1", "bluefen", 0) is None and store.get_cached_answer("k1", "northpier", 1) is None
        assert sorted(store.cache_inventory()) == [("northpier", "a1"), ("northpier", "a2")]
        assert store.drop_cached_answers("northpier", ["a2"]) == 1
        assert store.bump_epoch("northpier") == 1 and store.tenant_epoch("northpier") == 1
        assert store.get_cached_answer("k1", "northpier", 0) is None and store.cache_inventory() == []

    def test_the_citations_of_a_document_are_read_apart_from_its_served_revision(self, store):
        def cites(answer_id: str, tenant: str, *sources: tuple[str, str]) -> AnswerRecord:
            return AnswerRecord(answer_id=answer_id, tenant=tenant, roles=["staff"], question="q", answer="a [S1]", refused=False,
                                generator="extractive", citations=[Citation(ref=f"S{n}", chunk_id=f"{d}#0#0", document_id=d,
                                                                            revision=r) for n, (d, r) in enumerate(sources)])
        # revisions that share a prefix with the served one: a range around it must leave them in
        store.put_answer(cites("a1", "northpier", ("handbook.md", "r1"), ("guide.md", "r1")))
        store.put_answer(cites("a2", "northpier", ("handbook.md", "r10")))
        store.put_answer(cites("a3", "northpier", ("handbook.md", "r")))
        store.put_answer(cites("a4", "northpier", ("handbook.md", "r0"), ("handbook.md", "r1")))
        store.put_answer(cites("a5", "bluefen", ("handbook.md", "r0")))
        assert sorted(store.cited_documents()) == [("bluefen", "handbook.md"), ("northpier", "guide.md"),
                                                   ("northpier", "handbook.md")]
        assert store.stale_citations("northpier", "handbook.md", "r1") == [("r", "a3"), ("r0", "a4"), ("r10", "a2")]
        assert store.stale_citations("northpier", "handbook.md", None) == [
            ("r", "a3"), ("r0", "a4"), ("r1", "a1"), ("r1", "a4"), ("r10", "a2")]
        assert store.stale_citations("northpier", "guide.md", "r1") == []
        assert store.stale_citations("bluefen", "handbook.md", "r1") == [("r0", "a5")]
        assert store.stale_citations("northpier", "policy.md", None) == []

    def test_an_answer_is_recorded_only_while_every_source_it_read_is_served(self, store):
        served = store.save_document(document(generation=GEN))
        store.save_document(served.model_copy(update={"active_revision": "r1", "status": DocumentStatus.PUBLISHED}))
        cited = Citation(ref="S1", chunk_id="handbook.md#0#0", document_id="handbook.md", revision="r1", title="Handbook",
                         section_path=["Leave"], quote="27 days")
        record = AnswerRecord(answer_id="a1", tenant="northpier", roles=["staff"], question="leave?", answer="27 days [S1]",
                              refused=False, citations=[cited], generator="extractive")
        assert store.record_answer(record, ("k1", 0))
        assert store.get_answer("northpier", "a1") == record and store.get_cached_answer("k1", "northpier", 0) == "a1"
        stale = record.model_copy(update={"answer_id": "a2", "citations": [cited.model_copy(update={"revision": "r0"})]})
        assert not store.record_answer(stale, ("k2", 0))  # it read a revision no longer served: nothing is written
        assert store.get_answer("northpier", "a2") is None and store.get_cached_answer("k2", "northpier", 0) is None


    def test_answers_are_read_in_batches(self, store):
        record = AnswerRecord(answer_id="a0", tenant="northpier", roles=["staff"], question="leave?", answer=None,
                              refused=True, citations=[], generator="extractive")
        for n in range(120):  # more than one batch (DynamoDB's BatchGetItem takes 100 keys)
            store.put_answer(record.model_copy(update={"answer_id": f"a{n}"}))
        got = store.get_answers("northpier", [f"a{n}" for n in range(120)] + ["absent"])
        assert sorted(got) == sorted(f"a{n}" for n in range(120)) and got["a7"].answer_id == "a7"
        assert store.get_answers("bluefen", ["a1"]) == {} and store.get_answers("northpier", []) == {}


class TestConversationRecords:
    """ConversationRecords: a subject's conversations, written by compare-and-set, found by their answers."""

    def test_conversations_are_written_by_compare_and_set_and_found_by_subject_answer_and_age(self, store):
        from datetime import timedelta

        from citewell.models.conversations import Conversation, Turn
        from citewell.models.values import utcnow

        now = utcnow()
        old = Conversation(conversation_id="c1", tenant="northpier", subject="anna", roles=["staff"],
                           turns=[Turn(seq=1, answer_id="a1", asked="leave?", question="leave?")], updated_at=now - timedelta(days=3))
        stored = store.save_conversation(old)
        assert stored is not None and stored.version == 1
        assert store.save_conversation(old.model_copy(update={"updated_at": now - timedelta(days=2)})) is None  # version 1 won
        recent = old.model_copy(update={"conversation_id": "c2", "turns": [], "updated_at": now})
        assert store.save_conversation(recent) is not None
        assert store.save_conversation(old.model_copy(update={"subject": "ben", "conversation_id": "c3"})) is not None
        assert store.get_conversation("northpier", "c1") == stored and store.get_conversation("bluefen", "c1") is None
        assert [c.conversation_id for c in store.conversations_of("northpier", "anna")] == ["c2", "c1"]  # the latest first
        assert [c.conversation_id for c in store.conversations_of("northpier", "anna", limit=1)] == ["c2"]
        assert [c.conversation_id for c in store.conversations_answering("northpier", ["a1", "a9"])] in (["c1", "c3"], ["c3", "c1"])
        assert sorted(c.conversation_id for c in store.conversations_idle_since(now - timedelta(days=1))) == ["c1", "c3"]
        assert sorted(c.conversation_id for c in store.conversation_inventory()) == ["c1", "c2", "c3"]
        assert store.delete_conversation("northpier", "c1") == 1 and store.delete_conversation("northpier", "c1") == 0
        assert store.get_conversation("northpier", "c1") is None
        assert [c.conversation_id for c in store.conversations_answering("northpier", ["a1"])] == ["c3"]


    def test_the_audit_lists_conversations_by_key(self, store):
        from citewell.models.conversations import Conversation, Turn

        for tenant, cid in [("northpier", "c1"), ("northpier", "c2"), ("bluefen", "c1")]:
            store.save_conversation(Conversation(conversation_id=cid, tenant=tenant, subject="anna", roles=["staff"],
                                                 turns=[Turn(seq=1, answer_id="a1", asked="leave?", question="leave?")]))
        assert sorted(store.conversation_keys()) == [("bluefen", "c1"), ("northpier", "c1"), ("northpier", "c2")]


class TestRemovals:
    """Removals: the journal of removals of stored text, and the compaction that sees them through."""

    def test_a_removal_is_noted_ended_and_cleared_and_a_compaction_finishes(self, store):
        removal = store.begin_removal(None)
        assert isinstance(removal, str) and removal
        # SQLite keeps the removal until a compaction clears it; DynamoDB leaves no bytes behind, so keeps none.
        assert [r.removal_id for r in store.removals()] in ([removal], [])
        store.end_removal(removal)
        store.end_removal("no-such-removal")  # ignored
        assert all(r.done for r in store.removals())
        store.clear_removals([removal])
        assert store.removals() == []
        store.put_answer(AnswerRecord(answer_id="a1", tenant="northpier", roles=["staff"], question="q", answer=None,
                                      refused=True, outcome=Outcome.NOT_FOUND, citations=[], generator="extractive"))
        assert store.compact(removed=True)
