"""The record ports: the authoritative records, one small port per role.

Each adapter (``citewell.metadata.sqlite``, ``citewell.metadata.dynamodb``) keeps every role in one
database, so one object serves them all (:class:`MetadataStore`) and a write may span roles in one
transaction (an answer is recorded only while its sources are served). Callers hold each role by
its port (``services.documents``, ``services.chunks``, ...) and so say what they touch.

Every read returns what is stored now: a record that is not there is None (or left out of a
mapping or a list), never an error. A write that lost a race returns None or False, never raises;
deletes return how many items went (0: nothing was there). The SQLite adapter raises
:class:`~citewell.errors.Busy` when another process holds the write lock past its timeout.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np

from citewell.filters import SearchFilter
from citewell.leases import Lease
from citewell.models.answers import AnswerRecord
from citewell.models.chunks import Chunk
from citewell.models.conversations import Conversation
from citewell.models.documents import Document, Upload
from citewell.models.identity import Identity
from citewell.models.removals import Removal


@dataclass(frozen=True)
class DocumentPage:
    """One page of a listing: the records the reader may read, by id, and the id to continue
    after (None: the listing is done). A page may hold fewer than asked and still go on: a
    store stops after reading a bounded number of records (see ``DocumentRecords.page_documents``)."""

    documents: list[Document]
    after: str | None


class DocumentRecords(Protocol):
    """Document records by ``(tenant, document_id)``: access fields, status, the active revision
    and upload, the generation (one per life of the record). Every write is a compare-and-set on
    ``version``."""

    def get_document(self, tenant: str, document_id: str) -> Document | None:
        """The record, read strongly consistent; None when there is none."""
        ...

    def get_documents(self, tenant: str, document_ids: Iterable[str]) -> dict[str, Document]:
        """The records by id; ids without one are left out."""
        ...

    def list_documents(self, tenant: str) -> list[Document]:
        """Every record of the tenant, whatever its roles (the operator's view)."""
        ...

    def page_documents(self, tenant: str, limit: int, after: str | None = None, reader: Identity | None = None) -> DocumentPage:
        """At most ``limit`` of the tenant's records with ids after ``after``, in id order, read by
        key. With a ``reader`` only the records it may read are taken, before the page is cut, so
        a page never holds or counts another's; without one (the operator) all are."""
        ...

    def find_documents(self, identity: Identity, wanted: SearchFilter) -> frozenset[str]:
        """The ids of the records ``identity`` may read that ``wanted`` admits (as
        :meth:`SearchFilter.admits` decides); InvalidInput when more than ``MAX_SCOPE``."""
        ...

    def save_document(self, document: Document) -> Document | None:
        """Compare-and-set: write only if the stored version is still ``document.version`` (0:
        no record yet). Returns the stored record (version + 1), or None if someone else wrote."""
        ...

    def delete_document(self, tenant: str, document_id: str, generation: str | None = None) -> int:
        """Remove the record (1) or find none (0); with ``generation``, only while it is still that
        life of the record. Conflict when other writes keep winning the race (DynamoDB)."""
        ...

    def all_documents(self) -> list[Document]:
        """Every record of every tenant: what a restart, a sweep and the audit go through."""
        ...


class UploadRecords(Protocol):
    """Upload intents by ``(tenant, document_id, upload_id)``: each upload's immutable record,
    written at register, that every stage works from (sequence number, roles, title, source)."""

    def put_upload(self, upload: Upload) -> None:
        """Store the intent, replacing one with the same key."""
        ...

    def get_upload(self, tenant: str, document_id: str, upload_id: str) -> Upload | None:
        """The intent; None when there is none."""
        ...

    def list_uploads(self, tenant: str, document_id: str) -> list[Upload]:
        """The document's intents, oldest first (by ``seq``)."""
        ...

    def delete_upload(self, tenant: str, document_id: str, upload_id: str) -> int:
        """Remove the intent; 1 if it was there, else 0."""
        ...

    def upload_inventory(self) -> list[Upload]:
        """Every intent of every tenant (for the audit)."""
        ...


@runtime_checkable
class ClaimingUploads(UploadRecords, Protocol):
    """Upload records that note which object used an upload's form, for a bucket that keeps
    every version sent to one key (DynamoDB beside S3); a store keeping one object per key
    has no second one to refuse."""

    def claim_upload(self, tenant: str, document_id: str, upload_id: str, received: str) -> str | None:
        """Record ``received`` (the object that used the upload's form) on the intent, once.
        Returns what the intent holds afterwards: ``received`` when it was first or the same, the
        object that came first otherwise; None when the intent is gone."""
        ...


class ChunkRecords(Protocol):
    """Chunk records by ``(tenant, document_id, revision, chunk_id)``: the evidence text of each
    revision, in order, with its content hash (which the embedding cache is keyed by)."""

    def put_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Replace every (document, revision) present in ``chunks`` with exactly these records."""
        ...

    def get_chunks(self, tenant: str, document_id: str, revision: str) -> list[Chunk]:
        """The revision's records in their order; empty when it has none."""
        ...

    def chunk_pages(self, tenant: str, document_id: str, revision: str, size: int = ...) -> Iterator[list[Chunk]]:
        """The revision's records, at most ``size`` a page (the store's own bound when not given), in
        chunk-id order (not reading order): what a publish and the audit's access check read, so a
        revision of any length is held one page at a time."""
        ...

    def get_chunks_by_id(self, tenant: str, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], Chunk]:
        """Chunk records by ``(document_id, revision, chunk_id)``; absent keys are left out."""
        ...

    def set_access(self, tenant: str, document_id: str, revision: str, allowed_roles: frozenset[str], title: str) -> int:
        """Rewrite the revision's records with these access fields, a page at a time (the audit's
        repair of a revision of any length), each keeping its place in reading order, its content
        hash following its title; returns how many were rewritten."""
        ...

    def chunk_revisions(self, tenant: str, document_id: str) -> list[str]:
        """The revisions of the document that have records, sorted."""
        ...

    def hashes_in_use(self, content_hashes: Iterable[str]) -> set[str]:
        """Which of these content hashes some chunk record still has."""
        ...

    def delete_chunks(self, tenant: str, document_id: str, revision: str) -> int:
        """Remove the revision's records; returns how many went."""
        ...

    def chunk_inventory(self) -> list[tuple[str, str, str, int]]:
        """``(tenant, document_id, revision, records)`` for every revision with records."""
        ...


