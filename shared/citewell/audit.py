"""The revision audit: compare records, artifacts, the index and the caches; repair what is safe.

Run by ``citewell audit [--repair]`` and, on AWS, on a schedule. Every finding names its kind,
its document and what is wrong; ``--repair`` fixes what it safely can and says so.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from functools import partial

from pydantic import BaseModel

from citewell.deletion import delete_document, purge_revision, withdraw_citations
from citewell.errors import CitewellError
from citewell.ingest.stages import chunk_stage, embed_stage, parse_stage, publish_stage, record_failure
from citewell.keys import CHUNKS, EMBEDDED, PARSED, RAW, parse_key
from citewell.models import Document, DocumentStatus, utcnow
from citewell.services import Services

DEFAULT_STUCK_MINUTES = 60
_IN_FLIGHT = {DocumentStatus.PROCESSING, DocumentStatus.DELETING}


class Finding(BaseModel):
    kind: str
    tenant: str
    document_id: str
    detail: str
    repaired: bool = False


class AuditReport(BaseModel):
    ok: bool
    findings: list[Finding]


def stuck_after() -> timedelta:
    return timedelta(minutes=float(os.environ.get("CITEWELL_STUCK_MINUTES", DEFAULT_STUCK_MINUTES)))


class _Audit:
    def __init__(self, services: Services, repair: bool, stuck: timedelta) -> None:
        self.services = services
        self.repair = repair
        self.stuck = stuck
        self.findings: list[Finding] = []
        self.documents = {(d.tenant, d.document_id): d for d in services.metadata.all_documents()}

    def found(self, kind: str, tenant: str, document_id: str, detail: str, fix: Callable[[], object] | None = None) -> None:
        finding = Finding(kind=kind, tenant=tenant, document_id=document_id, detail=detail)
        if self.repair and fix is not None:
            try:
                fix()
                finding.repaired = True
            except CitewellError as error:
                finding.detail += f" (repair failed: {error.message})"
        self.findings.append(finding)

    def expected(self, tenant: str, document_id: str, revision: str) -> bool:
        """Served, or belonging to a document mid-flight (its extra revision is expected then)."""
        document = self.documents.get((tenant, document_id))
        return document is not None and (document.active_revision == revision or document.status in _IN_FLIGHT)

    # -- the checks --------------------------------------------------------------------

    def index(self) -> dict[tuple[str, str, str], int]:
        inventory = {(t, d, r): n for t, d, r, n in self.services.index.inventory()}
        for (tenant, document_id, revision), count in sorted(inventory.items()):
            if not self.expected(tenant, document_id, revision):
                document = self.documents.get((tenant, document_id))
                why = "the document has no record" if document is None else "it is not the active revision"
                self.found(
                    "orphan_index_chunks", tenant, document_id, f"{count} chunks of revision {revision[:12]} are indexed but {why}",
                    partial(self.services.index.delete_revision, tenant, document_id, revision),
                )
        identity = self.services.index.embedder_identity()
        if identity is not None and identity != self.services.embedder.identity:
            self.found("embedder_mismatch", "", "", f"the index holds {identity} vectors; the embedder is {self.services.embedder.identity}")
        return inventory

    def live(self, inventory: dict[tuple[str, str, str], int]) -> None:
        for (tenant, document_id), document in sorted(self.documents.items()):
            if document.active_revision is None or document.status in _IN_FLIGHT:
                continue
            indexed = inventory.get((tenant, document_id, document.active_revision), 0)
            if indexed != document.chunk_count:
                self.found(
                    "missing_revision", tenant, document_id,
                    f"active revision {document.active_revision[:12]} has {indexed} indexed chunks, the record says {document.chunk_count}",
                    partial(self._republish, document),
                )

    def _republish(self, document: Document) -> None:
        services, tenant, document_id = self.services, document.tenant, document.document_id
        revision = document.active_revision
        assert revision is not None
        chunks = services.metadata.get_chunks(tenant, document_id, revision)
        if not chunks:
            outcome = parse_stage(services, tenant, document_id)
            revision = outcome.revision
            chunks = chunk_stage(services, tenant, document_id, revision)
        embed_stage(services, chunks)
        publish_stage(services, tenant, document_id, revision)

    def stuck_documents(self) -> None:
        now = utcnow()
        for (tenant, document_id), document in sorted(self.documents.items()):
            if document.status not in _IN_FLIGHT or now - document.updated_at < self.stuck:
                continue
            age = int((now - document.updated_at).total_seconds() // 60)
            fix: Callable[[], object]
            if document.status is DocumentStatus.DELETING:
                fix = partial(delete_document, self.services, tenant, document_id)
            else:
                stuck = _Stuck(f"processing did not finish within {age} minutes")
                fix = partial(record_failure, self.services, tenant, document_id, stuck)
            self.found("stuck", tenant, document_id, f"{document.status.value} for {age} minutes", fix)

    def chunk_records(self) -> None:
        for tenant, document_id, revision, count in sorted(self.services.metadata.chunk_inventory()):
            if not self.expected(tenant, document_id, revision):
                self.found(
                    "orphan_chunk_records", tenant, document_id, f"{count} chunk records of revision {revision[:12]} are not served",
                    partial(purge_revision, self.services, tenant, document_id, revision, Counter()),
                )

    def objects(self) -> None:
        for key in list(self.services.objects.list(RAW)):
            _, tenant, document_id, _ = parse_key(key)
            if (tenant, document_id) not in self.documents:
                self.found("orphan_raw_object", tenant, document_id, f"{key} has no document record",
                           partial(self.services.objects.delete, key))
        for prefix in (PARSED, CHUNKS, EMBEDDED):
            for key in list(self.services.objects.list(prefix)):
                _, tenant, document_id, revision = parse_key(key)
                assert revision is not None
                if not self.expected(tenant, document_id, revision):
                    self.found("orphan_artifact", tenant, document_id, f"{key} belongs to no served revision",
                               partial(self.services.objects.delete, key))

    def answers(self) -> None:
        metadata = self.services.metadata
        for tenant, document_id, revision, answer_id in sorted(metadata.citation_inventory()):
            document = self.documents.get((tenant, document_id))
            if document is not None and (document.active_revision == revision or document.status in _IN_FLIGHT):
                continue

            def fix(t: str = tenant, d: str = document_id, r: str = revision, a: str = answer_id) -> None:
                record = metadata.get_answer(t, a)
                if record is not None:
                    metadata.put_answer(withdraw_citations(record, d, r)[0])
                metadata.drop_cached_answers(t, [a])

            self.found("dangling_citation", tenant, document_id,
                       f"answer {answer_id} cites revision {revision[:12]}, which is no longer served", fix)
        for tenant, answer_id in sorted(metadata.cache_inventory()):
            record = metadata.get_answer(tenant, answer_id)
            if record is None or record.source_deleted:
                state = "a missing" if record is None else "a withdrawn"
                self.found("dangling_cache", tenant, "", f"a cached answer points at {state} answer {answer_id}",
                           partial(metadata.drop_cached_answers, tenant, [answer_id]))

    def embeddings(self) -> None:
        ours = {self.services.embedder.identity, f"{self.services.embedder.identity}#sentences"}
        for identity, count in sorted(self.services.metadata.embedding_identities().items()):
            if identity not in ours:
                self.found("foreign_embeddings", "", "", f"{count} cached embeddings under {identity}",
                           partial(self.services.metadata.delete_identity, identity))


class _Stuck(CitewellError):
    code = "stuck"


def audit(services: Services, repair: bool = False, stuck: timedelta | None = None) -> AuditReport:
    run = _Audit(services, repair, stuck if stuck is not None else stuck_after())
    inventory = run.index()
    run.live(inventory)
    run.stuck_documents()
    run.chunk_records()
    run.objects()
    run.answers()
    run.embeddings()
    if repair:  # also finishes a deletion that stopped after its record was removed
        services.index.compact()
        services.metadata.compact()
    return AuditReport(ok=all(f.repaired for f in run.findings), findings=run.findings)
