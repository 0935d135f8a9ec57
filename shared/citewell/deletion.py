"""Deletion that removes the data everywhere and says what it removed, and what is still pending.

One implementation behind the ports, used for a whole document (CLI, API, S3 removal) and
for a replaced revision (publish). Order matters: the document stops being served first (a
``deleting`` record, which also stops every in-flight upload of it at its next stage, and a
new tenant epoch), then every copy goes, the record last. A crash at any point leaves a
document that is not served, and a rerun (or the audit) finishes the job.

Removed bytes may outlive their rows in the embedded engines' logs and segments until a
compaction. So every removal is first noted as an intent (:func:`removing`), and the intent
goes only once a compaction that started after the removal ended has finished: a process
killed in between leaves it behind, the read-only audit reports it, and the next start, delete
or ``audit --repair`` compacts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import NamedTuple

from pydantic import BaseModel, Field

from citewell import leases
from citewell.errors import NotFound
from citewell.interrupts import deferred
from citewell.keys import STAGES, document_prefix, units_identity, upload_keys
from citewell.models.answers import AnswerRecord, Citation
from citewell.models.conversations import Conversation
from citewell.models.documents import Document, DocumentStatus, Upload
from citewell.models.values import utcnow
from citewell.ports import ConversationRecords
from citewell.records import update_conversation, update_document
from citewell.services import Services
from citewell.settings import settings

STORES = ("documents", "uploads", "raw_objects", "artifacts", "chunk_records", "index_chunks", "embeddings",
          "cached_answers", "citations", "conversations")
PENDING_HINT = "another process holds a read transaction; `citewell audit --repair` (or the next delete) finishes it"


class DeletionReport(BaseModel):
    document_id: str
    removed: dict[str, int]
    pending: list[str] = Field(default_factory=list)  # removals that could not finish now; empty when every byte is gone


@contextmanager
def removing(services: Services) -> Iterator[None]:
    """Run a removal of stored text under a durable intent (see the module's docstring).

    Ctrl-C waits out the intent's writes: cut between the intent and the ``try`` (or inside its
    end), an intent of a live process would never end, and no compaction in that process could
    see it through."""
    removal = None
    try:
        with deferred():  # delivered at the block's end, inside the ``try``
            removal = services.removals.begin_removal(leases.current())
        yield
    finally:
        if removal is not None:
            with deferred():
                services.removals.end_removal(removal)


def unfinished_removals(services: Services) -> list[str]:
    """Removals whose compaction is still to be seen through: ended, or whose process is gone."""
    return [r.removal_id for r in services.removals.removals()
            if r.done or (r.owner is not None and leases.is_dead(r.owner))]


def withdraw_citations(record: AnswerRecord, document_id: str, revision: str | None) -> tuple[AnswerRecord, int]:
    """An answer resting on the removed source (cited, or read as evidence) loses its text, which
    may quote it, and its question, which may too; its citations of that source keep only their ref."""
    def removed(doc: str, rev: str) -> bool:
        return doc == document_id and (revision is None or rev == revision)

    hit = sum(removed(s.document_id, s.revision) for s in record.considered)
    citations = []
    for citation in record.citations:
        if not citation.deleted and removed(citation.document_id, citation.revision):
            citations.append(Citation(ref=citation.ref, deleted=True))
            hit += 1
        else:
            citations.append(citation)
    if not hit:
        return record, 0
    considered = [s for s in record.considered if not removed(s.document_id, s.revision)]
    withdrawn = {"citations": citations, "considered": considered, "answer": None, "question": "", "conditions": [],
                 "source_deleted": True}
    return record.model_copy(update=withdrawn), hit


def withdraw_turns(conversations: ConversationRecords, tenant: str, answer_ids: Iterable[str]) -> int:
    """The turns that got these (withdrawn) answers lose their words and feedback; returns how
    many conversations changed."""
    ids = set(answer_ids)
    if not ids:
        return 0
    changed = 0
    for conversation in conversations.conversations_answering(tenant, ids):
        def emptied(current: Conversation) -> Conversation | None:  # carries the turns it empties, no others
            kept = [t for t in current.turns if t.answer_id in ids and not t.withdrawn]
            if not kept:
                return None
            return current.model_copy(update={"turns": [
                t.model_copy(update={"asked": "", "question": "", "feedback": None, "withdrawn": True}) for t in kept]})

        def reread(cid: str = conversation.conversation_id) -> Conversation | None:
            return next((c for c in conversations.conversations_answering(tenant, ids) if c.conversation_id == cid), None)

        if update_conversation(conversations, conversation, emptied, reread) is not None:
            changed += 1
    return changed


def _withdraw_answers(services: Services, tenant: str, document_id: str, revision: str | None, removed: Counter[str]) -> None:
    """Turns go before their answers and again after them: a withdrawn answer no longer names the
    source, so a rerun after a kill between the two would not find its turns; and a turn kept
    meanwhile (its ask recorded the answer first) is found by the second pass, or sees the
    withdrawn answer itself (:func:`citewell.conversations.ask_in_conversation`)."""
    answers = services.answers.answers_citing(tenant, document_id, revision)
    ids = [a.answer_id for a in answers]
    withdrawn = withdraw_turns(services.conversations, tenant, ids)
    for record in answers:
        updated, count = withdraw_citations(record, document_id, revision)
        services.answers.put_answer(updated)
        removed["citations"] += count
    removed["cached_answers"] += services.answer_cache.drop_cached_answers(tenant, ids)
    removed["conversations"] += withdrawn + withdraw_turns(services.conversations, tenant, ids)


def purge_revision(services: Services, tenant: str, document_id: str, revision: str, removed: Counter[str]) -> None:
    """Remove one revision's index rows, chunk records, unused embeddings, and the answers resting on it.
    The records are read a page at a time for their content hashes alone: a publish that replaces
    a revision of 50,000 chunks holds 50,000 hashes, not the records."""
    with removing(services):
        hashes = {c.content_hash for page in services.chunks.chunk_pages(tenant, document_id, revision) for c in page}
        removed["index_chunks"] += services.index.delete_revision(tenant, document_id, revision)
        removed["chunk_records"] += services.chunks.delete_chunks(tenant, document_id, revision)
        identity = services.embedder.identity
        removed["embeddings"] += services.embeddings.delete_unused_embeddings(identity, hashes)
        removed["embeddings"] += services.embeddings.delete_identity(units_identity(identity, revision))
        _withdraw_answers(services, tenant, document_id, revision, removed)


def finish_purges(services: Services, tenant: str, document_id: str, revisions: set[str], removed: Counter[str],
                  older: tuple[list[str], list[Upload]] | None = None) -> None:
    """Purge what a switch replaced (the revisions it noted on the record, and ``older``: the
    objects and intents of the uploads before it), then take the note off. Run by the
    publishing process right after its switch, with what it listed before it; and by whoever
    finds the note left behind, with every upload older than the served one."""
    document = services.documents.get_document(tenant, document_id)
    if older is None:
        older = _older_than_served(services, document) if document is not None else ([], [])
    objects, uploads = older
    for revision in sorted(revisions):
        if document is None or revision != document.active_revision:  # never the one served
            purge_revision(services, tenant, document_id, revision, removed)
    for key in objects:
        removed["artifacts"] += services.objects.delete(key)
    for upload in uploads:
        removed["uploads"] += services.uploads.delete_upload(tenant, document_id, upload.upload_id)

    def noted_off(d: Document) -> Document | None:
        left = [r for r in d.purging if r not in revisions]
        return d.model_copy(update={"purging": left}) if left != d.purging else None

    update_document(services.documents, tenant, document_id, noted_off)


def _older_than_served(services: Services, document: Document) -> tuple[list[str], list[Upload]]:
    """The objects and intents of uploads registered before the served one: none can be current again."""
    if not document.active_upload:
        return [], []
    served = services.uploads.get_upload(document.tenant, document.document_id, document.active_upload)
    if not served:
        return [], []
    uploads = [u for u in services.uploads.list_uploads(document.tenant, document.document_id) if u.seq < served.seq]
    keys = [k for u in uploads for k in upload_keys(document.tenant, document.document_id, u.upload_id)]
    return keys, uploads


def forget_vectors_left(services: Services) -> int:
    """Drop cached vectors nothing uses any more, as a start after a kill does: the answerer's
    unit vectors of revisions no chunk record has (an ask killed between caching them and its
    record, after a purge of what it read), and chunk embeddings no chunk record uses (a purge
    killed between removing its chunk records and their embeddings: its rerun no longer knows
    their hashes). Chunk records come before their embeddings, so nothing in flight loses one."""
    identity = services.embedder.identity
    prefix = units_identity(identity, "")
    cached = [i for i in services.embeddings.embedding_identities() if i.startswith(prefix)]  # first: see below
    # A revision is chunked before it is served and its units are cached only once served, so
    # one cached before the inventory below is read has its chunk records in it, unless purged.
    revisions = {r for _, _, r, _ in services.chunks.chunk_inventory()}
    left = [i for i in cached if i.removeprefix(prefix) not in revisions]
    hashes = services.embeddings.embedding_hashes(identity)
    unused = hashes - services.chunks.hashes_in_use(hashes)
    if not left and not unused:
        return 0
    with removing(services):  # the delete itself spares a hash a chunk record took up since
        embeddings = services.embeddings
        return sum(embeddings.delete_identity(i) for i in left) + embeddings.delete_unused_embeddings(identity, unused)


def expire_conversations(services: Services, now: datetime | None = None) -> int:
    """Remove the conversations past ``CITEWELL_CONVERSATION_DAYS``, bytes and all; how many went."""
    days = settings().conversation_days
    idle = services.conversations.conversations_idle_since((now or utcnow()) - timedelta(days=days))
    old = [c for c in idle if c.expired(days, now)]
    if not old:
        return 0
    with removing(services):
        removed = sum(services.conversations.delete_conversation(c.tenant, c.conversation_id) for c in old)
    compact(services)
    return removed


def compact(services: Services) -> list[str]:
    """Make every deletion so far physical; what could not finish now is named. The removals
    that had ended when it started are seen through once both stores compacted."""
    settled = unfinished_removals(services)
    pending = []
    removed = bool(settled)  # every removal of text runs under an intent: none, nothing to rewrite
    if not services.index.compact(removed):
        pending.append(f"index: removed rows remain in its files until the next compaction ({PENDING_HINT})")
    if not services.removals.compact(removed):
        pending.append(f"metadata: removed records remain in its log until the next compaction ({PENDING_HINT})")
    if not pending and settled:
        services.removals.clear_removals(settled)
    return pending


def delete_document(services: Services, tenant: str, document_id: str, generation: str | None = None) -> DeletionReport:
    """Delete every trace of a document in ``tenant``. Idempotent; unknown ids are an error.
    With ``generation`` (the audit finishing a delete it saw), only that life of the record:
    a document deleted and uploaded again since is left alone."""
    prefixes = [document_prefix(stage, tenant, document_id) for stage in STAGES]  # validates tenant and id
    marked = _mark_deleting(services, tenant, document_id, generation)
    traces = _traces(services, tenant, document_id, prefixes, marked)
    if marked is None and not (traces.revisions or any(services.objects.exists(k) for k in traces.objects)
                               or traces.unfinished or traces.uploads):
        compact(services)  # finishes a deletion that stopped right after removing the record
        raise NotFound(f"no document {document_id!r} in tenant {tenant!r}")
    removed: Counter[str] = Counter()
    with removing(services):
        _remove_traces(services, tenant, document_id, prefixes, marked, traces, removed)
    pending = compact(services)
    return DeletionReport(document_id=document_id, removed={k: removed[k] for k in STORES}, pending=pending)


def _mark_deleting(services: Services, tenant: str, document_id: str, generation: str | None) -> Document | None:
    """The record turned into a tombstone (no longer served, leased to this process); None when
    there is no record. With ``generation``, only that life of it: another is NotFound."""
    if generation is not None:
        seen = services.documents.get_document(tenant, document_id)
        if seen is None or seen.generation != generation:
            raise NotFound(f"{document_id!r} in tenant {tenant!r} is no longer the record that was being deleted")

    def tombstone(d: Document) -> Document | None:
        if generation is not None and d.generation != generation:
            return None
        # Not served any more; ``active_upload`` stays, so a rerun still knows the served upload's keys.
        return d.model_copy(update={
            "status": DocumentStatus.DELETING, "active_revision": None, "error": None, "lease": leases.current(),
        })

    marked = update_document(services.documents, tenant, document_id, tombstone)
    if marked is None and generation is not None:
        raise NotFound(f"{document_id!r} in tenant {tenant!r} is no longer the record that was being deleted")
    return marked


class _Traces(NamedTuple):
    """What a document left in the stores, listed before anything is removed."""

    revisions: set[str]  # with chunk records or index rows
    uploads: list[Upload]
    objects: list[str]  # its raw objects and stage artifacts
    unfinished: list[str]  # temporaries of writes that never finished


def _traces(services: Services, tenant: str, document_id: str, prefixes: list[str], marked: Document | None) -> _Traces:
    revisions = set(services.chunks.chunk_revisions(tenant, document_id)) | set(services.index.revisions(tenant, document_id))
    uploads = services.uploads.list_uploads(tenant, document_id)
    # Listed, and named: a key whose current version is a delete marker is not listed, yet holds versions.
    known = {u.upload_id for u in uploads} | ({marked.active_upload} if marked and marked.active_upload else set())
    objects = sorted({key for prefix in prefixes for key in services.objects.list(prefix)}
                     | {key for upload_id in known for key in upload_keys(tenant, document_id, upload_id)})
    unfinished = [key for prefix in prefixes for key, _ in services.objects.temporaries(prefix)]
    return _Traces(revisions, uploads, objects, unfinished)


def _remove_traces(
    services: Services, tenant: str, document_id: str, prefixes: list[str], marked: Document | None, traces: _Traces,
    removed: Counter[str],
) -> None:
    """Remove what ``traces`` lists, counted into ``removed``; with the tombstone ``marked``, every
    row of the id, the answers resting on it, its uploads and at last its record."""

    def still_ours() -> bool:
        """Under our tombstone no upload can register. Without one (the record was already gone)
        the id may begin a new life at any moment, whose rows and objects are not ours: what the
        old life left goes only while no record exists (a new life's are written after its record)."""
        return marked is not None or services.documents.get_document(tenant, document_id) is None

    removed["cached_answers"] += services.answer_cache.bump_epoch(tenant)
    for revision in sorted(traces.revisions):
        if still_ours():
            purge_revision(services, tenant, document_id, revision, removed)
    if marked is not None:  # every row of the id: without a tombstone, only the revisions listed above
        removed["index_chunks"] += services.index.delete_document(tenant, document_id)
    for key in traces.objects + traces.unfinished:
        if still_ours():
            removed["raw_objects" if key.startswith(prefixes[0]) else "artifacts"] += services.objects.delete(key)
    if marked is not None:  # without a record an intent is the audit's: it comes before its record
        _remove_record(services, tenant, document_id, marked, traces.uploads, removed)


def _remove_record(
    services: Services, tenant: str, document_id: str, marked: Document, uploads: list[Upload], removed: Counter[str],
) -> None:
    """The tombstone's last steps: the answers resting on a revision no longer known anywhere else
    (a crash between steps), the upload intents, then the record of this life."""
    _withdraw_answers(services, tenant, document_id, None, removed)
    for upload in uploads:
        removed["uploads"] += services.uploads.delete_upload(tenant, document_id, upload.upload_id)
    removed["documents"] += services.documents.delete_document(tenant, document_id, marked.generation)
