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

from citewell.errors import CitewellError, EmbedderMismatch, InvalidInput
from citewell.ingest.stages import (
    IngestRequest,
    chunk_stage,
    embed_stage,
    parse_stage,
    publish_stage,
    record_failure,
    register,
)
from citewell.models import Chunk, ErrorInfo
from citewell.services import Services

BATCH_DOCUMENTS = 64


class IngestOutcome(BaseModel):
    document_id: str
    revision: str | None
    status: Literal["published", "unchanged", "failed"]
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
    replaced: list[str] = []
    outcomes: list[IngestOutcome] = []
    batch: list[IngestRequest] = []
    for request in requests:
        batch.append(request)
        if len(batch) >= batch_documents:
            outcomes.extend(_run_batch(services, batch, on_done, clock, replaced))
            batch = []
    if batch:
        outcomes.extend(_run_batch(services, batch, on_done, clock, replaced))
    if replaced:
        with clock.stage("compact"):  # replaced revisions leave nothing in segments or logs
            services.index.compact()
            services.metadata.compact()
    return outcomes


def _failed(services: Services, request: IngestRequest, error: Exception, revision: str | None = None) -> IngestOutcome:
    if not isinstance(error, CitewellError):
        raise error  # a bug, not bad input: let it surface
    info = record_failure(services, request.tenant, request.document_id, error)
    return IngestOutcome(document_id=request.document_id, revision=revision, status="failed", chunks=0, error=info)


def _run_batch(
    services: Services,
    batch: list[IngestRequest],
    on_done: Callable[[IngestOutcome], None] | None,
    clock: StageClock,
    replaced: list[str],
) -> list[IngestOutcome]:
    done: dict[str, IngestOutcome] = {}
    pending: list[tuple[IngestRequest, str, list[Chunk]]] = []
    for request in batch:
        try:
            with clock.stage("parse"):
                register(services, request)
                parsed = parse_stage(services, request.tenant, request.document_id)
            if parsed.unchanged:
                document = services.metadata.get_document(request.tenant, request.document_id)
                done[request.document_id] = IngestOutcome(
                    document_id=request.document_id, revision=parsed.revision, status="unchanged",
                    chunks=document.chunk_count if document else 0,
                )
                continue
            with clock.stage("chunk"):
                chunks = chunk_stage(services, request.tenant, request.document_id, parsed.revision)
            pending.append((request, parsed.revision, chunks))
        except CitewellError as error:
            done[request.document_id] = _failed(services, request, error)
        except ValidationError as error:  # an id or field no record can hold: nothing was stored
            message = "; ".join(e["msg"] for e in error.errors())
            done[request.document_id] = IngestOutcome(
                document_id=request.document_id, revision=None, status="failed", chunks=0,
                error=ErrorInfo(code=InvalidInput.code, message=message),
            )
    try:
        with clock.stage("embed"):
            embed_stage(services, [c for _, _, chunks in pending for c in chunks])
        embed_error: CitewellError | None = None
    except CitewellError as error:
        embed_error = error
    for request, revision, _ in pending:
        try:
            if embed_error is not None:
                raise embed_error
            with clock.stage("publish"):
                before = services.metadata.get_document(request.tenant, request.document_id)
                count = publish_stage(services, request.tenant, request.document_id, revision)
            if before is not None and before.active_revision not in (None, revision):
                replaced.append(request.document_id)
            done[request.document_id] = IngestOutcome(
                document_id=request.document_id, revision=revision, status="published", chunks=count
            )
        except CitewellError as error:
            done[request.document_id] = _failed(services, request, error, revision)
    outcomes = [done[r.document_id] for r in batch]
    if on_done:
        for outcome in outcomes:
            on_done(outcome)
    return outcomes
