"""The server's ingest worker: one thread runs each uploaded file through parse, chunk and
publish, then brings the vectors of what it published.

The stages, the upload state machine and the two-step publication are the CLI's
(:func:`citewell.ingest.runner.carry`, :class:`~citewell.ingest.runner.VectorBacklog`): the
upload was registered by ``POST /documents``, its bytes stored by the upload form, and the
worker publishes it by words as soon as it is chunked. Its vectors follow a slice at a time
whenever no upload waits (and one slice between two uploads once vectors have waited
``VECTOR_LAG_SECONDS``), so a small file uploaded while a large one embeds is searchable at
once; until the vectors come, search says ``vector index not ready``. One writer thread
matches SQLite's one writer; requests keep reading while it works and see the old revision or
the new one.

Stopping (SIGTERM) gives the uploads in flight until a deadline: the worker goes on between
stages until then, after which the upload being worked on and every queued one are recorded
as failed (``server_stopped``) and what they wrote is removed, so each document is published
whole or keeps serving what it served before. What is published stays published: vectors it
still lacks are embedded by the next start, or the next ``citewell ingest``.

Killed outright (kill -9, a power cut), a server can do none of that. The next one started on
the home finishes the job: its worker's first work is to take over the uploads whose process
has ended (:mod:`citewell.ingest.orphans`) and run the stored ones, each once, to finish the
deletions such a process began, and to embed the published chunks still without a vector whose
owner is gone (:func:`citewell.ingest.runner.resume_vectors`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from citewell.api.documents import UPLOAD_URL_SECONDS
from citewell.deletion import compact, delete_document
from citewell.errors import CitewellError, IngestError, ServerStopped, UploadMissing
from citewell.ingest.orphans import adopt_orphans
from citewell.ingest.runner import IngestOutcome, Reporter, StageClock, VectorBacklog, carry, resume_vectors
from citewell.ingest.stages import record_failure
from citewell.keys import raw_key
from citewell.leases import Lease
from citewell.models.documents import Document, DocumentStatus, Upload
from citewell.ports import StagedIndex
from citewell.records import current_upload
from citewell.services import Services

logger = logging.getLogger("citewell.serve")
SWEEP_SECONDS = 60  # how often an idle worker looks for upload forms that expired unused
FORM_SECONDS = UPLOAD_URL_SECONDS


class InternalFailure(IngestError):
    """A bug met while ingesting: recorded without its details, which go to the log."""

    code = "internal_error"


class IngestWorker:
    def __init__(self, services: Services, lease: Lease | None = None) -> None:
        self.services = services
        self.lease = lease  # this process's: given, the worker first takes over what ended processes left unfinished
        self._queue: queue.Queue[Upload | None] = queue.Queue()
        self._deadline: float | None = None  # set when stopping
        self._thread = threading.Thread(target=self._run, name="citewell-ingest", daemon=True)
        self._staged = isinstance(services.index, StagedIndex)
        self._clock = StageClock()
        self._vectors = VectorBacklog(services, Reporter(), self._clock)  # published chunks whose vectors follow
        self.outcomes: list[IngestOutcome] = []  # what was done, newest last (for logs and tests)

    def start(self) -> None:
        self._thread.start()

    def submit(self, upload: Upload) -> None:
        if self._deadline is not None:
            raise ServerStopped("the server is shutting down and takes no more uploads; upload the file again")
        self._queue.put(upload)

    def stop(self, grace_seconds: float) -> None:
        """Let in-flight uploads finish within ``grace_seconds``, fail the rest cleanly, and wait."""
        self._deadline = time.monotonic() + grace_seconds
        self._queue.put(None)
        self._thread.join(grace_seconds + 60)  # a single stage (one large parse) can outlast the deadline
        if self._thread.is_alive():
            logger.error("the ingest worker did not stop; the audit will mark its upload stuck")

    def _check(self) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise ServerStopped("the server was stopped before this upload was published; upload the file again")

    def _run(self) -> None:
        if self.lease is not None:
            self._resume(self.lease)
        while True:
            try:  # an upload first: vectors are embedded only while none waits
                upload = self._queue.get_nowait() if self._vectors.ready else self._queue.get(timeout=SWEEP_SECONDS)
            except queue.Empty:
                if self._vectors.ready:
                    self._embed(self._vectors.slice)
                else:
                    self._vectors.retry()  # a model that failed is tried again after an idle minute
                    self._expire()
                continue
            if upload is None:
                break
            self._record(self._process(upload))
            self._embed(self._vectors.step)  # uploads arriving back to back do not starve the vectors
        while True:  # anything queued behind the stop
            try:
                upload = self._queue.get_nowait()
            except queue.Empty:
                break
            if upload is not None:
                self._record(self._fail(upload, ServerStopped(
                    "the server was stopped before this upload was published; upload the file again")))
        self._finish_vectors()

    def _embed(self, step: Callable[[], None]) -> None:
        """A slice of vectors. A model that fails, or a bug, is logged, and the backlog is tried
        again after an idle minute; what is published stays found by words meanwhile."""
        failed = self._vectors.failure
        try:
            step()
        except Exception:
            logger.exception("embedding published chunks failed; they stay searchable by words and are tried again")
            self._vectors.failure = InternalFailure("embedding failed on the server's side; the server log has the details")
            return
        if self._vectors.failure is not None and failed is None:
            logger.warning("embedding published chunks failed (%s): they stay searchable by words and are tried again "
                           "after an idle minute", self._vectors.failure.message)

    def _finish_vectors(self) -> None:
        """On a stop: the vectors still to make wait, searchable by words, for the next start (a
        stop does not wait for them: nothing they lack is in flight)."""
        left = sum(self._vectors.left().values())
        if left:
            logger.warning("stopped with %d published chunks still without a vector: they are found by words until "
                           "the next start (or citewell ingest) embeds them", left)

    def _expire(self) -> None:
        """While idle: fail this server's uploads whose form expired before their file came (a
        page closed mid-upload, a client that never sent it), so none stays ``processing`` until
        a restart or the audit."""
        if self.lease is None:
            return
        now = datetime.now(UTC)
        try:
            for document in self.services.documents.all_documents():
                if document.status is not DocumentStatus.PROCESSING or document.lease != self.lease:
                    continue
                upload = current_upload(self.services.uploads, document)
                if (upload is None or (now - upload.created_at).total_seconds() < FORM_SECONDS + SWEEP_SECONDS
                        or self.services.objects.exists(raw_key(upload.tenant, upload.document_id, upload.upload_id))):
                    continue
                record_failure(self.services, upload, UploadMissing(
                    "the upload form expired before the file arrived; create the document again to send it"))
                logger.warning("the upload of %s (%s) failed: its form expired before the file arrived",
                               upload.document_id, upload.tenant)
        except CitewellError:  # a busy home: the next idle minute tries again
            return

    def _resume(self, lease: Lease) -> None:
        """Queue the uploads a process that ended stored but never published, each once (behind
        a stop, if one came already, they fail as the queued ones do); record as failed those
        whose file never arrived; finish the deletions it began."""
        try:
            adopted = adopt_orphans(self.services, lease)
        except Exception:
            logger.exception("looking for uploads left unfinished failed; the audit reports them")
            return
        for upload in adopted.resumed:
            logger.warning("resuming the upload of %s (%s): the process that took it ended before publishing it",
                           upload.document_id, upload.tenant)
            self._queue.put(upload)
        for upload in adopted.failed:
            logger.warning("the upload of %s (%s) failed: the process that took it ended before its file arrived",
                           upload.document_id, upload.tenant)
        logger.info("uploads left unfinished by ended processes: %d resumed, %d failed",
                    len(adopted.resumed), len(adopted.failed))
        waiting = resume_vectors(self.services)
        if waiting:
            self._vectors.add(waiting)
            logger.warning("embedding %d published chunks of %d documents that an ended process left without a vector",
                           len(waiting), len({(c.tenant, c.document_id) for c in waiting}))
        for document in adopted.purged:
            logger.warning("finished the purge of %s (%s): the process that replaced it ended before removing the old text",
                           document.document_id, document.tenant)
        if adopted.compacted:
            logger.warning("compacted the stores: a process ended before its removals left the files")
        self._finish_deletions(adopted.deleting)

    def _finish_deletions(self, documents: list[Document]) -> None:
        """Run again, to the end, the deletions taken over from ended processes (each is no longer served)."""
        finished = failed = 0
        for document in documents:
            try:
                report = delete_document(self.services, document.tenant, document.document_id)
            except Exception:
                logger.exception("finishing the deletion of %s (%s) failed; `citewell audit --repair` finishes it",
                                 document.document_id, document.tenant)
                failed += 1
                continue
            logger.warning("finished the deletion of %s (%s): the process that began it ended first%s",
                           document.document_id, document.tenant, f" ({'; '.join(report.pending)})" if report.pending else "")
            finished += 1
        logger.info("deletions left unfinished by ended processes: %d finished, %d failed", finished, failed)

    def _record(self, outcome: IngestOutcome) -> None:
        self.outcomes.append(outcome)
        code = f" ({outcome.error.code})" if outcome.error else ""
        logger.info("ingest %s: %s%s", outcome.document_id, outcome.status, code)

    def _fail(self, upload: Upload, error: CitewellError) -> IngestOutcome:
        info = record_failure(self.services, upload, error)
        return IngestOutcome(document_id=upload.document_id, revision=None, status="failed", chunks=0, error=info)

    def _process(self, upload: Upload) -> IngestOutcome:
        replaced = False
        try:
            # Flushed one by one: an upload's record says published only once search finds it by words.
            carried = carry(self.services, upload, Reporter(), self._clock, staged=self._staged, check=self._check, flush=True)
            outcome, replaced = carried.outcome, carried.replaced
            self._vectors.add(carried.waiting)
        except Exception:
            logger.exception("ingest of %s failed", upload.document_id)
            outcome = self._fail(upload, InternalFailure(
                "ingesting this file failed on the server's side; the server log has the details"))
        if replaced or outcome.status in ("failed", "superseded"):
            try:  # replaced and abandoned revisions leave nothing in segments or logs
                compact(self.services)
            except Exception:
                logger.exception("compaction after %s failed; the next delete or audit finishes it", upload.document_id)
        return outcome
