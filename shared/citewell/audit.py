"""The revision audit: compare records, uploads, artifacts, the index and the caches; repair what is safe.

Run by ``citewell audit [--repair]`` and, on AWS, on a schedule. Every finding names its kind,
its document and what is wrong; ``--repair`` fixes what it safely can and says so. Repairs go
through the same stages and compare-and-set writes as ingestion, so an audit running beside
live uploads cannot undo them: it only removes what can never be served again (an upload
that is no longer current, a revision that is not active), and waits ``CITEWELL_STUCK_MINUTES``
before it calls anything in flight dead.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from functools import partial

import numpy as np
from pydantic import BaseModel

from citewell import leases
from citewell.answers.units import units_identity
from citewell.deletion import compact, delete_document, purge_revision, withdraw_citations
from citewell.errors import CitewellError, InvalidInput, NotFound
from citewell.ingest.stages import (
    IngestRequest,
    abandon,
    chunk_stage,
    embed_stage,
    parse_stage,
    parsed_artifact,
    publish_stage,
    register,
)
from citewell.keys import STAGES, parse_key, raw_key
from citewell.models import Document, DocumentStatus, ErrorInfo, Upload, utcnow
from citewell.records import is_current, update_document
from citewell.services import Services

DEFAULT_STUCK_MINUTES = 60
logger = logging.getLogger(__name__)


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
        self.uploads = {(u.tenant, u.document_id, u.upload_id): u for u in services.metadata.upload_inventory()}

    def found(self, kind: str, tenant: str, document_id: str, detail: str, fix: Callable[[], object] | None = None) -> None:
        """Record a finding; with --repair, fix it. One failing repair never stops the audit."""
        finding = Finding(kind=kind, tenant=tenant, document_id=document_id, detail=detail)
        if self.repair and fix is not None:
            try:
                fix()
                finding.repaired = True
            except CitewellError as error:
                finding.detail += f" (repair failed: {error.message})"
            except Exception as error:  # a store or a service failed: recorded, and the audit goes on
                logger.exception("audit repair failed: %s", kind)
                finding.detail += f" (repair failed: {type(error).__name__}: {error})"
        self.findings.append(finding)

    def in_flight(self, tenant: str, document_id: str) -> bool:
        document = self.documents.get((tenant, document_id))
        return document is not None and document.status in (DocumentStatus.PROCESSING, DocumentStatus.DELETING)

    def expected(self, tenant: str, document_id: str, revision: str) -> bool:
        """Served, or possibly a live upload's work in progress."""
        document = self.documents.get((tenant, document_id))
        return document is not None and (document.active_revision == revision or self.in_flight(tenant, document_id))

    def old(self, upload: Upload) -> bool:
        return utcnow() - upload.created_at >= self.stuck

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
        accesses = self.services.index.access_inventory()
        access = {(t, d, r): (roles, title) for t, d, r, roles, title in accesses}
        rows_by_revision: Counter[tuple[str, str, str]] = Counter((t, d, r) for t, d, r, _, _ in accesses)
        for (tenant, document_id), document in sorted(self.documents.items()):
            revision = document.active_revision
            if revision is None or document.status is DocumentStatus.DELETING:
                continue
            if document.active_upload and not self.services.objects.exists(raw_key(tenant, document_id, document.active_upload)):
                self.found("missing_raw_upload", tenant, document_id,
                           "the served upload's raw object is gone; upload the file again to keep a source to re-index from")
            indexed = inventory.get((tenant, document_id, revision), 0)
            if indexed != document.chunk_count:
                self.found(
                    "missing_revision", tenant, document_id,
                    f"active revision {revision[:12]} has {indexed} indexed chunks, the record says {document.chunk_count}",
                    partial(self._republish, document),
                )
                continue
            chunks = self.services.metadata.get_chunks(tenant, document_id, revision)
            wrong_records = [c for c in chunks if c.allowed_roles != document.allowed_roles or c.title != document.title]
            key = (tenant, document_id, revision)
            wrong_index = rows_by_revision[key] != 1 or access.get(key) != (document.allowed_roles, document.title)
            if wrong_records or wrong_index:
                where = " and ".join(w for w, bad in (("chunk records", wrong_records), ("index rows", wrong_index)) if bad)
                self.found("access_mismatch", tenant, document_id,
                           f"the {where} of revision {revision[:12]} carry other roles or title than the record",
                           partial(self._reaccess, document))

    def _reaccess(self, document: Document) -> None:
        """Rewrite the active revision's chunk records and index rows with the record's access fields."""
        services, revision = self.services, document.active_revision
        assert revision is not None
        chunks = [c.model_copy(update={"allowed_roles": document.allowed_roles, "title": document.title})
                  for c in services.metadata.get_chunks(document.tenant, document.document_id, revision)]
        services.metadata.put_chunks(chunks)
        self._index(chunks)

    def _index(self, chunks: list) -> None:  # type: ignore[type-arg]
        services = self.services
        embed_stage(services, chunks)
        cached = services.metadata.get_embeddings(services.embedder.identity, (c.content_hash for c in chunks))
        services.index.upsert(chunks, np.stack([cached[c.content_hash] for c in chunks]), services.embedder.identity)

    def _republish(self, document: Document) -> None:
        """Index the active revision again from its chunk records, or re-ingest the served upload's bytes."""
        services, tenant, document_id = self.services, document.tenant, document.document_id
        assert document.active_revision is not None
        chunks = services.metadata.get_chunks(tenant, document_id, document.active_revision)
        if chunks:
            self._index(chunks)
            return
        if document.active_upload is None:
            raise NotFound("no chunk records and no served upload to re-index from")
        data = services.objects.get(raw_key(tenant, document_id, document.active_upload))
        upload = register(services, IngestRequest(
            document_id=document_id, tenant=tenant, allowed_roles=document.allowed_roles, data=data,
            filename=document.filename, title=document.title, source=document.source, locale=document.locale,
        ))
        outcome = parse_stage(services, upload)
        if outcome.status == "parsed" and outcome.revision and outcome.content_sha256:
            chunked = chunk_stage(services, upload)
            if chunked is not None:
                embed_stage(services, chunked.chunks)
                publish_stage(services, upload, outcome.revision, outcome.content_sha256)

    def stuck_documents(self) -> None:
        """In flight for longer than the time limit, or at once when the process holding its
        lease is gone (see :mod:`citewell.leases`)."""
        now = utcnow()
        for (tenant, document_id), document in sorted(self.documents.items()):
            if document.status not in (DocumentStatus.PROCESSING, DocumentStatus.DELETING):
                continue
            orphaned = document.lease is not None and leases.is_dead(document.lease)
            if now - document.updated_at < self.stuck and not orphaned:
                continue
            age = int((now - document.updated_at).total_seconds() // 60)
            since = (f"since {document.lease.describe()} ended" if orphaned and document.lease
                     else f"for {age} minutes")
            if document.status is DocumentStatus.DELETING:
                self.found("stuck", tenant, document_id, f"deleting, unfinished {since}",
                           partial(delete_document, self.services, tenant, document_id))
                continue
            latest = next((u for u in self.uploads.values() if u.tenant == tenant and u.document_id == document_id
                           and is_current(document, u)), None)
            finishable = self._finishable(latest) if latest else None
            if latest is not None and finishable is not None:
                self.found("unswitched_upload", tenant, document_id,
                           f"upload {latest.upload_id[:12]} was fully indexed but never became the active revision ({since})",
                           partial(publish_stage, self.services, latest, *finishable))
                continue
            self.found("stuck", tenant, document_id, f"processing, unfinished {since}",
                       partial(self._fail_stuck, document, latest, since))

    def _finishable(self, upload: Upload) -> tuple[str, str, str | None] | None:
        """``(revision, content_sha256, encoding)`` of an upload whose revision is indexed in full."""
        services = self.services
        artifact = parsed_artifact(services, upload)
        if artifact is None:
            return None
        revision = artifact.revision
        records = services.metadata.get_chunks(upload.tenant, upload.document_id, revision)
        if not records or services.index.count(upload.tenant, upload.document_id, revision) != len(records):
            return None
        return revision, artifact.content_sha256, artifact.parsed.encoding

    def _fail_stuck(self, document: Document, upload: Upload | None, since: str) -> None:
        info = ErrorInfo(code="stuck", message=f"processing did not finish ({since}); upload the file again")

        def fail(d: Document) -> Document | None:
            same = d.generation == document.generation and d.upload_seq == document.upload_seq
            return d.model_copy(update={"status": DocumentStatus.FAILED, "error": info}) if same and d.status is DocumentStatus.PROCESSING else None

        update_document(self.services.metadata, document.tenant, document.document_id, fail)
        if upload is not None:
            abandon(self.services, upload)

    def uploads_check(self) -> None:
        """Intents that can never move on again (superseded, or of a deleted document) are abandoned."""
        for (tenant, document_id, upload_id), upload in sorted(self.uploads.items()):
            document = self.documents.get((tenant, document_id))
            if document is not None and (document.active_upload == upload_id or is_current(document, upload)):
                continue
            registering = document is not None and document.generation == upload.generation and upload.seq > document.upload_seq
            if registering and not self.old(upload):
                continue  # a register in progress: its record write comes right after the intent
            why = "its document has no record" if document is None else "a newer upload or a delete came first"
            self.found("orphan_upload", tenant, document_id, f"upload {upload_id[:12]} will never be published: {why}",
                       partial(abandon, self.services, upload))

    def chunk_records(self) -> None:
        for tenant, document_id, revision, count in sorted(self.services.metadata.chunk_inventory()):
            if not self.expected(tenant, document_id, revision):
                self.found(
                    "orphan_chunk_records", tenant, document_id, f"{count} chunk records of revision {revision[:12]} are not served",
                    partial(purge_revision, self.services, tenant, document_id, revision, Counter()),
                )

    def objects(self) -> None:
        objects = self.services.objects
        for stage in STAGES:
            for key in list(objects.list(f"{stage}/")):
                try:
                    _, tenant, document_id, upload_id = parse_key(key)
                except InvalidInput:
                    self.found("foreign_object", "", "", f"{key} is not a citewell object key; remove it by hand if it is not yours")
                    continue
                document = self.documents.get((tenant, document_id))
                upload = self.uploads.get((tenant, document_id, upload_id))
                keep = document is not None and (
                    document.active_upload == upload_id
                    or (upload is not None and (is_current(document, upload) or not self.old(upload)))
                )
                if keep:
                    continue
                self.found("orphan_object", tenant, document_id, f"{key} belongs to no served or current upload",
                           partial(objects.delete, key))
        for key, age in objects.temporaries(""):
            if age >= self.stuck.total_seconds():
                self.found("leftover_temporary", "", "", f"{key}: an unfinished write {int(age // 60)} minutes old",
                           partial(objects.delete, key))

    def answers(self) -> None:
        metadata = self.services.metadata
        for tenant, document_id, revision, answer_id in sorted(metadata.citation_inventory()):
            document = self.documents.get((tenant, document_id))
            if document is not None and document.active_revision == revision:
                continue

            def fix(t: str = tenant, d: str = document_id, r: str = revision, a: str = answer_id) -> None:
                record = metadata.get_answer(t, a)
                if record is not None:
                    metadata.put_answer(withdraw_citations(record, d, r)[0])
                metadata.drop_cached_answers(t, [a])

            self.found("dangling_citation", tenant, document_id,
                       f"answer {answer_id} rests on revision {revision[:12]}, which is no longer served", fix)
        for tenant, answer_id in sorted(metadata.cache_inventory()):
            record = metadata.get_answer(tenant, answer_id)
            stale = [c for c in (record.citations if record else []) if not c.deleted and
                     getattr(self.documents.get((tenant, c.document_id)), "active_revision", None) != c.revision]
            if record is None or record.source_deleted or stale:
                state = "a missing" if record is None else "a withdrawn" if record.source_deleted else "an outdated"
                self.found("dangling_cache", tenant, "", f"a cached answer points at {state} answer {answer_id}",
                           partial(metadata.drop_cached_answers, tenant, [answer_id]))

    def embeddings(self) -> None:
        metadata, identity = self.services.metadata, self.services.embedder.identity
        units = units_identity(identity, "")
        revisions = {r for _, _, r, _ in metadata.chunk_inventory()}
        for other, count in sorted(metadata.embedding_identities().items()):
            if other.startswith(units):
                if other.removeprefix(units) not in revisions:
                    self.found("unused_embeddings", "", "", f"{count} cached unit embeddings of a revision no chunk has",
                               partial(metadata.delete_identity, other))
            elif other != identity:
                self.found("foreign_embeddings", "", "", f"{count} cached embeddings under {other}",
                           partial(metadata.delete_identity, other))
        cached = metadata.embedding_hashes(identity)
        unused = cached - metadata.hashes_in_use(cached)
        if unused:
            self.found("unused_embeddings", "", "", f"{len(unused)} cached chunk embeddings are used by no chunk",
                       partial(metadata.delete_embeddings, identity, unused))


def audit(services: Services, repair: bool = False, stuck: timedelta | None = None) -> AuditReport:
    run = _Audit(services, repair, stuck if stuck is not None else stuck_after())
    inventory = run.index()
    run.live(inventory)
    run.stuck_documents()
    run.uploads_check()
    run.chunk_records()
    run.objects()
    run.answers()
    run.embeddings()
    if repair:  # also finishes a deletion whose compaction was pending
        for line in compact(services):
            run.found("pending_compaction", "", "", line)
    return AuditReport(ok=all(f.repaired for f in run.findings), findings=run.findings)
