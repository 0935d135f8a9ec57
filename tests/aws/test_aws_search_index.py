"""The OpenSearch index is mapped from the configured embedder, refuses an index built for
another, and sends both lanes in bodies the mapping accepts. osmem-server checks bulk
vectors against the mapped dimension as OpenSearch does; the kNN stand-in of
test_aws_knn answers and checks the vector lane."""

from __future__ import annotations

import numpy as np
import pytest
from opensearchpy import OpenSearch

from citewell.errors import EmbedderMismatch, IndexOverloaded, RetrievalUnavailable
from citewell.index.bulk import BULK_ROWS, BulkRetry
from citewell.index.opensearch import MAX_ID_BYTES, OpenSearchIndex, index_body, row_id
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity
from citewell.models.values import MAX_DOCUMENT_ID_BYTES
from tests.aws.test_aws_knn import knn_proxy  # noqa: F401

TITAN = "amazon.titan-embed-text-v2@2:1024"


def chunk(n: int, text: str, tenant: str = "northpier", roles: frozenset[str] = frozenset({"staff"})) -> Chunk:
    return Chunk(
        chunk_id=f"handbook.md#0#{n}", document_id="handbook.md", tenant=tenant, revision="r1", section_index=0,
        index=n, heading_path=["Leave"], title="Handbook", allowed_roles=roles, text=text, start=0, end=len(text),
        body_start=0,
    )


def unit(rows: int, dims: int, seed: int = 1) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dims)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_index_takes_its_dimension_from_the_embedder_identity(knn_proxy):
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks")
    vectors = unit(2, 1024)
    assert index.upsert([chunk(0, "Staff get 27 days of leave."), chunk(1, "Report sickness early.")], vectors, TITAN) == 2
    (mapping,) = index.client.indices.get_mapping(index="citewell-chunks").values()
    assert mapping["mappings"]["properties"]["vector"]["dimension"] == 1024
    # Vectors are searched, never stored a second time in _source (nor sent back, nor snapshotted there).
    assert mapping["mappings"]["_source"] == {"excludes": ["vector"]}
    (row,) = index.client.search(index="citewell-chunks", body={"query": {"term": {"chunk_id": "handbook.md#0#1"}}})["hits"]["hits"]
    assert "vector" not in row["_source"] and row["_source"]["body"] == "Report sickness early."
    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    found = index.lanes("annual leave", vectors[1], TITAN, caller, 5)
    assert found["vector"][0].chunk_id == "handbook.md#0#1" and found["bm25"][0].chunk_id == "handbook.md#0#0"
    assert index.lanes("annual leave", vectors[1], TITAN, Identity(tenant="bluefen", roles=frozenset({"staff"})), 5) == {
        "bm25": [], "vector": []}


def test_an_index_built_for_another_identity_or_dimension_is_refused(knn_proxy):
    client = OpenSearch(hosts=[knn_proxy.url])
    # What an earlier build left: Titan's identity on a 384-dimension field.
    client.indices.create(index="citewell-chunks-old", body=index_body(TITAN, 384))
    client.indices.put_alias(index="citewell-chunks-old", name="citewell-chunks")
    index = OpenSearchIndex(client, alias="citewell-chunks")
    with pytest.raises(EmbedderMismatch, match="1024"):
        index.upsert([chunk(0, "Staff get 27 days of leave.")], unit(1, 1024), TITAN)
    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    with pytest.raises(EmbedderMismatch, match="384 dimensions"):
        index.lanes("leave", unit(1, 1024)[0], TITAN, caller, 5)
    with pytest.raises(EmbedderMismatch, match="migrate"):
        index.lanes("leave", unit(1, 384)[0], "all-MiniLM-L6-v2-int8-onnx@1.0.0:384", caller, 5)
    assert index.lanes("leave", None, TITAN, caller, 5) == {"bm25": []}  # the lexical lane needs no vectors


def test_a_container_reads_the_mapping_once(knn_proxy):
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks")
    index.upsert([chunk(0, "Staff get 27 days of leave.")], unit(1, 1024), TITAN)
    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    knn_proxy.calls.clear()
    for _ in range(3):
        index.lanes("leave", unit(1, 1024)[0], TITAN, caller, 5)
    assert [path for _, _, path in knn_proxy.calls] == ["/citewell-chunks/_msearch"] * 3


