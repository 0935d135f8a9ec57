"""One contract for every SearchIndex adapter: SQLite with tantivy, and OpenSearch (osmem-server, a real
HTTP server). osmem cannot run kNN, so the OpenSearch vector request is checked as a golden body."""

from __future__ import annotations

import numpy as np
import pytest
from opensearchpy import OpenSearch

from citewell.errors import EmbedderMismatch
from citewell.index.opensearch import OpenSearchIndex, access_filter, lexical_body, vector_body
from citewell.index.sqlite import SqliteSearchIndex
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity

MODEL = "all-MiniLM-L6-v2-int8-onnx@1.0.0:384"
STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))


@pytest.fixture(params=["sqlite", "opensearch"])
def index(request, tmp_path):
    if request.param == "sqlite":
        return SqliteSearchIndex(tmp_path / "index.db")
    clone = request.getfixturevalue("osmem_clone")
    return OpenSearchIndex(OpenSearch(hosts=[clone.url]), alias="citewell-test")


def chunk(n: int, text: str, doc="handbook.md", revision="r1", tenant="northpier", roles=("staff",)) -> Chunk:
    return Chunk(chunk_id=f"{doc}#0#{n}", document_id=doc, tenant=tenant, allowed_roles=frozenset(roles), revision=revision,
                 title="Handbook", section_index=0, index=n, heading_path=["Leave"], start=0, end=len(text), body_start=0, text=text)


def vectors(n: int) -> np.ndarray:
    return np.eye(n, 384, dtype=np.float32)


def load(index) -> None:
    rows = [
        chunk(0, "Staff receive 27 days of annual leave."),
        chunk(1, "Carried leave days expire in March."),
        chunk(0, "Salary bands for shift leads.", doc="salaries.md", roles=("hr",)),
        chunk(0, "Annual leave at the clinic is 22 days.", doc="guide.md", tenant="bluefen"),
    ]
    index.upsert(rows, vectors(len(rows)), MODEL)


def test_lexical_lane_filters_before_ranking(index):
    load(index)
    hits = index.lexical("annual leave days", STAFF, 10)
    assert {h.document_id for h in hits} == {"handbook.md"} and hits[0].chunk_id == "handbook.md#0#0"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert index.lexical("salary bands", STAFF, 10) == []
    assert [h.document_id for h in index.lexical("salary bands", Identity(tenant="northpier", roles=frozenset({"hr"})), 10)] == ["salaries.md"]
    assert index.lexical("annual leave", Identity(tenant="northpier"), 10) == []
    assert [h.document_id for h in index.lexical("annual leave", Identity(tenant="bluefen", roles=frozenset({"staff"})), 10)] == ["guide.md"]


def test_upsert_replaces_a_revision_and_counts_and_deletes(index):
    load(index)
    assert index.count("northpier", "handbook.md", "r1") == 2
    index.upsert([chunk(0, "Staff receive 30 days of annual leave.")], vectors(1), MODEL)
    assert index.count("northpier", "handbook.md", "r1") == 1
    index.upsert([chunk(0, "A newer revision.", revision="r2")], vectors(1), MODEL)
    assert index.revisions("northpier", "handbook.md") == ["r1", "r2"]
    assert sorted(index.inventory()) == [
        ("bluefen", "guide.md", "r1", 1), ("northpier", "handbook.md", "r1", 1),
        ("northpier", "handbook.md", "r2", 1), ("northpier", "salaries.md", "r1", 1),
    ]
    assert index.delete_revision("northpier", "handbook.md", "r1") == 1
    assert index.delete_document("northpier", "handbook.md") == 1
    assert index.count("northpier", "handbook.md", "r2") == 0 and index.revisions("northpier", "handbook.md") == []
    assert index.count("bluefen", "guide.md", "r1") == 1
    assert index.compact(removed=True)


def test_one_embedding_model_per_index(index):
    assert index.embedder_identity() is None
    load(index)
    assert index.embedder_identity() == MODEL
    with pytest.raises(EmbedderMismatch):
        index.upsert([chunk(9, "x")], vectors(1), "other-model@1:384")
    with pytest.raises(EmbedderMismatch):
        index.vector(vectors(1)[0], "other-model@1:384", STAFF, 5)


