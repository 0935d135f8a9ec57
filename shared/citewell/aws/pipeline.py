"""The ingestion chain on AWS: each object the previous stage writes triggers the next one.

``raw/`` -> parse (writes ``parsed/``) -> chunk (writes ``chunks/``) -> embed (writes the
``embedded/`` marker) -> publish. Every step is idempotent on (document, revision), so a
redelivered S3 event changes nothing. Bad input is recorded on the document and not
retried; anything else raises so the queue retries and, in the end, dead-letters it.
"""

from __future__ import annotations

import json
from urllib.parse import unquote_plus

from citewell.errors import IngestError, NotFound
from citewell.ingest.stages import chunk_stage, embed_stage, parse_stage, publish_stage, record_failure
from citewell.keys import CHUNKS, EMBEDDED, PARSED, RAW, embedded_key, parse_key
from citewell.models import Chunk
from citewell.services import Services

STAGE_OF_PREFIX = {RAW: "parse", PARSED: "chunk", CHUNKS: "embed", EMBEDDED: "publish"}


def object_keys(sqs_body: str, events: tuple[str, ...] = ("ObjectCreated",)) -> list[str]:
    """Object keys of the S3 notifications of these event kinds in one SQS message body."""
    message = json.loads(sqs_body)
    return [
        unquote_plus(record["s3"]["object"]["key"])
        for record in message.get("Records", [])
        if record.get("eventName", "").startswith(events)
    ]


def delete_removed(services: Services, key: str) -> str:
    """The raw upload was removed from the bucket: run the deletion cascade for its document."""
    from citewell.deletion import delete_document

    prefix, tenant, document_id, _ = parse_key(key)
    if prefix != RAW:
        return f"ignored {key}: not an upload"
    if services.objects.exists(key):
        return f"ignored {key}: a newer upload replaced it"
    try:
        report = delete_document(services, tenant, document_id)
    except NotFound:
        return f"ignored {key}: already deleted"
    return f"deleted {document_id}: {report.removed}"


def run_stage(services: Services, stage: str, key: str) -> str:
    """Run ``stage`` for the object ``key``; returns what happened, for the log."""
    if stage == "delete":
        return delete_removed(services, key)
    prefix, tenant, document_id, revision = parse_key(key)
    if STAGE_OF_PREFIX.get(prefix) != stage:
        return f"ignored {key}: not an input of {stage}"
    if stage == "parse":
        try:
            outcome = parse_stage(services, tenant, document_id)
        except NotFound:
            return f"ignored {key}: no document record (uploads need POST /documents first)"
        except IngestError as error:
            record_failure(services, tenant, document_id, error)
            return f"failed {document_id}: {error.code}"
        return f"unchanged {document_id}" if outcome.unchanged else f"parsed {document_id}@{outcome.revision[:12]}"
    assert revision is not None
    if stage == "chunk":
        chunks = chunk_stage(services, tenant, document_id, revision)
        return f"chunked {document_id}@{revision[:12]}: {len(chunks)}"
    if stage == "embed":
        chunks = [Chunk.model_validate(c) for c in json.loads(services.objects.get(key))]
        embedded = embed_stage(services, chunks)
        services.objects.put(embedded_key(tenant, document_id, revision), json.dumps({"chunks": len(chunks)}).encode())
        return f"embedded {document_id}@{revision[:12]}: {embedded} new of {len(chunks)}"
    count = publish_stage(services, tenant, document_id, revision)
    services.objects.delete(key)  # the marker has done its job
    return f"published {document_id}@{revision[:12]}: {count} chunks"