def test_bulk_and_msearch_go_to_the_alias_and_name_no_index_in_their_bodies(knn_proxy):
    """The domain refuses a body naming an index (the stand-in too), so the index a role may
    reach is the one in the path: the alias's."""
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks")
    vectors = unit(1, 1024)
    index.upsert([chunk(0, "Staff get 27 days of leave.")], vectors, TITAN)
    assert index.lanes("leave", vectors[0], TITAN, Identity(tenant="northpier", roles=frozenset({"staff"})), 5)["vector"]
    multi = [(method, path) for _, method, path in knn_proxy.calls if path.endswith(("/_bulk", "/_msearch"))]
    assert multi == [("POST", "/citewell-chunks/_bulk"), ("POST", "/citewell-chunks/_msearch")]


def patient(waits: list[float]) -> BulkRetry:
    """The default policy, its pauses recorded instead of slept, each drawn at its cap."""
    return BulkRetry(sleep=waits.append, jitter=lambda: 1.0)


def test_a_refused_bulk_says_why_without_the_text_it_carried(knn_proxy):
    """A bulk the domain keeps refusing as a whole (429 under load) is sent ``attempts`` times,
    backing off exponentially to the cap, then fails the write as overloaded; its message, which
    goes to logs and X-Ray, names the rows and the reason, never their text."""
    waits: list[float] = []
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks", retry=patient(waits))
    index.upsert([chunk(0, "Staff get 27 days of leave.")], unit(1, 1024), TITAN)
    knn_proxy.overloaded.add("_bulk")
    knn_proxy.bulk_rows.clear()
    with pytest.raises(IndexOverloaded) as refused:
        index.upsert([chunk(0, "Staff get 28 days of leave."), chunk(1, "Report sickness early.")], unit(2, 1024), TITAN)
    message = str(refused.value)
    assert "2 of 2" in message and "429" in message and "es_rejected_execution_exception" in message, message
    assert "northpier|r1|handbook.md#0#0" in message and "days of leave" not in message and "sickness" not in message
    assert isinstance(refused.value, RetrievalUnavailable) and refused.value.code == "index_overloaded"
    assert knn_proxy.bulk_rows == [2] * BulkRetry().attempts
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0]  # capped at 8 s: 15.5 s at most over a request