def test_golden_request_bodies():
    caller = Identity(tenant="northpier", roles=frozenset({"support", "engineering"}))
    expected_filter = [
        {"term": {"tenant": "northpier"}},
        {"terms": {"roles": ["engineering", "support"]}},
        {"term": {"status": "live"}},
    ]
    assert access_filter(caller) == expected_filter
    assert vector_body(np.array([0.5, -0.25], dtype=np.float32), caller, 7) == {
        "size": 7,
        "_source": ["chunk_id", "document_id", "revision", "title", "section_path", "body"],
        "query": {"knn": {"vector": {"vector": [0.5, -0.25], "k": 7, "filter": {"bool": {"filter": expected_filter}}}}},
    }
    body = lexical_body("E1027", caller, 3)
    assert body["query"]["bool"]["filter"] == expected_filter and body["size"] == 3
    assert body["query"]["bool"]["must"] == [{"multi_match": {"query": "E1027", "fields": ["context", "body"], "operator": "or"}}]


def test_lanes_in_one_round_trip(index):
    load(index)
    found = index.lanes("annual leave days", None, MODEL, STAFF, 5)
    assert list(found) == ["bm25"] and found["bm25"][0].chunk_id == "handbook.md#0#0"
    assert index.lanes(None, None, MODEL, STAFF, 5) == {}


def test_golden_msearch_pairs():
    from citewell.index.opensearch import msearch_body

    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    pairs = msearch_body("leave", np.array([1.0, 0.0], dtype=np.float32), caller, 4)
    assert [lane for lane, _ in pairs] == ["bm25", "vector"]
    assert pairs[0][1] == lexical_body("leave", caller, 4) and pairs[1][1] == vector_body(np.array([1.0, 0.0]), caller, 4)
    assert [lane for lane, _ in msearch_body(None, np.array([1.0]), caller, 4)] == ["vector"]


def test_a_scope_narrows_each_lane_before_its_top_k(index):
    """A query filter's documents are a clause of the ranked query: with k=1 the scoped document's
    row is the top hit even where, unscoped, another document's row outranks it."""
    load(index)
    index.upsert([chunk(0, "Annual leave annual leave: the leave days of annual leave.", doc="leave-faq.md")], vectors(5)[4:], MODEL)
    assert index.lexical("annual leave days", STAFF, 1)[0].document_id == "leave-faq.md"
    assert [h.chunk_id for h in index.lexical("annual leave days", STAFF, 1, frozenset({"handbook.md"}))] == ["handbook.md#0#0"]
    assert index.lexical("annual leave days", STAFF, 10, frozenset()) == []
    # A scope never widens: another tenant's document, or one the caller's roles do not open, stays out.
    assert index.lexical("annual leave clinic", STAFF, 10, frozenset({"guide.md"})) == []
    assert index.lexical("salary bands", STAFF, 10, frozenset({"salaries.md"})) == []
    if isinstance(index, SqliteSearchIndex):  # the OpenSearch vector lane is the kNN stand-in's (test_aws_search_index)
        query = (vectors(5)[0] + 0.5 * vectors(5)[4]) / np.sqrt(1.25)  # nearer handbook.md's first row
        assert index.vector(query, MODEL, STAFF, 1)[0].document_id == "handbook.md"
        assert [h.document_id for h in index.vector(query, MODEL, STAFF, 1, frozenset({"leave-faq.md"}))] == ["leave-faq.md"]
        assert index.vector(query, MODEL, STAFF, 5, frozenset({"guide.md", "salaries.md"})) == []
        found = index.lanes("annual leave days", query, MODEL, STAFF, 1, frozenset({"handbook.md"}))
        assert {lane: [h.document_id for h in hits] for lane, hits in found.items()} == {
            "bm25": ["handbook.md"], "vector": ["handbook.md"]}


def test_golden_request_bodies_with_a_scope():
    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    scope = frozenset({"policies/leave.md", "handbook.md"})
    expected_filter = [
        {"term": {"tenant": "northpier"}},
        {"terms": {"roles": ["staff"]}},
        {"term": {"status": "live"}},
        {"terms": {"document_id": ["handbook.md", "policies/leave.md"]}},
    ]
    assert vector_body(np.array([1.0], dtype=np.float32), caller, 3, scope)["query"]["knn"]["vector"]["filter"] == {
        "bool": {"filter": expected_filter}}
    assert lexical_body("leave", caller, 3, scope)["query"]["bool"]["filter"] == expected_filter
