"""Runs the stages in-process over many uploads, embedding across documents in batches.

A failing document is recorded and reported; the rest of the batch goes on. Ctrl-C stops the
run at the next safe moment: every upload still in flight is recorded as failed
(``interrupted``) and removed, so each document is either published whole or keeps what it
served before, and :class:`IngestInterrupted` carries what was done.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Literal, Protocol

from pydantic import BaseModel, Field, ValidationError

from citewell.errors import Busy, CitewellError, EmbedderMismatch, Interrupted, InvalidInput, readable
from citewell.deletion import compact, unfinished_removals
from citewell.interrupts import deferred
from citewell.ingest.stages import (
    ChunksArtifact,
    IngestRequest,
    chunk_stage,
    embed_stage,
    parse_stage,
    publish_stage,
    record_failure,
    register,
    release_embeddings,
)
from citewell.models import ErrorInfo, Upload
from citewell.records import is_current
from citewell.services import Services

BATCH_DOCUMENTS = 64


class IngestOutcome(BaseModel):
    """``superseded``: a newer upload of the document, or its delete, came first; nothing of
    this one was published or kept. ``skipped``: a path the walk left out, with the reason
    (:mod:`citewell.ingest.walk`)."""

    document_id: str
    revision: str | None
    status: Literal["published", "unchanged", "failed", "superseded", "skipped"]
    chunks: int
    error: ErrorInfo | None = None
    # The text this upload replaced or abandoned could not leave the files yet (another process
    # holds a read transaction): what is pending, as a delete reports it.
    pending: list[str] = Field(default_factory=list)


class IngestProgress(Protocol):
    """What a run reports while it works, for a display that moves with the work."""

    def step(self, stage: str, document_id: str) -> None:
        """A document enters ``parse``, ``chunk`` or ``publish``."""

    def embedding(self, done: int, total: int) -> None:
        """Chunks embedded so far, of those known to need the model so far (both grow batch by batch)."""

    def finished(self, outcome: IngestOutcome) -> None:
        """One document's outcome is settled."""


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C during an ingest, after the uploads in flight were recorded as failed."""

    def __init__(self, outcomes: list[IngestOutcome]) -> None:
        super().__init__()
        self.outcomes = outcomes


class StageClock:
    """Wall seconds spent in each stage across a run, to show where ingestion time goes."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - started


def check_embedder(services: Services) -> None:
    """Refuse the whole run up front rather than failing every document the same way."""
    current = services.index.embedder_identity()
    if current is not None and current != services.embedder.identity:
        raise EmbedderMismatch(
            f"this index holds {current} vectors; it cannot take {services.embedder.identity} vectors"
        )


def ingest(
    services: Services,
    requests: Iterable[IngestRequest],
    progress: IngestProgress | None = None,
    batch_documents: int = BATCH_DOCUMENTS,
    clock: StageClock | None = None,
) -> list[IngestOutcome]:
    check_embedder(services)
    clock = clock or StageClock()
    report = _Reporter(progress)
    outcomes: list[IngestOutcome] = []
    removed: list[str] = []  # documents whose text was replaced or abandoned somewhere in the stores
    in_flight: dict[str, Upload] = {}  # registered uploads without an outcome yet
    batch: list[IngestRequest] = []
    done: dict[int, IngestOutcome] = {}  # the current batch's outcomes by position
    try:
        for request in requests:
            batch.append(request)
            if len(batch) >= batch_documents:
                outcomes.extend(_run_batch(services, batch, done, report, clock, removed, in_flight))
                batch, done = [], {}
        if batch:
            outcomes.extend(_run_batch(services, batch, done, report, clock, removed, in_flight))
    except KeyboardInterrupt:
        with deferred(deliver=False):  # a second Ctrl-C does not cut the clean-up short
            outcomes.extend(done[i] for i in sorted(done))
            outcomes.extend(_stop(services, in_flight.values()))
            compact(services)
        raise IngestInterrupted(outcomes) from None
    # Replaced and abandoned revisions leave nothing in segments or logs, nor do removals an ended process left.
    if removed or any(o.status in ("failed", "superseded") for o in outcomes) or unfinished_removals(services):
        with clock.stage("compact"):
            pending = compact(services)
        if pending:
            for outcome in outcomes:
                if outcome.document_id in removed or outcome.status in ("failed", "superseded"):
                    outcome.pending = pending
    return outcomes


class _Reporter:
    """Feeds an :class:`IngestProgress`, if any, with totals across batches."""

    def __init__(self, progress: IngestProgress | None) -> None:
        self.progress = progress
        self.embedded_before = self.planned_before = 0  # of the batches already embedded

    def step(self, stage: str, document_id: str) -> None:
        if self.progress:
            self.progress.step(stage, document_id)

    def embedding(self, done: int, total: int) -> None:
        if self.progress:
            self.progress.embedding(self.embedded_before + done, self.planned_before + total)
        if done == total:
            self.embedded_before += done
            self.planned_before += total

    def finished(self, outcome: IngestOutcome) -> None:
        if self.progress:
            self.progress.finished(outcome)


