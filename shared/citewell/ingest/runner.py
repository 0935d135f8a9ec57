"""Runs the stages in-process over many uploads, embedding across documents in batches.

A failing document is recorded and reported; the rest of the batch goes on.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Literal

from pydantic import BaseModel, ValidationError

from citewell.errors import CitewellError, EmbedderMismatch, InvalidInput, readable
from citewell.deletion import compact
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
from citewell.services import Services

BATCH_DOCUMENTS = 64


class IngestOutcome(BaseModel):
    """``superseded``: a newer upload of the document, or its delete, came first; nothing of
    this one was published or kept."""

    document_id: str
    revision: str | None
    status: Literal["published", "unchanged", "failed", "superseded"]
    chunks: int
    error: ErrorInfo | None = None


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
    on_done: Callable[[IngestOutcome], None] | None = None,
    batch_documents: int = BATCH_DOCUMENTS,
    clock: StageClock | None = None,
) -> list[IngestOutcome]:
    check_embedder(services)
    clock = clock or StageClock()
    outcomes: list[IngestOutcome] = []
    removed: list[str] = []  # documents whose text was replaced or abandoned somewhere in the stores
    batch: list[IngestRequest] = []
    for request in requests:
        batch.append(request)
        if len(batch) >= batch_documents:
            outcomes.extend(_run_batch(services, batch, on_done, clock, removed))
            batch = []
    if batch:
        outcomes.extend(_run_batch(services, batch, on_done, clock, removed))
    if removed or any(o.status in ("failed", "superseded") for o in outcomes):
        with clock.stage("compact"):  # replaced and abandoned revisions leave nothing in segments or logs
            compact(services)
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
    on_done: Callable[[IngestOutcome], None] | None,
    clock: StageClock,
    removed: list[str],
) -> list[IngestOutcome]:
    done: dict[int, IngestOutcome] = {}
    pending: list[tuple[int, Upload, ChunksArtifact]] = []
    for position, request in enumerate(batch):
        try:
            with clock.stage("parse"):
                upload = register(services, request)
        except (CitewellError, ValidationError) as error:  # nothing was registered
            done[position] = _refused(request, error)
            continue
        try:
            with clock.stage("parse"):
                parsed = parse_stage(services, upload)
            if parsed.status != "parsed":
                document = services.metadata.get_document(request.tenant, request.document_id)
                done[position] = _superseded(request) if parsed.status == "superseded" else IngestOutcome(
                    document_id=request.document_id, revision=document.active_revision if document else None,
                    status="unchanged", chunks=document.chunk_count if document else 0,
                )
                continue
            with clock.stage("chunk"):
                chunked = chunk_stage(services, upload)
            if chunked is None:
                done[position] = _superseded(request)
                continue
            pending.append((position, upload, chunked))
        except CitewellError as error:
            done[position] = _failed(services, upload, error)
    try:
        with clock.stage("embed"):
            embed_stage(services, [c for _, _, chunked in pending for c in chunked.chunks])
        embed_error: CitewellError | None = None
    except CitewellError as error:
        embed_error = error
    for position, upload, chunked in pending:
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
                done[position] = _superseded(batch[position])
            else:
                done[position] = IngestOutcome(
                    document_id=upload.document_id, revision=chunked.revision, status="published", chunks=count
                )
        except CitewellError as error:
            done[position] = _failed(services, upload, error, chunked.revision)
            release_embeddings(services, chunked.chunks)
    outcomes = [done[i] for i in range(len(batch))]
    if on_done:
        for outcome in outcomes:
            on_done(outcome)
    return outcomes


def _refused(request: IngestRequest, error: CitewellError | ValidationError) -> IngestOutcome:
    if isinstance(error, ValidationError):  # an id or field no record can hold
        info = ErrorInfo(code=InvalidInput.code, message=readable(error))
    else:
        info = ErrorInfo(code=error.code, message=error.message)
    return IngestOutcome(document_id=request.document_id, revision=None, status="failed", chunks=0, error=info)
