"""One contract for every SearchIndex adapter: SQLite with tantivy, and OpenSearch (osmem-server, a real
HTTP server). osmem cannot run kNN, so the OpenSearch vector request is checked as a golden body."""

from __future__ import annotations

import numpy as np
import pytest
from citewell.aws.search_index import OpenSearchIndex, access_filter, lexical_body, vector_body
from citewell.errors import EmbedderMismatch
from citewell.local.index import SqliteSearchIndex
from citewell.models import Chunk, Identity
from opensearchpy import OpenSearch

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
    from citewell.aws.search_index import msearch_body

    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    pairs = msearch_body("leave", np.array([1.0, 0.0], dtype=np.float32), caller, 4)
    assert [lane for lane, _ in pairs] == ["bm25", "vector"]
    assert pairs[0][1] == lexical_body("leave", caller, 4) and pairs[1][1] == vector_body(np.array([1.0, 0.0]), caller, 4)
    assert [lane for lane, _ in msearch_body(None, np.array([1.0]), caller, 4)] == ["vector"]
