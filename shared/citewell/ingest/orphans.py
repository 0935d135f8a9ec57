"""Uploads and deletions left in flight by a process that ended (kill -9, a power cut), taken over by one that can finish them.

A document stays ``processing`` when the process holding its lease dies (see
:mod:`citewell.leases`): nothing else moves it on. When its latest upload's bytes were stored,
the upload can simply be run again, since every stage is idempotent on its upload. When they
were not, nobody can send them any more (a server's upload forms die with its secret) and
the upload fails with that reason, so the record does not wait for the audit's time limit.
A document left ``deleting`` (the tombstone :func:`citewell.deletion.delete_document` writes
first) is no longer served; the new owner runs that same deletion again, which finishes it.
A replacement killed between its switch and its purge left the replaced revisions noted on the
record (``purging``); they are purged now, and so are cached vectors nothing uses any more (unit
vectors an ask killed mid-way cached for a purged revision, embeddings of chunk records a killed
purge removed). Removals whose compaction never ran are then compacted.

Taking over is a compare-and-set of the record's lease from the dead owner to the new one:
of two processes starting at once, exactly one runs each upload, and an upload whose owner
still runs (another server, a ``citewell ingest`` in a terminal) is never touched. Only a dead
lease on this host is proof; uploads without a lease, or with one from elsewhere, stay the
audit's to judge.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from citewell import leases
from citewell.deletion import compact, finish_purges, forget_vectors_left, unfinished_removals
from citewell.errors import UploadMissing
from citewell.ingest.stages import record_failure
from citewell.keys import raw_key
from citewell.leases import Lease
from citewell.models.documents import Document, DocumentStatus, Upload
from citewell.records import current_upload, is_current, update_document
from citewell.services import Services

logger = logging.getLogger("citewell.serve")


@dataclass
class Adopted:
    resumed: list[Upload] = field(default_factory=list)  # stored: the new owner runs their stages now
    failed: list[Upload] = field(default_factory=list)  # their file never arrived: recorded as failed
    deleting: list[Document] = field(default_factory=list)  # tombstones: the new owner finishes their deletion now
    purged: list[Document] = field(default_factory=list)  # replacements whose purge of the old revisions is now finished
    compacted: bool = False  # removals left awaiting their compaction were compacted


def adopt_orphans(services: Services, lease: Lease) -> Adopted:
    """Take over every current upload and deletion whose owner is gone; the caller runs
    ``Adopted.resumed`` and ``Adopted.deleting``."""
    adopted = Adopted()
    for document in services.documents.all_documents():
        if document.lease is None or not leases.is_dead(document.lease):
            continue
        try:
            _adopt(services, document, document.lease, lease, adopted)
        except Exception:  # a store's error on one document: the others are still taken over
            logger.exception("taking over %s (%s) failed; the audit reports it", document.document_id, document.tenant)
    forget_vectors_left(services)
    if unfinished_removals(services):
        adopted.compacted = not compact(services)
    return adopted


def _adopt(services: Services, document: Document, dead: Lease, lease: Lease, adopted: Adopted) -> None:
    if document.purging and document.status is not DocumentStatus.DELETING:
        finish_purges(services, document.tenant, document.document_id, set(document.purging), Counter())
        adopted.purged.append(document)
    if document.status is DocumentStatus.DELETING:
        if _take_deletion(services, document, lease):
            adopted.deleting.append(document)
        return
    if document.status is not DocumentStatus.PROCESSING:
        return
    upload = current_upload(services.uploads, document)
    if upload is None or not _take(services, document, upload, lease):
        return  # no intent to run (the audit reports it), or another process took it first
    if services.objects.exists(raw_key(upload.tenant, upload.document_id, upload.upload_id)):
        adopted.resumed.append(upload)
    else:
        record_failure(services, upload, UploadMissing(
            f"the file never arrived before {dead.describe()} ended; upload it again"))
        adopted.failed.append(upload)


def _take(services: Services, seen: Document, upload: Upload, lease: Lease) -> bool:
    """Take over an upload: still processing, ``upload`` still its current one."""
    return _move_lease(services, seen, lease,
                       lambda current: current.status is DocumentStatus.PROCESSING and is_current(current, upload))


def _take_deletion(services: Services, seen: Document, lease: Lease) -> bool:
    """Take over a tombstone: still deleting, in the generation ``seen`` holds."""
    return _move_lease(services, seen, lease,
                       lambda current: current.status is DocumentStatus.DELETING and current.generation == seen.generation)


def _move_lease(services: Services, seen: Document, lease: Lease, still: Callable[[Document], bool]) -> bool:
    """Move the record's lease from the dead owner ``seen`` names to ``lease``, if the lease is
    still that one and ``still`` holds of the record (nobody moved it on in between)."""
    def take(current: Document) -> Document | None:
        unchanged = current.lease == seen.lease and still(current)
        return current.model_copy(update={"lease": lease}) if unchanged else None

    return update_document(services.documents, seen.tenant, seen.document_id, take) is not None