class EmbeddingCache(Protocol):
    """Cached vectors by ``(embedder identity, content hash)``: a text is embedded once per model,
    and vectors of different identities never mix."""

    def get_embeddings(self, identity: str, content_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors by hash; hashes not cached are left out."""
        ...

    def put_embeddings(self, identity: str, vectors: dict[str, np.ndarray]) -> None:
        """Cache these vectors (by hash), replacing any under the same key."""
        ...

    def delete_embeddings(self, identity: str, content_hashes: Iterable[str]) -> int:
        """Drop these cached vectors, used or not; returns how many went."""
        ...

    def delete_unused_embeddings(self, identity: str, content_hashes: Iterable[str]) -> int:
        """Drop those of these cached embeddings that no chunk record uses, judged at the delete:
        a chunk stage that wrote its records first keeps its vectors. Returns how many went."""
        ...

    def embedding_hashes(self, identity: str, low: str | None = None, high: str | None = None) -> set[str]:
        """Every hash cached under ``identity`` (from ``low`` on and below ``high``, given them:
        the audit reads the cache a range at a time)."""
        ...

    def embedding_identities(self) -> dict[str, int]:
        """Each identity with cached vectors, and how many it has."""
        ...

    def delete_identity(self, identity: str) -> int:
        """Drop every vector cached under ``identity`` (a model gone); returns how many went."""
        ...


class AnswerRecords(Protocol):
    """Answer records by ``(tenant, answer_id)`` with the sources each rests on (its citations).
    A new record and its cache entry are written together (:meth:`record_answer`); the cache
    itself is :class:`AnswerCache`."""

    def put_answer(self, record: AnswerRecord) -> None:
        """Store (or rewrite, as a withdrawal does) a record whatever its sources are now."""
        ...

    def record_answer(self, record: AnswerRecord, cache: tuple[str, int] | None = None) -> bool:
        """Store a new answer (and its cache entry ``(cache_key, epoch)``) only while every source
        it rests on still serves the revision it read, atomically with that check; False when one
        changed (a delete or replacement won the race: nothing was written)."""
        ...

    def get_answer(self, tenant: str, answer_id: str) -> AnswerRecord | None:
        """The record; None when there is none."""
        ...

    def get_answers(self, tenant: str, answer_ids: Iterable[str]) -> dict[str, AnswerRecord]:
        """Records by id, read in batches; absent ids are left out."""
        ...

    def answers_citing(self, tenant: str, document_id: str, revision: str | None = None) -> list[AnswerRecord]:
        """The answers resting on the document (on that revision of it, given one), each once."""
        ...

    def cited_documents(self) -> list[tuple[str, str]]:
        """``(tenant, document_id)`` of every document an answer rests on (and perhaps of some no
        answer rests on any longer), without reading the citations: the audit splits them into pages."""
        ...

    def stale_citations(self, tenant: str, document_id: str, served: str | None) -> list[tuple[str, str]]:
        """``(revision, answer_id)`` of every answer resting on the document at a revision other
        than ``served`` (at any, given None), in that order, read without reading those at ``served``:
        what the audit's citation check reads grows with what it may find, not with the answers."""
        ...


class AnswerCache(Protocol):
    """The answer cache by ``(cache key, tenant, epoch)``, and each tenant's corpus epoch, which a
    publish or a delete moves so no cached answer outlives the corpus it was given."""

    def tenant_epoch(self, tenant: str) -> int:
        """The tenant's corpus epoch (0 before the first move)."""
        ...

    def bump_epoch(self, tenant: str) -> int:
        """Move the tenant's corpus epoch and drop its cached answers; returns how many were dropped."""
        ...

    def get_cached_answer(self, cache_key: str, tenant: str, epoch: int) -> str | None:
        """The answer id cached under the key at that epoch; None when there is none."""
        ...

    def put_cached_answer(self, cache_key: str, tenant: str, epoch: int, answer_id: str) -> None:
        """Cache ``answer_id`` under the key at that epoch, replacing what was there."""
        ...

    def drop_cached_answers(self, tenant: str, answer_ids: Iterable[str]) -> int:
        """Drop the cache entries that give these answers; returns how many went."""
        ...

    def cache_inventory(self) -> list[tuple[str, str]]:
        """``(tenant, answer_id)`` of every cached answer."""
        ...


class ConversationRecords(Protocol):
    """Conversations by ``(tenant, conversation_id)``: a head (owner, times, ``turn_count``) and a
    subject's turns stored each on its own, each naming the answer it got. Every write is a
    compare-and-set on the head's ``version``; a write carries the turns it adds or changes and
    leaves the others as stored, so an ask costs the same at turn 5,000 as at turn 1. A record
    stored whole (turns inside, as before turns were stored on their own) is read as it is and
    split at its first write."""

    def save_conversation(self, conversation: Conversation) -> Conversation | None:
        """Store the head over the version read (0: new) with the turns it carries (new ones, or
        changed ones replacing theirs by ``seq``; ``turn_count`` is raised to the highest carried); turns it
        does not carry stay as stored. Returns
        the head stored, carrying those turns; None when another writer won. A write of more turns
        than one transaction holds goes in several, each a compare-and-set: a lost race may leave
        the first written (a withdrawal's rerun finishes it)."""
        ...

    def get_conversation(self, tenant: str, conversation_id: str, last: int | None = None,
                         before: int | None = None) -> Conversation | None:
        """The conversation with all its turns, or with its latest ``last`` (0: the head alone);
        with ``before``, only turns of a lower ``seq`` (a page of a view, read back from there);
        never a turn past the head's ``turn_count``. Reads only the turns it returns. None when
        there is none."""
        ...

    def conversations_of(self, tenant: str, subject: str, limit: int = 50, last: int | None = None) -> list[Conversation]:
        """The subject's conversations, the latest first, at most ``limit``, each with its latest
        ``last`` turns (None: all)."""
        ...

    def conversations_answering(self, tenant: str, answer_ids: Iterable[str]) -> list[Conversation]:
        """Every conversation with a turn that got one of these answers (a withdrawal's turns),
        each carrying those turns only."""
        ...

    def conversations_idle_since(self, before: datetime) -> list[Conversation]:
        """Every conversation whose last question is older than ``before`` (what expiry removes),
        read without reading the others; heads only."""
        ...

    def delete_conversation(self, tenant: str, conversation_id: str) -> int:
        """Remove the conversation, every turn and lookup entry of it; 1 if it was there, else 0."""
        ...

    def conversation_inventory(self) -> list[Conversation]:
        """Every conversation of every tenant with all its turns (for the operator's feedback report)."""
        ...

    def conversation_keys(self) -> list[tuple[str, str]]:
        """``(tenant, conversation_id)`` of every conversation, without reading them: the audit
        splits them into pages and reads each page's with :meth:`get_conversation`."""
        ...


class Removals(Protocol):
    """The journal of removals of stored text, and the compaction that makes them physical:
    a removal is noted before anything goes and cleared once a compaction has seen it through."""

    def begin_removal(self, owner: Lease | None) -> str:
        """Note, durably and before anything goes, that stored text is being removed; returns its id."""
        ...

    def end_removal(self, removal_id: str) -> None:
        """Mark the removal's deletes done (it still waits for its compaction); an unknown id is ignored.
        A store whose deletes leave no bytes behind (DynamoDB) keeps no journal: ``removals`` is empty."""
        ...

    def removals(self) -> list[Removal]:
        """Removals whose compaction has not been seen through (see :func:`citewell.deletion.compact`)."""
        ...

    def clear_removals(self, removal_ids: Iterable[str]) -> None:
        """Forget these removals: a compaction saw them through."""
        ...

    def compact(self, removed: bool) -> bool:
        """Make deletions physical: nothing removed may remain in logs, free space or the unused
        space of live pages; ``removed`` says text was removed since the last compaction that
        finished (a store may then rewrite its files). False when that could not finish now
        (another reader pins the log): the bytes are pending."""
        ...


@runtime_checkable
class AuditCheckpoints(Protocol):
    """How far each page of an audit run got, kept where a later invocation finds it: a page
    cut short (its function timed out, or stopped for time) resumes after its last step done."""

    def audit_progress(self, run_id: str, page: int) -> int:
        """The items of the page done so far (0 for a page never started)."""
        ...

    def save_audit_progress(self, run_id: str, page: int, done: int) -> None:
        """Record that the page's first ``done`` items are done."""
        ...


class MetadataStore(
    DocumentRecords, UploadRecords, ChunkRecords, EmbeddingCache, AnswerRecords, AnswerCache, ConversationRecords, Removals,
    Protocol,
):
    """Every record role in one store: what each adapter implements, and what
    :func:`citewell.services.records` hands to every role of :class:`~citewell.services.Services`."""
