"""The ingestion stages, written once against the ports.

Each stage reads what the previous one wrote and is idempotent on (document, revision),
because the cloud transport delivers at least once. Locally the runner calls them in turn.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePosixPath

from pydantic import BaseModel

from citewell.errors import IngestError, NotFound, PublishConflict
from citewell.keys import chunks_key, parsed_key, raw_key
from citewell.models import Chunk, Document, DocumentStatus, ErrorInfo, ParsedDocument, utcnow
from citewell.parsers import parse
from citewell.services import Services


class IngestRequest(BaseModel):
    """An upload with its access fields. Built only from trusted input (operator flags, the API record)."""

    document_id: str
    tenant: str
    allowed_roles: frozenset[str]
    data: bytes
    filename: str | None = None
    title: str | None = None
    source: str = ""
    locale: str = "en"


class ParseOutcome(BaseModel):
    revision: str
    unchanged: bool


def register(services: Services, request: IngestRequest) -> Document:
    """Store the raw upload and the document record (status ``processing``); nothing is served yet."""
    existing = services.metadata.get_document(request.tenant, request.document_id)
    document = Document(
        document_id=request.document_id,
        tenant=request.tenant,
        allowed_roles=request.allowed_roles,
        title=request.title or "",
        source=request.source,
        filename=request.filename,
        locale=request.locale,
        status=DocumentStatus.PROCESSING,
        active_revision=existing.active_revision if existing else None,
        chunk_count=existing.chunk_count if existing else 0,
        created_at=existing.created_at if existing else utcnow(),
    )
    services.objects.put(raw_key(document.tenant, document.document_id), request.data)
    services.metadata.put_document(document)
    return document


def _require(services: Services, tenant: str, document_id: str) -> Document:
    document = services.metadata.get_document(tenant, document_id)
    if document is None:
        raise NotFound(f"no document {document_id!r} in tenant {tenant!r}")
    return document


def _title_for(document: Document, parsed: ParsedDocument) -> str:
    if document.title:
        return document.title
    return parsed.title or PurePosixPath(document.filename or document.document_id).stem


def parse_stage(services: Services, tenant: str, document_id: str) -> ParseOutcome:
    """Extract text; the revision is its SHA-256. Unchanged content and metadata is a no-op."""
    document = _require(services, tenant, document_id)
    data = services.objects.get(raw_key(tenant, document_id))
    parsed = parse(data, document.filename or document_id, max_bytes=services.max_bytes)
    document = document.model_copy(update={"title": _title_for(document, parsed)})
    revision = parsed.revision
    if revision == document.active_revision and _served_as_recorded(services, document):
        services.metadata.put_document(document.model_copy(update={"status": DocumentStatus.PUBLISHED, "error": None}))
        return ParseOutcome(revision=revision, unchanged=True)
    services.metadata.put_document(document)
    services.objects.put(parsed_key(tenant, document_id, revision), parsed.model_dump_json().encode())
    return ParseOutcome(revision=revision, unchanged=False)


def _served_as_recorded(services: Services, document: Document) -> bool:
    """The active revision's chunks carry the record's current title and access fields."""
    assert document.active_revision is not None
    chunks = services.metadata.get_chunks(document.tenant, document.document_id, document.active_revision)
    return bool(chunks) and all(c.title == document.title and c.allowed_roles == document.allowed_roles for c in chunks)


def chunk_stage(services: Services, tenant: str, document_id: str, revision: str) -> list[Chunk]:
    document = _require(services, tenant, document_id)
    parsed = ParsedDocument.model_validate_json(services.objects.get(parsed_key(tenant, document_id, revision)))
    chunks = services.chunker.chunk(parsed, document)
    services.objects.put(
        chunks_key(tenant, document_id, revision), json.dumps([c.model_dump(mode="json") for c in chunks]).encode()
    )
    services.metadata.put_chunks(chunks)
    return chunks


def embed_stage(services: Services, chunks: Sequence[Chunk]) -> int:
    """Embed only what the cache lacks under this embedder identity. Returns how many were embedded."""
    identity = services.embedder.identity
    wanted = {c.content_hash: c.embedding_text for c in chunks}
    cached = services.metadata.get_embeddings(identity, wanted)
    missing = [h for h in wanted if h not in cached]
    if missing:
        vectors = services.embedder.embed([wanted[h] for h in missing])
        services.metadata.put_embeddings(identity, dict(zip(missing, vectors)))
    return len(missing)


def publish_stage(services: Services, tenant: str, document_id: str, revision: str) -> int:
    """Index the revision, verify it, switch the active revision, then drop the old one.

    A crash before the switch leaves the previous revision served (its chunks are still
    indexed and it is still active); a crash after leaves extra old chunks that read-back
    ignores and the audit removes. Returns the chunk count.
    """
    document = _require(services, tenant, document_id)
    chunks = services.metadata.get_chunks(tenant, document_id, revision)
    if not chunks:
        raise NotFound(f"no chunk records for revision {revision[:12]} of {document_id!r}")
    identity = services.embedder.identity
    cached = services.metadata.get_embeddings(identity, (c.content_hash for c in chunks))
    absent = [c.chunk_id for c in chunks if c.content_hash not in cached]
    if absent:
        raise NotFound(f"{len(absent)} chunks have no embedding yet, first {absent[0]!r}")
    import numpy as np

    services.index.upsert(chunks, np.stack([cached[c.content_hash] for c in chunks]), identity)
    indexed = services.index.count(tenant, document_id, revision)
    if indexed != len(chunks):
        raise PublishConflict(f"index holds {indexed} chunks of revision {revision[:12]}, expected {len(chunks)}")
    previous = document.active_revision
    if not services.metadata.switch_revision(tenant, document_id, previous, revision, len(chunks)):
        current = services.metadata.get_document(tenant, document_id)
        if current is not None and current.active_revision == revision:
            return len(chunks)  # a redelivery or a concurrent publisher already switched to it
        services.index.delete_revision(tenant, document_id, revision)
        raise PublishConflict(f"the active revision of {document_id!r} moved during publish; retry")
    services.metadata.bump_epoch(tenant)  # cached answers of this tenant may rest on the old revision
    if previous is not None and previous != revision:
        from citewell.deletion import purge_revision

        purge_revision(services, tenant, document_id, previous, Counter())
    return len(chunks)


def record_failure(services: Services, tenant: str, document_id: str, error: IngestError | Exception) -> ErrorInfo:
    """The document keeps serving its previous revision, if any; the failure is on its record."""
    info = ErrorInfo(code=getattr(error, "code", "internal_error"), message=getattr(error, "message", str(error)))
    document = services.metadata.get_document(tenant, document_id)
    if document is not None:
        services.metadata.put_document(document.model_copy(update={"status": DocumentStatus.FAILED, "error": info}))
    return info
