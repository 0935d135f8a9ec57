"""Deletion that removes the data everywhere and says what it removed.

One implementation behind the ports, used for a whole document (CLI, API, S3 removal) and
for a replaced revision (publish). Order matters: the document stops being served first (a
tombstone record and a new tenant epoch), then every copy goes, the record last. A crash at
any point leaves a document that is not served, and a rerun finishes the job.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from citewell.chunking import sentence_spans
from citewell.errors import NotFound
from citewell.keys import CHUNKS, EMBEDDED, PARSED, artifact_keys, raw_key
from citewell.models import AnswerRecord, Citation, DocumentStatus, sha256_text
from citewell.services import Services


class DeletionReport(BaseModel):
    document_id: str
    removed: dict[str, int]


def _sentence_hashes(texts: list[str]) -> set[str]:
    hashes = set()
    for text in texts:
        for start, end in sentence_spans(text):
            if text[start:end].strip():
                hashes.add(sha256_text(text[start:end].strip()))
    return hashes


def withdraw_citations(record: AnswerRecord, document_id: str, revision: str | None) -> tuple[AnswerRecord, int]:
    """Citations of the removed source keep only their ref; the answer text, which quotes it, goes,
    and so does the question, which may quote it too."""
    hit = 0
    citations = []
    for citation in record.citations:
        if citation.document_id == document_id and (revision is None or citation.revision == revision):
            citations.append(Citation(ref=citation.ref, deleted=True))
            hit += 1
        else:
            citations.append(citation)
    if not hit:
        return record, 0
    withdrawn = {"citations": citations, "answer": None, "question": "", "source_deleted": True}
    return record.model_copy(update=withdrawn), hit


def purge_revision(services: Services, tenant: str, document_id: str, revision: str, removed: Counter[str]) -> None:
    """Remove one revision's chunks, vectors, records, artifacts, unused embeddings and citations."""
    chunks = services.metadata.get_chunks(tenant, document_id, revision)
    removed["index_chunks"] += services.index.delete_revision(tenant, document_id, revision)
    removed["chunk_records"] += services.metadata.delete_chunks(tenant, document_id, revision)
    for key in artifact_keys(tenant, document_id, revision):
        removed["artifacts"] += services.objects.delete(key)
    identity = services.embedder.identity
    hashes = {c.content_hash for c in chunks}
    removed["embeddings"] += services.metadata.delete_embeddings(identity, hashes - services.metadata.hashes_in_use(hashes))
    live_texts = [
        c.text
        for other in services.metadata.chunk_revisions(tenant, document_id)
        for c in services.metadata.get_chunks(tenant, document_id, other)
    ]
    sentences = _sentence_hashes([c.text for c in chunks]) - _sentence_hashes(live_texts)
    removed["embeddings"] += services.metadata.delete_embeddings(f"{identity}#sentences", sentences)
    answers = services.metadata.answers_citing(tenant, document_id, revision)
    for record in answers:
        updated, count = withdraw_citations(record, document_id, revision)
        services.metadata.put_answer(updated)
        removed["citations"] += count
    removed["cached_answers"] += services.metadata.drop_cached_answers(tenant, [a.answer_id for a in answers])


def delete_document(services: Services, tenant: str, document_id: str) -> DeletionReport:
    """Delete every trace of a document in ``tenant``. Idempotent; unknown ids are an error."""
    document = services.metadata.get_document(tenant, document_id)
    revisions = set(services.metadata.chunk_revisions(tenant, document_id)) | set(services.index.revisions(tenant, document_id))
    artifacts = [
        key
        for prefix in (f"{stage}/{tenant}/{document_id}/" for stage in (PARSED, CHUNKS, EMBEDDED))
        for key in services.objects.list(prefix)
    ]
    raw_exists = services.objects.exists(raw_key(tenant, document_id))
    if document is None and not revisions and not artifacts and not raw_exists:
        services.metadata.compact()  # finishes a deletion that stopped right after removing the record
        raise NotFound(f"no document {document_id!r} in tenant {tenant!r}")
    removed: Counter[str] = Counter()
    if document is not None:
        services.metadata.put_document(
            document.model_copy(update={"status": DocumentStatus.DELETING, "active_revision": None, "error": None})
        )
    removed["cached_answers"] += services.metadata.bump_epoch(tenant)
    for revision in sorted(revisions):
        purge_revision(services, tenant, document_id, revision, removed)
    removed["index_chunks"] += services.index.delete_document(tenant, document_id)
    for key in artifacts:
        removed["artifacts"] += services.objects.delete(key)
    # Answers citing a revision no longer known anywhere else (a crash between steps) are withdrawn too.
    for record in services.metadata.answers_citing(tenant, document_id):
        updated, count = withdraw_citations(record, document_id, None)
        services.metadata.put_answer(updated)
        removed["citations"] += count
    removed["raw_objects"] += services.objects.delete(raw_key(tenant, document_id))
    services.index.compact()
    removed["documents"] += services.metadata.delete_document(tenant, document_id)
    services.metadata.compact()
    return DeletionReport(document_id=document_id, removed={k: removed[k] for k in STORES})


STORES = ("documents", "raw_objects", "artifacts", "chunk_records", "index_chunks", "embeddings", "cached_answers", "citations")
