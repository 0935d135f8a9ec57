"""The revision audit's checks: compare records, uploads, artifacts, the index and the caches; repair what is safe.

Run page by page (:mod:`citewell.audit_pages`): by ``citewell audit [--repair]`` in one loop,
and on AWS fanned out over a queue. Every finding names its kind, its document and what is
wrong; ``--repair`` fixes what it safely can and says so. Repairs go through the same stages
and compare-and-set writes as ingestion, so an audit running beside live uploads cannot undo
them: it only removes what can never be served again (an upload that is no longer current, a
revision that is not active), and waits ``CITEWELL_STUCK_MINUTES`` before it calls anything in
flight dead.

The inventories are read when a check first needs them, and uploads go on meanwhile: so every
finding is checked again against the records as they are when it is made, and dropped when it
no longer holds. That check is enough to act on, because what it proves is for good: a revision
that is neither active nor its document's in flight, or an upload that is no longer current,
never becomes current again (ids are never reused, and a later upload takes a new one).
Changes that are not removals (failing a stuck document, finishing a delete) are
compare-and-sets on the record version the audit saw. The same holds between pages run at once.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import cached_property, partial

from pydantic import BaseModel

from citewell import leases
from citewell.deletion import (
    delete_document,
    finish_purges,
    purge_revision,
    removing,
    withdraw_citations,
)
from citewell.errors import CitewellError, InvalidInput, NotFound
from citewell.ingest.registration import register_upload
from citewell.ingest.stages import (
    IngestRequest,
    abandon,
    chunk_stage,
    embed_stage,
    parse_stage,
    parsed_artifact,
    publish_stage,
    record_failure,
    register,
    reindex_revision,
    vector_stage,
)
from citewell.keys import STAGES, parse_key, raw_key, units_identity
from citewell.models.answers import AnswerRecord
from citewell.models.documents import Document, DocumentStatus, ErrorInfo, Upload, descriptive
from citewell.models.values import utcnow
from citewell.ports import ChainedObjects, StagedIndex
from citewell.records import is_current, update_document
from citewell.services import Services

logger = logging.getLogger(__name__)


class Finding(BaseModel):
    """What one check found; ``repaired``: the repair is done; ``started``: it was handed to the
    ingestion chain, which finishes it (the next audit sees whether it did)."""

    kind: str
    tenant: str
    document_id: str
    detail: str
    repaired: bool = False
    started: bool = False


class Started(BaseModel):
    """What a repair returns when it only starts the work: ``what`` says what was set going."""

    what: str


class Served(BaseModel):
    """A served document as a page of the live check gets it: its active revision when the run
    was planned, with what the index held of that revision then (its rows, and each distinct
    ``(roles, title)`` they carry), so no page asks the index for an inventory of its own."""

    tenant: str
    document_id: str
    revision: str
    indexed: int
    access: list[tuple[list[str], str]]


def stuck_after() -> timedelta:
    """How long a document may sit in a working state before it counts as stuck (``CITEWELL_STUCK_MINUTES``)."""
    from citewell.settings import settings

    return timedelta(minutes=settings().stuck_minutes)


class Checks:
    """One audit's checks over ``services``, with the snapshot of records they share (read when
    first needed: a page that needs no inventory reads none)."""

    def __init__(self, services: Services, repair: bool, stuck: timedelta) -> None:
        self.services = services
        self.repair = repair
        self.stuck = stuck
        self.findings: list[Finding] = []

    @cached_property
    def documents(self) -> dict[tuple[str, str], Document]:
        return {(d.tenant, d.document_id): d for d in self.services.documents.all_documents()}

    @cached_property
    def uploads(self) -> dict[tuple[str, str, str], Upload]:
        return {(u.tenant, u.document_id, u.upload_id): u for u in self.services.uploads.upload_inventory()}

    def found(self, kind: str, tenant: str, document_id: str, detail: str, fix: Callable[[], object] | None = None,
              holds: Callable[..., bool] | None = None) -> None:
        """Record a finding; with --repair, fix it. ``holds`` checks it again against the records
        as they are now, first: a finding the inventories' snapshot made and a concurrent upload
        has since undone is dropped. One failing repair never stops the audit. ``holds`` is called
        with no arguments (typed ``...`` for the lambdas that bind a loop's values as defaults)."""
        if holds is not None and not holds():
            return
        finding = Finding(kind=kind, tenant=tenant, document_id=document_id, detail=detail)
        if self.repair and fix is not None:
            try:
                outcome = fix()
                if isinstance(outcome, Started):
                    finding.started = True
                    finding.detail += f" (repair started: {outcome.what})"
                else:
                    finding.repaired = True
            except CitewellError as error:
                finding.detail += f" (repair failed: {error.message})"
            except Exception as error:  # a store or a service failed: recorded, and the audit goes on
                logger.exception("audit repair failed: %s", kind)
                finding.detail += f" (repair failed: {type(error).__name__}: {error})"
        self.findings.append(finding)

    def now(self, tenant: str, document_id: str) -> Document | None:
        """The record as it is now, not as the audit's snapshot had it."""
        return self.services.documents.get_document(tenant, document_id)

    @staticmethod
    def _expected(document: Document | None, revision: str) -> bool:
        return document is not None and (
            document.active_revision == revision or document.status in (DocumentStatus.PROCESSING, DocumentStatus.DELETING)
        )

    def expected(self, tenant: str, document_id: str, revision: str) -> bool:
        """Served, or possibly a live upload's work in progress, in the snapshot."""
        return self._expected(self.documents.get((tenant, document_id)), revision)

    def unserved(self, tenant: str, document_id: str, revision: str) -> Callable[[], bool]:
        """Whether ``revision`` is still neither served nor possibly in flight, asked when the finding is made."""
        return lambda: not self._expected(self.now(tenant, document_id), revision)

    def unchanged(self, document: Document) -> Callable[[], bool]:
        """Whether the record is still the version the audit saw."""
        return lambda: getattr(self.now(document.tenant, document.document_id), "version", None) == document.version

    def old(self, upload: Upload) -> bool:
        return utcnow() - upload.created_at >= self.stuck

    # -- the checks --------------------------------------------------------------------

    def index(self) -> None:
        inventory = {(t, d, r): n for t, d, r, n in self.services.index.inventory()}
        for (tenant, document_id, revision), count in sorted(inventory.items()):
            if not self.expected(tenant, document_id, revision):
                document = self.documents.get((tenant, document_id))
                why = "the document has no record" if document is None else "it is not the active revision"
                self.found(
                    "orphan_index_chunks", tenant, document_id,
                    f"{count} chunks of revision {revision[:12]} are indexed but {why}",
                    partial(self._remove_rows, tenant, document_id, revision), self.unserved(tenant, document_id, revision),
                )
        identity = self.services.index.embedder_identity()
        if identity is not None and identity != self.services.embedder.identity:
            self.found("embedder_mismatch", "", "",
                       f"the index holds {identity} vectors; the embedder is {self.services.embedder.identity}")

    def served(self) -> list[Served]:
        """The live check's items: every served document, with its revision's index rows as the
        index holds them now (one aggregation each, for the whole run)."""
        counts = {(t, d, r): n for t, d, r, n in self.services.index.inventory()}
        access: dict[tuple[str, str, str], list[tuple[list[str], str]]] = {}
        for t, d, r, roles, title in self.services.index.access_inventory():
            access.setdefault((t, d, r), []).append((sorted(roles), title))
        served = [(t, d, document.active_revision) for (t, d), document in sorted(self.documents.items())
                  if document.active_revision is not None and document.status is not DocumentStatus.DELETING]
        return [Served(tenant=t, document_id=d, revision=r, indexed=counts.get((t, d, r), 0), access=access.get((t, d, r), []))
                for t, d, r in served]

    def _remove_rows(self, tenant: str, document_id: str, revision: str) -> None:
        with removing(self.services):
            self.services.index.delete_revision(tenant, document_id, revision)

    def live(self, items: Sequence[Served]) -> None:
        """Each served document: its raw upload is there, its revision is indexed in full, and
        its chunk records and index rows carry its roles and title (the records read a page at
        a time, until one differs)."""
        for item in items:
            tenant, document_id, revision = item.tenant, item.document_id, item.revision
            document = self.documents.get((tenant, document_id))
            if document is None or document.active_revision != revision or document.status is DocumentStatus.DELETING:
                continue  # moved on since the run was planned: the next audit looks again
            served = self.unchanged(document)
            if document.active_upload and not self.services.objects.exists(raw_key(tenant, document_id, document.active_upload)):
                self.found("missing_raw_upload", tenant, document_id,
                           "the served upload's raw object is gone; upload the file again to keep a source to re-index from",
                           holds=served)
            if item.indexed != document.chunk_count:
                self.found(
                    "missing_revision", tenant, document_id,
                    f"active revision {revision[:12]} has {item.indexed} indexed chunks, the record says {document.chunk_count}",
                    partial(self._republish, document),
                    lambda d=document, r=revision, s=served:
                        s() and self.services.index.count(d.tenant, d.document_id, r) != d.chunk_count,
                )
                continue
            wrong_records = any(c.allowed_roles != document.allowed_roles or c.title != document.title
                                for page in self.services.chunks.chunk_pages(tenant, document_id, revision) for c in page)
            wrong_index = len(item.access) != 1 or (frozenset(item.access[0][0]), item.access[0][1]) != (
                document.allowed_roles, document.title)
            if wrong_records or wrong_index:
                where = " and ".join(w for w, bad in (("chunk records", wrong_records), ("index rows", wrong_index)) if bad)
                self.found("access_mismatch", tenant, document_id,
                           f"the {where} of revision {revision[:12]} carry other roles or title than the record",
                           partial(self._reaccess, document), served)

    def _reaccess(self, document: Document) -> None:
        """Rewrite the active revision's chunk records and index rows with the record's access
        fields, a page at a time each (a revision of any length fits the audit function's memory):
        the records first, then the rows from them, embedded where a new title is not cached."""
        services, revision = self.services, document.active_revision
        assert revision is not None
        services.chunks.set_access(document.tenant, document.document_id, revision, document.allowed_roles, document.title)
        reindex_revision(services, document.tenant, document.document_id, revision)
        self._unless_replaced(document)

    def _unless_replaced(self, document: Document) -> None:
        """A repair that wrote a revision's rows again removes them if the revision was replaced
        meanwhile: the replacement's purge may have run before the rewrite."""
        assert document.active_revision is not None
        if getattr(self.now(document.tenant, document.document_id), "active_revision", None) != document.active_revision:
            purge_revision(self.services, document.tenant, document.document_id, document.active_revision, Counter())

    def _republish(self, document: Document) -> Started | None:
        """Index the active revision again from its chunk records, or re-ingest the served upload's bytes."""
        services, tenant, document_id = self.services, document.tenant, document.document_id
        assert document.active_revision is not None
        if reindex_revision(services, tenant, document_id, document.active_revision):  # a page at a time
            self._unless_replaced(document)
            return None
        if document.active_upload is None:
            raise NotFound("no chunk records and no served upload to re-index from")
        stored = raw_key(tenant, document_id, document.active_upload)
        request = IngestRequest(document_id=document_id, tenant=tenant, allowed_roles=document.allowed_roles, data=b"",
                                filename=document.filename, title=document.title, source=document.source,
                                **descriptive(document))
        if isinstance(services.objects, ChainedObjects):
            return self._reingest_by_chain(services.objects, document, stored, request)
        upload = register(services, request.model_copy(update={"data": services.objects.get(stored)}))
        outcome = parse_stage(services, upload)
        if outcome.status == "parsed" and outcome.revision and outcome.content_sha256:
            chunked = chunk_stage(services, upload)
            if chunked is not None:
                embed_stage(services, chunked.chunks)
                publish_stage(services, upload, outcome.revision, outcome.content_sha256)
        return None

    def _reingest_by_chain(self, objects: ChainedObjects, document: Document, stored: str,
                           request: IngestRequest) -> Started:
        """Where a stored upload starts the chain (S3), a new upload of the served bytes is
        registered and the stored object copied to its key, inside the bucket: the chain parses,
        chunks, embeds and publishes it as any upload (a long scan through a Textract job), and
        its publication replaces the damaged revision. Nothing runs here that the chain runs,
        and the audit's role writes ``raw/`` only by copying what ``raw/`` holds. The intent holds
        no lease: the chain's functions run it, not this process."""
        now = self.now(document.tenant, document.document_id)
        if now is not None and now.status is DocumentStatus.PROCESSING:
            raise CitewellError("an upload of it is in flight and will replace the revision; the next audit looks again")
        if now is not None and now.status is DocumentStatus.FAILED:  # a re-ingest the chain failed comes here too
            code = now.error.code if now.error else "failed"
            raise CitewellError(f"its latest upload failed ({code}), so the served file is not sent again; upload it again")
        if not objects.exists(stored):  # nothing to send: the record is left as it is (missing_raw_upload says why)
            raise NotFound("no chunk records, and the served upload's raw object is gone")
        upload = register_upload(
            self.services, document_id=request.document_id, tenant=request.tenant, allowed_roles=request.allowed_roles,
            title=request.title, source=request.source, filename=request.filename, described=request)
        try:
            objects.copy(stored, raw_key(upload.tenant, upload.document_id, upload.upload_id))
        except Exception as error:  # nothing will come for this intent: said on the record, which serves on
            record_failure(self.services, upload, error)
            raise
        return Started(what=f"upload {upload.upload_id[:12]} of the stored file queued for ingestion")

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
                           partial(delete_document, self.services, tenant, document_id, document.generation),
                           self.unchanged(document))
                continue
            latest = next((u for u in self.uploads.values() if u.tenant == tenant and u.document_id == document_id
                           and is_current(document, u)), None)
            finishable = self._finishable(latest) if latest else None
            if latest is not None and finishable is not None:
                self.found("unswitched_upload", tenant, document_id,
                           f"upload {latest.upload_id[:12]} was fully indexed but never became the active revision ({since})",
                           partial(self._switch, latest, *finishable), self.unchanged(document))
                continue
            self.found("stuck", tenant, document_id, f"processing, unfinished {since}",
                       partial(self._fail_stuck, document, latest, since), self.unchanged(document))

    def _switch(self, upload: Upload, revision: str, content_sha256: str, encoding: str | None) -> None:
        """Publish an upload indexed in full whose process died before the switch. Its rows may
        have been written by words alone (two-step publication: the kill came before their
        vectors), so its chunks are embedded first; publish_stage refuses chunks without one."""
        embed_stage(self.services, self.services.chunks.get_chunks(upload.tenant, upload.document_id, revision))
        publish_stage(self.services, upload, revision, content_sha256, encoding)

    def _finishable(self, upload: Upload) -> tuple[str, str, str | None] | None:
        """``(revision, content_sha256, encoding)`` of an upload whose revision is indexed in full."""
        services = self.services
        artifact = parsed_artifact(services, upload)
        if artifact is None:
            return None
        revision = artifact.revision
        records = services.chunks.get_chunks(upload.tenant, upload.document_id, revision)
        if not records or services.index.count(upload.tenant, upload.document_id, revision) != len(records):
            return None
        return revision, artifact.content_sha256, artifact.parsed.encoding

    def _fail_stuck(self, document: Document, upload: Upload | None, since: str) -> None:
        info = ErrorInfo(code="stuck", message=f"processing did not finish ({since}); upload the file again")

        def fail(d: Document) -> Document | None:
            same = d.version == document.version  # nothing moved it on since the audit judged it stuck
            if not same or d.status is not DocumentStatus.PROCESSING:
                return None
            return d.model_copy(update={"status": DocumentStatus.FAILED, "error": info})

        if update_document(self.services.documents, document.tenant, document.document_id, fail) is None:
            raise CitewellError(f"{document.document_id!r} moved on while the audit ran; the next audit looks again")
        if upload is not None:
            abandon(self.services, upload)

    def dead_upload(self, document: Document | None, upload: Upload) -> bool:
        """An intent that can never move its document on again: neither served nor current, nor
        a register in progress (its record write comes right after the intent)."""
        if document is not None and (document.active_upload == upload.upload_id or is_current(document, upload)):
            return False
        registering = document is None or (document.generation == upload.generation and upload.seq > document.upload_seq)
        return not registering or self.old(upload)

    def uploads_check(self) -> None:
        """Intents that can never move on again (superseded, or of a deleted document) are abandoned."""
        for (tenant, document_id, upload_id), upload in sorted(self.uploads.items()):
            if not self.dead_upload(self.documents.get((tenant, document_id)), upload):
                continue
            if (tenant, document_id) not in self.documents:
                why = "its document has no record"
            else:
                why = "a newer upload or a delete came first"
            self.found("orphan_upload", tenant, document_id, f"upload {upload_id[:12]} will never be published: {why}",
                       partial(abandon, self.services, upload),
                       lambda u=upload: self.dead_upload(self.now(u.tenant, u.document_id), u))

    def chunk_records(self) -> None:
        for tenant, document_id, revision, count in sorted(self.services.chunks.chunk_inventory()):
            if not self.expected(tenant, document_id, revision):
                self.found(
                    "orphan_chunk_records", tenant, document_id,
                    f"{count} chunk records of revision {revision[:12]} are not served",
                    partial(purge_revision, self.services, tenant, document_id, revision, Counter()),
                    self.unserved(tenant, document_id, revision),
                )

    def objects(self) -> None:
        objects = self.services.objects
        for stage in STAGES:
            for key in list(objects.list(f"{stage}/")):
                try:
                    _, tenant, document_id, upload_id = parse_key(key)
                except InvalidInput:
                    self.found("foreign_object", "", "",
                               f"{key} is not a citewell object key; remove it by hand if it is not yours")
                    continue
                upload = self.uploads.get((tenant, document_id, upload_id))
                if self.kept(self.documents.get((tenant, document_id)), upload, upload_id):
                    continue
                self.found("orphan_object", tenant, document_id, f"{key} belongs to no served or current upload",
                           partial(objects.delete, key),
                           lambda t=tenant, d=document_id, u=upload_id: not self.kept(
                               self.now(t, d), self.services.uploads.get_upload(t, d, u), u))
        for key, age in objects.temporaries(""):
            if age >= self.stuck.total_seconds():
                self.found("leftover_temporary", "", "", f"{key}: an unfinished write {int(age // 60)} minutes old",
                           partial(objects.delete, key))

    def kept(self, document: Document | None, upload: Upload | None, upload_id: str) -> bool:
        """An object of the served upload, or of one that is current or may still be registering."""
        if document is not None and document.active_upload == upload_id:
            return True
        return upload is not None and ((document is not None and is_current(document, upload)) or not self.old(upload))

    def citations(self, items: Sequence[tuple[str, str]]) -> None:
        """Answers resting on a revision no longer served: their citations are withdrawn. Each
        document's record is read as it is now (in batches, a tenant at a time), then the answers
        resting on it at any other revision, never those on the served one."""
        by_tenant: dict[str, list[str]] = {}
        for tenant, document_id in items:
            by_tenant.setdefault(tenant, []).append(document_id)
        for tenant, document_ids in sorted(by_tenant.items()):
            documents = self.services.documents.get_documents(tenant, document_ids)
            for document_id in document_ids:
                served = getattr(documents.get(document_id), "active_revision", None)
                for revision, answer_id in self.services.answers.stale_citations(tenant, document_id, served):
                    self._dangling(tenant, document_id, revision, answer_id)

    def _dangling(self, tenant: str, document_id: str, revision: str, answer_id: str) -> None:
        def moved() -> bool:
            return getattr(self.now(tenant, document_id), "active_revision", None) != revision

        def fix() -> None:
            record = self.services.answers.get_answer(tenant, answer_id)
            if record is not None:
                self.services.answers.put_answer(withdraw_citations(record, document_id, revision)[0])
            self.services.answer_cache.drop_cached_answers(tenant, [answer_id])

        self.found("dangling_citation", tenant, document_id,
                   f"answer {answer_id} rests on revision {revision[:12]}, which is no longer served", fix, moved)

    def caches(self, items: Sequence[tuple[str, str]]) -> None:
        """Cached answers pointing at a missing, withdrawn or outdated answer: the answers and
        the documents they rest on read in batches, a tenant at a time."""
        by_tenant: dict[str, list[str]] = {}
        for tenant, answer_id in items:
            by_tenant.setdefault(tenant, []).append(answer_id)
        for tenant, answer_ids in sorted(by_tenant.items()):
            records = self.services.answers.get_answers(tenant, answer_ids)
            wanted = {d for r in records.values() for d, _ in r.rests_on()}
            documents = self.services.documents.get_documents(tenant, wanted) if wanted else {}
            for answer_id in answer_ids:
                if (state := self._state(records.get(answer_id), documents)) is not None:
                    self.found("dangling_cache", tenant, "", f"a cached answer points at {state} answer {answer_id}",
                               partial(self.services.answer_cache.drop_cached_answers, tenant, [answer_id]),
                               lambda t=tenant, a=answer_id: self._cached_state(t, a) is not None)

    def _cached_state(self, tenant: str, answer_id: str) -> str | None:
        """What is wrong with the answer a cache entry points at, as the records are now; None if nothing."""
        record = self.services.answers.get_answer(tenant, answer_id)
        documents = self.services.documents.get_documents(tenant, {d for d, _ in record.rests_on()}) if record else {}
        return self._state(record, documents)

    @staticmethod
    def _state(record: AnswerRecord | None, documents: dict[str, Document]) -> str | None:
        if record is None:
            return "a missing"
        if record.source_deleted:
            return "a withdrawn"
        stale = [r for d, r in record.rests_on() if getattr(documents.get(d), "active_revision", None) != r]
        return "an outdated" if stale else None

    def identities(self) -> None:
        """Cached embeddings under another model's identity, or of a revision no chunk has."""
        identity = self.services.embedder.identity
        units = units_identity(identity, "")
        revisions = {r for _, _, r, _ in self.services.chunks.chunk_inventory()}
        for other, count in sorted(self.services.embeddings.embedding_identities().items()):
            if other.startswith(units):
                revision = other.removeprefix(units)
                if revision not in revisions:
                    self.found("unused_embeddings", "", "", f"{count} cached unit embeddings of a revision no chunk has",
                               partial(self.services.embeddings.delete_identity, other),
                               lambda r=revision: r not in {v for _, _, v, _ in self.services.chunks.chunk_inventory()})
            elif other != identity:
                self.found("foreign_embeddings", "", "", f"{count} cached embeddings under {other}",
                           partial(self.services.embeddings.delete_identity, other))

    def embeddings(self, low: str | None, high: str | None) -> None:
        """Cached chunk embeddings (of hashes from ``low`` to below ``high``) that no chunk uses."""
        identity = self.services.embedder.identity
        cached = self.services.embeddings.embedding_hashes(identity, low, high)
        unused = cached - self.services.chunks.hashes_in_use(cached)
        if unused:  # the delete itself spares a hash a chunk record took up since
            self.found("unused_embeddings", "", "", f"{len(unused)} cached chunk embeddings are used by no chunk",
                       partial(self.services.embeddings.delete_unused_embeddings, identity, unused))

    def purges(self) -> None:
        """A replacement whose purge of the old revisions never finished (its process ended)."""
        for (tenant, document_id), document in sorted(self.documents.items()):
            if not document.purging:
                continue
            ended = document.lease is not None and leases.is_dead(document.lease)
            if not ended and utcnow() - document.updated_at < self.stuck:
                continue  # the replacing process may be purging right now
            self.found("unfinished_purge", tenant, document_id,
                       f"{len(document.purging)} replaced revisions were never purged",
                       partial(finish_purges, self.services, tenant, document_id, set(document.purging), Counter()),
                       lambda d=document: bool(getattr(self.now(d.tenant, d.document_id), "purging", None)))

    def conversations(self, items: Sequence[tuple[str, str]]) -> None:
        """Turns still holding words whose answer was withdrawn (or is gone), conversations past
        their days (a withdrawal or sweep cut short leaves them), and conversations their owner's
        history and the sweep cannot find (stored before their lookup keys were; saved again).
        Each conversation is read through the port, its turns' answers in batches."""
        from citewell.conversations import expired
        from citewell.deletion import expire_conversations, withdraw_turns
        from citewell.records import update_conversation

        listed: dict[tuple[str, str], set[str]] = {}
        read = [c for c in (self.services.conversations.get_conversation(t, i) for t, i in items) if c is not None]
        live = [c for c in read if not expired(c)]
        old = len(read) - len(live)
        answers: dict[tuple[str, str], AnswerRecord] = {}
        for tenant in sorted({c.tenant for c in live}):
            wanted = {t.answer_id for c in live if c.tenant == tenant for t in c.turns if not t.withdrawn}
            answers.update(((tenant, a), r) for a, r in self.services.answers.get_answers(tenant, wanted).items())
        for conversation in live:
            owner = (conversation.tenant, conversation.subject)
            if owner not in listed:
                listed[owner] = {c.conversation_id
                                 for c in self.services.conversations.conversations_of(*owner, limit=1_000_000, last=0)}
            if conversation.conversation_id not in listed[owner]:  # written before its lookup keys were kept
                self.found("unlisted_conversation", conversation.tenant, "",
                           f"conversation {conversation.conversation_id} is missing from its owner's history "
                           "and the expiry sweep",
                           partial(update_conversation, self.services.conversations, conversation,
                                   lambda c: c.model_copy(update={"turns": []})))
            for turn in conversation.turns:
                if turn.withdrawn:
                    continue
                record = answers.get((conversation.tenant, turn.answer_id))
                if record is None or record.source_deleted:
                    state = "a missing" if record is None else "a withdrawn"
                    self.found("withdrawn_turn", conversation.tenant, "",
                               f"conversation {conversation.conversation_id} keeps the words of turn {turn.seq}, "
                               f"which got {state} answer {turn.answer_id}",
                               partial(withdraw_turns, self.services.conversations, conversation.tenant, [turn.answer_id]))
        if old:
            self.found("expired_conversations", "", "", f"{old} conversations are past CITEWELL_CONVERSATION_DAYS",
                       partial(expire_conversations, self.services))

    def vectors(self) -> None:
        """Served revisions published by words whose vectors never came (an ingest killed or
        stopped between its two steps, or its model failed): the vector lane misses them until
        ``--repair`` embeds them, onto the rows still at that revision only (:func:`vector_stage`)."""
        index = self.services.index
        if not isinstance(index, StagedIndex):
            return
        for tenant, document_id, revision, rows in index.vectorless():
            document = self.documents.get((tenant, document_id))
            if document is None or document.active_revision != revision or document.status is DocumentStatus.DELETING:
                continue  # not served: an orphan (reported above) or a delete's to finish
            owner = document.lease
            running = owner is not None and owner != leases.current() and not leases.is_dead(owner)
            if running and utcnow() - document.updated_at < self.stuck:
                continue  # its own ingest may be embedding it right now

            def waiting(t: str = tenant, d: str = document_id, r: str = revision) -> bool:
                now = self.now(t, d)
                return (now is not None and now.active_revision == r and now.status is not DocumentStatus.DELETING
                        and any(w[:3] == (t, d, r) for w in index.vectorless()))

            self.found("vectors_pending", tenant, document_id,
                       f"{rows} chunks of served revision {revision[:12]} are found by words only: their vectors were never set",
                       partial(self._finish_vectors, index, tenant, document_id, revision), waiting)

    def _finish_vectors(self, index: StagedIndex, tenant: str, document_id: str, revision: str) -> None:
        vector_stage(self.services, self.services.chunks.get_chunks(tenant, document_id, revision))
        if any(w[:3] == (tenant, document_id, revision) for w in index.vectorless()) \
                and getattr(self.now(tenant, document_id), "active_revision", None) == revision:
            raise CitewellError(f"rows of revision {revision[:12]} still wait for vectors")

    def removals(self) -> None:
        """Removals whose process ended, or that ended long ago, without a compaction after them
        (read-only: with --repair the compaction at the end finishes them)."""
        if self.repair:
            return
        now = utcnow()
        left = [r for r in self.services.removals.removals()  # a live process compacts its own at the end
                if (r.owner is not None and leases.is_dead(r.owner)) or (r.done and now - r.started_at >= self.stuck)]
        if count := len(left):
            self.found("pending_compaction", "", "",
                       f"{count} removals never saw their compaction through: deleted text may remain in the "
                       "stores' files until `citewell audit --repair` (or the next delete) compacts them")
