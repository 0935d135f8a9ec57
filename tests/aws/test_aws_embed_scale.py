"""The embed function's memory does not grow with a revision's length: it reads its chunks
artifact a page at a time, in ranged reads, never the object whole.

The chunk stage's artifact is written straight into the bucket (long distinct texts, so the
artifact is large) with every chunk's vector cached (the model is not what is measured), then the
real embed handler takes its notification, held to the memory and timeout the stack gives it
(tests.strict_aws.limited) on moto, whose ranged reads read their range alone
(tests.strict_aws.ranged_read). Two revisions of 400 and 4,000 chunks of ~4 KB (a 1.7 MB and a
17 MB artifact) must peak alike: read whole, the object's bytes, its chunks and each chunk's
embedding text came to 59 MB more for the larger (measured before embed streamed; streamed, 5 MB)."""

from __future__ import annotations

import numpy as np

from citewell.ingest.artifacts import ChunksArtifact, chunks_lines
from citewell.ingest.stages import IngestRequest, dimensions, register
from citewell.keys import chunks_key, embedded_key
from citewell.lambdas.settings import services_from_env
from citewell.models.chunks import Chunk
from citewell.models.documents import publication_revision
from tests.aws.test_aws_chain import aws, knn_proxy, step  # noqa: F401

GROWTH_MB = 16  # what the larger revision may add to the peak: a quarter of what holding it added
TEXT = 4000  # characters a chunk's text holds: the token budget's order of size


def chunked(aws, document_id: str, count: int) -> str:
    """The chunk stage's artifact of ``count`` chunks, every vector cached; returns the upload's id.
    Its notification waits on the embed queue."""
    _, services = services_from_env()
    upload = register(services, IngestRequest(document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                              data=b"x", filename=document_id, title="Handbook"))
    content = f"{document_id}:{count}"
    revision = publication_revision(content, upload.upload_id)
    filler = "staff leave pay rota shift notice ".ljust(TEXT // 8, ".")
    chunks = [Chunk(chunk_id=f"{document_id}#0#{i}", document_id=document_id, tenant="northpier",
                    allowed_roles=frozenset({"staff"}), revision=revision, title="Handbook", section_index=0, index=i,
                    heading_path=["Leave"], start=i * TEXT, end=(i + 1) * TEXT, body_start=i * TEXT,
                    text=f"Passage {i}: " + filler * 8) for i in range(count)]
    identity = services.embedder.identity
    vectors = np.random.default_rng(count).standard_normal((count, dimensions(identity))).astype(np.float32)
    services.embeddings.put_embeddings(identity, {c.content_hash: v for c, v in zip(chunks, vectors)})
    artifact = ChunksArtifact(revision=revision, content_sha256=content, chunks=chunks)
    services.objects.put(chunks_key("northpier", document_id, upload.upload_id), chunks_lines(artifact))
    return upload.upload_id


def test_embed_memory_is_flat_in_the_revisions_length(aws):
    calls = aws["calls"]
    peaks = {}
    for document_id, count in (("small.md", 400), ("large.md", 4000)):
        upload_id = chunked(aws, document_id, count)
        step(aws, "chunks/")
        peaks[count] = calls.usage["embed"].memory_mb
        assert peaks[count] <= calls.limits["embed"].memory_mb  # what invocation enforced
        _, services = services_from_env()
        marker = services.objects.get(embedded_key("northpier", document_id, upload_id))
        assert f'"chunks": {count}'.encode() in marker, marker  # every chunk read, once
        ranged = [params for caller, service, op, params in calls.made
                  if (caller, op) == ("embed", "GetObject") and params["Key"].startswith("chunks/") and document_id in params["Key"]]
        size = services.objects.size(chunks_key("northpier", document_id, upload_id))
        assert size is not None and all("Range" in p for p in ranged) and len(ranged) == -(-size // (1024 * 1024)), ranged
    assert peaks[4000] - peaks[400] < GROWTH_MB, peaks
