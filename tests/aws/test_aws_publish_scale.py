"""The publish function's memory does not grow with a revision's length, and its rows become
searchable with one refresh, not one per bulk request.

The revisions are written straight into the stores (chunk records and cached vectors of cheap
text and random vectors, as the chunk and embed stages leave them), then the real publish
handler takes the embed stage's marker, held to the memory and timeout the stack gives it
(tests.strict_aws.limited) on moto and osmem-server. Two revisions of 500 and 2,500 chunks
must peak alike: a publish that held the revision (its rows' vectors as Python floats, ~12 KB a
row at 384 dimensions, its records and cached vectors) peaked ~47 MB higher for 600 and 3,000
(measured before the publish streamed); streamed, ~6 MB, the fakes' own garbage. The 100,000-chunk run is
``benchmarks/publish_scale.py`` (BENCHMARKS.md)."""

from __future__ import annotations

import json
import math

import numpy as np
from opensearchpy import OpenSearch

from citewell.index.bulk import BULK_ROWS, BulkRetry
from citewell.index.opensearch import OpenSearchIndex
from citewell.ingest.stages import IngestRequest, dimensions, register
from citewell.keys import embedded_key
from citewell.lambdas.settings import services_from_env
from citewell.models.chunks import Chunk
from citewell.models.documents import DocumentStatus, publication_revision
from citewell.models.identity import Identity
from tests.aws.test_aws_chain import LambdaContext, aws, knn_proxy, sqs_event, step  # noqa: F401

GROWTH_MB = 16  # what the larger revision may add to the peak: a third of what holding it added


def staged(aws, document_id: str, count: int) -> str:
    """A revision of ``count`` chunks whose vectors are cached, as the embed stage leaves it;
    returns its revision. Its marker's notification waits on the publish queue."""
    _, services = services_from_env()
    upload = register(services, IngestRequest(document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                              data=b"x", filename=document_id, title="Handbook"))
    content = f"{document_id}:{count}"
    revision = publication_revision(content, upload.upload_id)
    chunks = [Chunk(chunk_id=f"{document_id}#0#{i}", document_id=document_id, tenant="northpier",
                    allowed_roles=frozenset({"staff"}), revision=revision, title="Handbook", section_index=0, index=i,
                    heading_path=["Leave"], start=i * 40, end=i * 40 + 30, body_start=i * 40,
                    text=f"Passage {i} of {document_id} on leave w{i}x.") for i in range(count)]
    services.chunks.put_chunks(chunks)
    identity = services.embedder.identity
    rng = np.random.default_rng(count)
    vectors = rng.standard_normal((count, dimensions(identity))).astype(np.float32)
    services.embeddings.put_embeddings(identity, {c.content_hash: v for c, v in zip(chunks, vectors)})
    marker = {"revision": revision, "content_sha256": content, "encoding": None, "chunks": count}
    services.objects.put(embedded_key("northpier", document_id, upload.upload_id), json.dumps(marker).encode())
    return revision


def test_publish_memory_is_flat_in_the_revisions_length_and_it_refreshes_once(aws):
    calls, proxy = aws["calls"], aws["proxy"]
    peaks, refreshes = {}, {}
    for document_id, count in (("small.md", 500), ("large.md", 2500)):
        revision = staged(aws, document_id, count)
        proxy.requests.clear()
        step(aws, "embedded/")
        peaks[count] = calls.usage["publish"].memory_mb
        assert peaks[count] <= calls.limits["publish"].memory_mb  # what invocation enforced

        _, services = services_from_env()
        document = services.documents.get_document("northpier", document_id)
        assert document is not None and document.status is DocumentStatus.PUBLISHED and document.chunk_count == count
        assert document.active_revision == revision
        bulks = [query for method, path, query in proxy.requests if path.endswith("/_bulk")]
        assert len(bulks) == math.ceil(count / BULK_ROWS) and not any("refresh" in q for q in bulks), bulks
        refreshes[count] = [path for method, path, _ in proxy.requests if path.endswith("/_refresh")]
        last_bulk = max(n for n, (_, path, _) in enumerate(proxy.requests) if path.endswith("/_bulk"))
        assert [p for _, p, _ in proxy.requests[last_bulk:] if p.endswith("/_refresh")] == ["/citewell-chunks/_refresh"]

        # Served means searchable: the last row written is found by its words at once.
        index = OpenSearchIndex(OpenSearch(hosts=[proxy.url]))
        found = index.lexical(f"w{count - 1}x", Identity(tenant="northpier", roles=frozenset({"staff"})), 3)
        assert [h.chunk_id for h in found] == [f"{document_id}#0#{count - 1}"]
        assert index.count("northpier", document_id, revision) == count
    assert refreshes == {500: ["/citewell-chunks/_refresh"], 2500: ["/citewell-chunks/_refresh"]}
    assert peaks[2500] - peaks[500] < GROWTH_MB, peaks


def test_a_publish_the_domain_keeps_refusing_goes_back_to_its_queue_and_serves_nothing_half_written(aws, capsys):
    """Rows refused as too many are sent again with a backoff; still refused after the policy's
    attempts, the publish fails its message (the queue delivers it again) before any switch: the
    document serves nothing of the revision, although part of its rows are in the index. The
    redelivery, on a domain that has caught up, publishes it whole."""
    revision = staged(aws, "busy.md", 1200)
    _, services = services_from_env()
    waits: list[float] = []
    services.index.retry = BulkRetry(sleep=waits.append, jitter=lambda: 1.0)
    aws["proxy"].busy = ["some"] + ["all"] * (BulkRetry().attempts - 1)  # the first request: half in, then no more
    url = aws["queues"]["embedded/"]
    messages = aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    event = sqs_event(messages)
    marker = [m["MessageId"] for m in messages if "busy.md" in m["Body"]]  # beside it, S3's test event
    assert aws["handlers"]["embedded/"](event, LambdaContext()) == {"batchItemFailures": [{"itemIdentifier": marker[0]}]}
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert '"IndexOverloaded":[1.0]' in capsys.readouterr().out  # a metric to alarm on
    document = services.documents.get_document("northpier", "busy.md")
    assert document is not None and document.status is DocumentStatus.PROCESSING and document.active_revision is None
    assert services.index.count("northpier", "busy.md", revision) == BULK_ROWS // 2  # written, never served

    assert aws["handlers"]["embedded/"](event, LambdaContext()) == {"batchItemFailures": []}  # redelivered
    document = services.documents.get_document("northpier", "busy.md")
    assert document is not None and document.status is DocumentStatus.PUBLISHED and document.active_revision == revision
    assert document.chunk_count == 1200 and services.index.count("northpier", "busy.md", revision) == 1200