def _stop(services: Services, uploads: Iterable[Upload]) -> list[IngestOutcome]:
    """Record each upload in flight as failed and remove what it wrote; the document keeps
    serving its previous revision, if it had one."""
    error = Interrupted("the ingest was interrupted before this file was published; ingest it again")
    outcomes = []
    for upload in uploads:
        info = record_failure(services, upload, error)
        outcomes.append(IngestOutcome(document_id=upload.document_id, revision=None, status="failed", chunks=0, error=info))
    return outcomes


def _superseded(request: IngestRequest) -> IngestOutcome:
    return IngestOutcome(
        document_id=request.document_id, revision=None, status="superseded", chunks=0,
        error=ErrorInfo(code="superseded", message="a newer upload or a delete of this document came first; nothing of this upload was kept"),
    )


def _failed(services: Services, upload: Upload, error: Exception, revision: str | None = None) -> IngestOutcome:
    if not isinstance(error, CitewellError):
        raise error  # a bug, not bad input: let it surface
    info = record_failure(services, upload, error)
    return IngestOutcome(document_id=upload.document_id, revision=revision, status="failed", chunks=0, error=info)


def _run_batch(
    services: Services,
    batch: list[IngestRequest],
    done: dict[int, IngestOutcome],
    report: _Reporter,
    clock: StageClock,
    removed: list[str],
    in_flight: dict[str, Upload],
) -> list[IngestOutcome]:
    pending: list[tuple[int, Upload, ChunksArtifact]] = []

    def settle(position: int, outcome: IngestOutcome, upload: Upload | None = None) -> None:
        done[position] = outcome
        if upload is not None:
            in_flight.pop(upload.upload_id, None)
        report.finished(outcome)

    for position, request in enumerate(batch):
        report.step("parse", request.document_id)
        try:
            with clock.stage("parse"), deferred():  # the intent, the record and the raw bytes, or none of them
                upload = register(services, request)
                in_flight[upload.upload_id] = upload
        except (CitewellError, ValidationError) as error:  # nothing was registered
            settle(position, _refused(request, error))
            continue
        try:
            with clock.stage("parse"):
                parsed = parse_stage(services, upload)
            if parsed.status != "parsed":
                document = services.metadata.get_document(request.tenant, request.document_id)
                settle(position, _superseded(request) if parsed.status == "superseded" else IngestOutcome(
                    document_id=request.document_id, revision=document.active_revision if document else None,
                    status="unchanged", chunks=document.chunk_count if document else 0,
                ), upload)
                continue
            report.step("chunk", request.document_id)
            with clock.stage("chunk"):
                chunked = chunk_stage(services, upload)
            if chunked is None:
                settle(position, _superseded(request), upload)
                continue
            pending.append((position, upload, chunked))
        except CitewellError as error:
            settle(position, _failed(services, upload, error), upload)
    def still_wanted() -> set[str]:  # the chunks of uploads no newer upload or delete has overtaken
        return {c.content_hash for _, upload, chunked in pending if _current(services, upload) for c in chunked.chunks}

    try:
        with clock.stage("embed"):
            embed_stage(services, [c for _, _, chunked in pending for c in chunked.chunks], report.embedding, still_wanted)
        embed_error: CitewellError | None = None
    except CitewellError as error:
        embed_error = error
    for position, upload, chunked in pending:
        report.step("publish", upload.document_id)
        with deferred():  # indexed, switched and the old revision removed, or the previous one still served
            try:
                if embed_error is not None:
                    raise embed_error
                with clock.stage("publish"):
                    before = services.metadata.get_document(upload.tenant, upload.document_id)
                    count = publish_stage(services, upload, chunked.revision, chunked.content_sha256, chunked.encoding)
                if before is not None and before.active_revision not in (None, chunked.revision):
                    removed.append(upload.document_id)
                if count is None:
                    release_embeddings(services, chunked.chunks)
                    settle(position, _superseded(batch[position]), upload)
                else:
                    settle(position, IngestOutcome(
                        document_id=upload.document_id, revision=chunked.revision, status="published", chunks=count
                    ), upload)
            except CitewellError as error:
                settle(position, _failed(services, upload, error, chunked.revision), upload)
                release_embeddings(services, chunked.chunks)
    if pending:
        try:
            with clock.stage("publish"):
                services.index.flush()  # one commit of the lexical index for the batch, not one per document
        except Busy:
            pass  # the rows are published; the next search or ingest writes them
    return [done[i] for i in range(len(batch))]


def _current(services: Services, upload: Upload) -> bool:
    return is_current(services.metadata.get_document(upload.tenant, upload.document_id), upload)


def _refused(request: IngestRequest, error: CitewellError | ValidationError) -> IngestOutcome:
    if isinstance(error, ValidationError):  # an id or field no record can hold
        info = ErrorInfo(code=InvalidInput.code, message=readable(error))
    else:
        info = ErrorInfo(code=error.code, message=error.message)
    return IngestOutcome(document_id=request.document_id, revision=None, status="failed", chunks=0, error=info)