def test_rows_refused_as_too_many_are_sent_again_alone_until_written(knn_proxy):
    """A busy domain answers 200 with some items 429 (a shard's write queue full): only those rows
    go again, after a jittered backoff, and the revision ends whole; a request refused whole goes
    again whole."""
    waits: list[float] = []
    draws = iter([0.25, 0.5, 0.75, 0.1])
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks",
                            retry=BulkRetry(sleep=waits.append, jitter=lambda: next(draws)))
    rows = [chunk(n, f"Passage {n} on leave w{n}x.") for n in range(BULK_ROWS + 10)]
    index.upsert(rows[:1], unit(1, 1024), TITAN)  # the index exists
    knn_proxy.bulk_rows.clear()
    knn_proxy.busy = ["some", "some", "all"]  # first request: half refused, then half of those, then all of the rest
    assert index.write_revision("northpier", "handbook.md", "r1", iter([(rows, unit(len(rows), 1024))]), TITAN) == len(rows)
    assert knn_proxy.bulk_rows == [BULK_ROWS, BULK_ROWS // 2, BULK_ROWS // 4, BULK_ROWS // 4, 10], knn_proxy.bulk_rows
    assert waits == [0.25 * 0.5, 0.5 * 1.0, 0.75 * 2.0]  # a uniform draw under the doubling bound
    assert index.count("northpier", "handbook.md", "r1") == len(rows)
    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    for n in (1, 3, BULK_ROWS - 1, BULK_ROWS + 9):  # refused once, twice, three times; the second request
        assert [h.chunk_id for h in index.lexical(f"w{n}x", caller, 3)] == [f"handbook.md#0#{n}"]


def test_a_refusal_other_than_too_many_is_not_sent_again(knn_proxy):
    """A row the domain refuses for what it is (a vector of the wrong width) would be refused
    again: the write fails at once, not after backing off."""
    waits: list[float] = []
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks", retry=patient(waits))
    index.upsert([chunk(0, "Staff get 27 days of leave.")], unit(1, 1024), TITAN)
    knn_proxy.bulk_rows.clear()
    with pytest.raises(RetrievalUnavailable) as refused:
        index._bulk("citewell-chunks", [([chunk(1, "Report sickness early.")], unit(1, 512))])
    assert not isinstance(refused.value, IndexOverloaded) and "1 of 1" in str(refused.value), refused.value
    assert knn_proxy.bulk_rows == [1] and waits == []


def test_deletes_are_not_merged_inline_and_the_expunge_is_asked_for_without_waiting(knn_proxy):
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks")
    index.upsert([chunk(0, "Staff get 27 days of leave.")], unit(1, 1024), TITAN)
    knn_proxy.calls.clear()
    assert index.delete_document("northpier", "handbook.md") == 1 and index.compact(removed=True)
    assert not [path for _, _, path in knn_proxy.calls if "_forcemerge" in path]
    index.expunge()
    assert [path for _, _, path in knn_proxy.calls if "_forcemerge" in path] == ["/citewell-chunks/_forcemerge"]


def test_the_vector_lane_reports_cosine_as_the_local_index_does(knn_proxy):
    """OpenSearch's cosinesimil score is (1 + cosine) / 2; the port speaks cosine, so the weak-hit
    threshold means the same on AWS as on one machine."""
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks")
    vectors = unit(2, 1024)
    index.upsert([chunk(0, "Staff get 27 days of leave."), chunk(1, "Report sickness early.")], vectors, TITAN)
    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    found = index.lanes(None, vectors[1], TITAN, caller, 5)["vector"]
    assert [h.score for h in found] == pytest.approx([1.0, float(vectors[0] @ vectors[1])], abs=1e-5)
    assert [h.score for h in index.vector(vectors[1], TITAN, caller, 5)] == pytest.approx([h.score for h in found])


def test_row_ids_fit_opensearch_for_the_longest_ids_and_keep_the_spelling_of_those_that_fit():
    longest = "d" * MAX_DOCUMENT_ID_BYTES
    rows = [chunk(n, "text").model_copy(update={"tenant": "t" * 64, "revision": "f" * 64, "document_id": longest,
                                                "chunk_id": Chunk.make_id(longest, 99, n)}) for n in (998, 999)]
    ids = [row_id(r) for r in rows]
    assert all(len(i.encode()) <= MAX_ID_BYTES for i in ids) and ids[0] != ids[1] and ids == [row_id(r) for r in rows]
    assert row_id(chunk(0, "text")) == "northpier|r1|handbook.md#0#0"  # rows written before keep their ids
    at_limit = chunk(0, "text").model_copy(update={"chunk_id": "c" * (MAX_ID_BYTES - len("northpier|r1|"))})
    assert row_id(at_limit) == f"northpier|r1|{at_limit.chunk_id}"


def test_a_revision_goes_in_batches_refreshed_once_and_is_searchable_when_written(knn_proxy):
    """Each _bulk request carries BULK_ROWS rows and asks for no refresh (one per request cut a
    segment each); one refresh after the last makes the revision searchable before it returns."""
    index = OpenSearchIndex(OpenSearch(hosts=[knn_proxy.url]), alias="citewell-chunks")
    rows = [chunk(n, f"Passage {n} on leave w{n}x.") for n in range(BULK_ROWS * 2 + 7)]
    vectors = unit(len(rows), 1024)
    knn_proxy.requests.clear()
    batches = [(rows[i : i + 300], vectors[i : i + 300]) for i in range(0, len(rows), 300)]
    assert index.write_revision("northpier", "handbook.md", "r1", iter(batches), TITAN) == len(rows)
    sent = [(path, query) for _, path, query in knn_proxy.requests if path.endswith(("/_bulk", "/_refresh"))]
    assert sent == [("/citewell-chunks/_bulk", "")] * 3 + [("/citewell-chunks/_refresh", "")], sent
    assert index.count("northpier", "handbook.md", "r1") == len(rows)
    caller = Identity(tenant="northpier", roles=frozenset({"staff"}))
    assert [h.chunk_id for h in index.lexical(f"w{len(rows) - 1}x", caller, 3)] == [f"handbook.md#0#{len(rows) - 1}"]
    # Written again: the revision's rows are replaced, never doubled.
    assert index.write_revision("northpier", "handbook.md", "r1", iter(batches[:1]), TITAN) == 300
    assert index.count("northpier", "handbook.md", "r1") == 300
    with pytest.raises(ValueError, match="another revision"):
        index.write_revision("northpier", "handbook.md", "r2", iter(batches[:1]), TITAN)
