"""Runs the stages in-process over many uploads, each document published as soon as it is chunked.

Each document is registered, parsed, chunked and published on its own. On an index that takes
staged publications (the embedded one, :class:`~citewell.ports.StagedIndex`) it is published
by words first: searchable and citeable before its vectors exist, which :class:`VectorBacklog`
brings after: between two documents, a slice whenever vectors have waited ``VECTOR_LAG_SECONDS``
(words first while documents come quickly, meaning soon after), and the rest once the last is
published. A small file never waits for a large one's embedding (and the CLI sends files smallest first, so none
waits for a large one's parsing either). An index that takes whole publications gets each
document embedded before it is published. ``citewell serve``'s worker carries its uploads the
same way (:func:`carry`, :class:`VectorBacklog`), one at a time as they arrive.

A failing document is recorded and reported; the rest go on. Ctrl-C stops the run at the next
safe moment: every document already published stays published (vectors it still lacks are
embedded by the next ingest: :func:`resume_vectors`), every upload still in flight is recorded
as failed (``interrupted``) and removed, and :class:`IngestInterrupted` carries what was done.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, NoReturn, Protocol

from pydantic import BaseModel, Field, ValidationError

from citewell import leases
from citewell.deletion import compact, forget_vectors_left, unfinished_removals
from citewell.errors import Busy, CitewellError, EmbedderMismatch, Interrupted, InvalidInput, readable
from citewell.ingest.stages import (
    EMBED_SLICE,
    IngestRequest,
    chunk_stage,
    embed_stage,
    parse_stage,
    publish_stage,
    record_failure,
    register,
    release_embeddings,
    vector_stage,
)
from citewell.interrupts import deferred, interrupt_behind
from citewell.models.chunks import Chunk
from citewell.models.documents import DocumentStatus, ErrorInfo, Upload
from citewell.ports import StagedIndex
from citewell.services import Services

BATCH_DOCUMENTS = 64  # documents published between two commits of the lexical index, at most
FLUSH_SECONDS = 1.0  # or this long: a search from another process finds a new document this soon
VECTOR_LAG_SECONDS = 30.0  # between documents, a slice is embedded once the oldest waiting vector has waited this long


OutcomeStatus = Literal["published", "unchanged", "failed", "superseded", "skipped"]


class IngestOutcome(BaseModel):
    """``superseded``: a newer upload of the document, or its delete, came first; nothing of
    this one was published or kept. ``skipped``: a path the walk left out, with the reason
    (:mod:`citewell.ingest.walk`). ``vectors_pending``: chunks published without their vector
    when the run ended (the embedder failed): found by words, not yet by meaning; the next
    ingest embeds them."""

    document_id: str
    revision: str | None
    status: OutcomeStatus
    chunks: int
    error: ErrorInfo | None = None
    vectors_pending: int = 0
    # The text this upload replaced or abandoned could not leave the files yet (another process
    # holds a read transaction): what is pending, as a delete reports it.
    pending: list[str] = Field(default_factory=list)


class IngestProgress(Protocol):
    """What a run reports while it works, for a display that moves with the work."""

    def step(self, stage: str, document_id: str) -> None:
        """A document enters ``parse``, ``chunk`` or ``publish``."""

    def advance(self, stage: str, done: int, total: int) -> None:
        """Inside one document's stage: ``parse``, pages of a PDF read; ``ocr``, scanned pages
        read by OCR; ``chunk``, characters chunked; so far, of ``total``."""

    def embedding(self, done: int, total: int) -> None:
        """Chunks embedded so far, of those known to need the model so far (the total grows as documents are published)."""

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
    report = Reporter(progress)
    vectors = VectorBacklog(services, report, clock)
    run = _Run(services, report, clock, vectors, batch_documents)
    try:
        vectors.add(resume_vectors(services))
        for request in requests:
            run.one(request)
            vectors.step()  # a slice between documents once vectors have waited VECTOR_LAG_SECONDS
        run.flush()
        vectors.drain()
        _note_vectors(run.outcomes, vectors)
        _compact_after(services, run, clock)  # inside: a Ctrl-C here still leaves every removal compacted
    except BaseException as error:  # Ctrl-C, or a compiled module's own error raised from it as it loads
        if interrupt_behind(error) is None:
            raise
        _clean_up(services, run, vectors)
    return run.outcomes


def _clean_up(services: Services, run: _Run, vectors: VectorBacklog) -> NoReturn:
    """After Ctrl-C: uploads in flight are recorded as stopped, cached vectors nothing uses any
    more are dropped (as a start after a kill drops them: CI once saw an audit after a Ctrl-C
    report chunk embeddings no chunk used), and every removal so far is compacted."""
    with deferred(deliver=False):  # a second Ctrl-C does not cut the clean-up short
        run.outcomes.extend(_stop(services, run.in_flight.values()))
        run.flush()
        forget_vectors_left(services)
        compact(services)
        _note_vectors(run.outcomes, vectors)
    raise IngestInterrupted(run.outcomes) from None


def _compact_after(services: Services, run: _Run, clock: StageClock) -> None:
    """Replaced and abandoned revisions leave nothing in segments or logs, nor do removals an ended process left."""
    outcomes, removed = run.outcomes, run.removed
    if removed or any(o.status in ("failed", "superseded") for o in outcomes) or unfinished_removals(services):
        with clock.stage("compact"):
            pending = compact(services)
        if pending:
            for outcome in outcomes:
                if outcome.document_id in removed or outcome.status in ("failed", "superseded"):
                    outcome.pending = pending


def _note_vectors(outcomes: list[IngestOutcome], vectors: VectorBacklog) -> None:
    """Published documents whose vectors the run did not finish say so, and why if the model failed."""
    left = vectors.left()
    for outcome in outcomes:
        if outcome.status != "published":
            continue
        outcome.vectors_pending = left.get((outcome.document_id, outcome.revision), 0)
        if outcome.vectors_pending and vectors.failure is not None and outcome.error is None:
            outcome.error = ErrorInfo(code=vectors.failure.code, message=(
                f"published for search by words only: {outcome.vectors_pending} chunks have no vector yet "
                f"({vectors.failure.message}); the next ingest embeds them"))


class Reporter:
    """Feeds an :class:`IngestProgress`, if any."""

    def __init__(self, progress: IngestProgress | None = None) -> None:
        self.progress = progress

    def step(self, stage: str, document_id: str) -> None:
        if self.progress:
            self.progress.step(stage, document_id)

    def advance(self, stage: str, done: int, total: int) -> None:
        if self.progress:
            self.progress.advance(stage, done, total)

    def embedding(self, done: int, total: int) -> None:
        if self.progress:
            self.progress.embedding(done, total)

    def finished(self, outcome: IngestOutcome) -> None:
        if self.progress:
            self.progress.finished(outcome)


class VectorBacklog:
    """Published chunks waiting for their vectors, embedded a slice at a time in publication
    order. Before each slice, chunks of revisions no longer served (deleted or replaced since)
    are dropped: they stop costing the model at once."""

    def __init__(self, services: Services, report: Reporter, clock: StageClock) -> None:
        self.services, self.report, self.clock = services, report, clock
        self.waiting: deque[Chunk] = deque()
        self.since: deque[float] = deque()  # when each waiting chunk was published
        self.done = self.total = 0
        self.failure: CitewellError | None = None

    def add(self, chunks: Iterable[Chunk]) -> None:
        before = len(self.waiting)
        self.waiting.extend(chunks)
        self.since.extend([time.monotonic()] * (len(self.waiting) - before))
        if len(self.waiting) > before:
            self.total += len(self.waiting) - before
            self.report.embedding(self.done, self.total)

    def step(self) -> None:
        """Between documents: one slice, once the oldest waiting vector has waited long enough."""
        if self.since and time.monotonic() - self.since[0] >= VECTOR_LAG_SECONDS:
            self.slice()

    def drain(self) -> None:
        while self.waiting and self.failure is None:
            self.slice()

    def left(self) -> dict[tuple[str, str | None], int]:
        counts: dict[tuple[str, str | None], int] = defaultdict(int)
        for chunk in self.waiting:
            counts[(chunk.document_id, chunk.revision)] += 1
        return counts

    @property
    def ready(self) -> bool:
        """Vectors wait, and the model has not failed on this backlog since it was last tried."""
        return bool(self.waiting) and self.failure is None

    def retry(self) -> None:
        """Try the model again: a server's backlog outlives an outage of its model service."""
        self.failure = None

    def slice(self) -> None:
        """Embed the next waiting chunks, as many as one step takes."""
        if self.failure is not None:
            return
        self._drop_unserved()
        part = [self.waiting[i] for i in range(min(EMBED_SLICE, len(self.waiting)))]
        if not part:
            return
        try:
            with self.clock.stage("embed"):
                vector_stage(self.services, part)
        except CitewellError as error:  # the model is down: what is published stays searchable by words
            self.failure = error
            return
        for _ in part:
            self.waiting.popleft()
            self.since.popleft()
        self.done += len(part)
        self.report.embedding(self.done, self.total)

    def _drop_unserved(self) -> None:
        served: dict[tuple[str, str], str | None] = {}
        for chunk in list(self.waiting)[:EMBED_SLICE]:
            key = (chunk.tenant, chunk.document_id)
            if key not in served:
                document = self.services.documents.get_document(*key)
                live = document is not None and document.status is not DocumentStatus.DELETING
                served[key] = document.active_revision if live and document is not None else None
        gone = {key for key, revision in served.items() if revision is None}
        kept = [(c, t) for c, t in zip(self.waiting, self.since) if (c.tenant, c.document_id) not in gone
                and served.get((c.tenant, c.document_id), c.revision) == c.revision]
        if len(kept) < len(self.waiting):
            self.total -= len(self.waiting) - len(kept)
            self.waiting, self.since = deque(c for c, _ in kept), deque(t for _, t in kept)
            self.report.embedding(self.done, self.total)


def resume_vectors(services: Services) -> list[Chunk]:
    """Chunks of served revisions still without vectors, that no live process is embedding: an
    ingest stopped by Ctrl-C, or whose model failed, left them."""
    index = services.index
    if not isinstance(index, StagedIndex):
        return []
    found: list[Chunk] = []
    for tenant, document_id, revision, _ in index.vectorless():
        document = services.documents.get_document(tenant, document_id)
        if document is None or document.active_revision != revision or document.status is DocumentStatus.DELETING:
            continue
        if document.lease is not None and document.lease != leases.current() and not leases.is_dead(document.lease):
            continue  # its own ingest is still running
        found.extend(services.chunks.get_chunks(tenant, document_id, revision))
    return found


class _Run:
    """One document at a time through register, parse, chunk and publish."""

    def __init__(
        self, services: Services, report: Reporter, clock: StageClock, vectors: VectorBacklog, batch_documents: int,
    ) -> None:
        self.services, self.report, self.clock, self.vectors = services, report, clock, vectors
        self.staged = isinstance(services.index, StagedIndex)
        self.batch_documents = batch_documents
        self.outcomes: list[IngestOutcome] = []
        self.removed: list[str] = []  # documents whose text was replaced or abandoned somewhere in the stores
        self.in_flight: dict[str, Upload] = {}  # registered uploads without an outcome yet
        self.unflushed = 0
        self.flushed_at = time.monotonic()

    def settle(self, outcome: IngestOutcome, upload: Upload | None = None) -> None:
        self.outcomes.append(outcome)
        if upload is not None:
            self.in_flight.pop(upload.upload_id, None)
        self.report.finished(outcome)

    def one(self, request: IngestRequest) -> None:
        self.report.step("parse", request.document_id)
        try:
            with self.clock.stage("parse"), deferred():  # the intent, the record and the raw bytes, or none of them
                upload = register(self.services, request)
                self.in_flight[upload.upload_id] = upload
        except (CitewellError, ValidationError) as error:  # nothing was registered
            self.settle(_refused(request, error))
            return
        carried = carry(self.services, upload, self.report, self.clock, staged=self.staged)
        if carried.replaced:
            self.removed.append(upload.document_id)
        self.settle(carried.outcome, upload)
        self.vectors.add(carried.waiting)
        if carried.outcome.status == "published":
            self.unflushed += 1
        if self.unflushed >= self.batch_documents or time.monotonic() - self.flushed_at >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """One commit of the lexical index for what was published since the last, not one per document."""
        if not self.unflushed:
            return
        try:
            with self.clock.stage("publish"):
                self.services.index.flush()
        except Busy:
            pass  # the rows are published; the next search or ingest writes them
        self.unflushed, self.flushed_at = 0, time.monotonic()



@dataclass(frozen=True)
class Carried:
    """One upload's way through the stages: its outcome, the published chunks whose vectors follow
    (a staged publication), and whether it replaced a revision that was served."""

    outcome: IngestOutcome
    waiting: list[Chunk] = field(default_factory=list)
    replaced: bool = False


def _go_on() -> None:
    """No reason to stop between stages."""


def carry(services: Services, upload: Upload, report: Reporter, clock: StageClock, *, staged: bool,
          check: Callable[[], None] = _go_on, flush: bool = False) -> Carried:
    """A registered upload through parse, chunk and publish: by words first when ``staged`` (its
    vectors are the caller's to bring, :class:`VectorBacklog`), else embedded then published.
    ``check`` runs before each stage and stops the upload by raising a :class:`CitewellError`
    (a server's stop deadline), which records it as failed like bad input. ``flush`` commits
    the lexical index before the record says published (see :func:`publish_stage`). The CLI's
    run and the server's worker both carry their uploads through here."""
    document_id = upload.document_id
    chunked = None
    try:
        check()
        with clock.stage("parse"):
            parsed = parse_stage(services, upload, report.advance)
        if parsed.status != "parsed":
            document = services.documents.get_document(upload.tenant, document_id)
            return Carried(_superseded(document_id) if parsed.status == "superseded" else IngestOutcome(
                document_id=document_id, revision=document.active_revision if document else None,
                status="unchanged", chunks=document.chunk_count if document else 0,
            ))
        check()
        report.step("chunk", document_id)
        with clock.stage("chunk"):
            chunked = chunk_stage(services, upload, lambda done, total: report.advance("chunk", done, total))
        if chunked is None:
            return Carried(_superseded(document_id))
        if not staged:
            check()
            with clock.stage("embed"):
                embed_stage(services, chunked.chunks)
        check()
    except CitewellError as error:
        outcome = _failed(services, upload, error)
        if chunked is not None and not staged:
            release_embeddings(services, chunked.chunks)
        return Carried(outcome)
    report.step("publish", document_id)
    with deferred():  # indexed, switched and the old revision removed, or the previous one still served
        try:
            with clock.stage("publish"):
                before = services.documents.get_document(upload.tenant, document_id)
                count = publish_stage(services, upload, chunked.revision, chunked.content_sha256, chunked.encoding,
                                      vectors_follow=staged, flush=flush)
        except CitewellError as error:
            outcome = _failed(services, upload, error, chunked.revision)
            release_embeddings(services, chunked.chunks)
            return Carried(outcome)
        replaced = before is not None and before.active_revision not in (None, chunked.revision)
        if count is None:
            release_embeddings(services, chunked.chunks)
            return Carried(_superseded(document_id), replaced=replaced)
        published = IngestOutcome(document_id=document_id, revision=chunked.revision, status="published", chunks=count)
        return Carried(published, chunked.chunks if staged else [], replaced)


def _stop(services: Services, uploads: Iterable[Upload]) -> list[IngestOutcome]:
    """Record each upload in flight as failed and remove what it wrote; the document keeps
    serving its previous revision, if it had one."""
    error = Interrupted("the ingest was interrupted before this file was published; ingest it again")
    outcomes = []
    for upload in uploads:
        info = record_failure(services, upload, error)
        outcomes.append(IngestOutcome(document_id=upload.document_id, revision=None, status="failed", chunks=0, error=info))
    return outcomes


def _superseded(document_id: str) -> IngestOutcome:
    return IngestOutcome(
        document_id=document_id, revision=None, status="superseded", chunks=0,
        error=ErrorInfo(code="superseded",
                        message="a newer upload or a delete of this document came first; nothing of this upload was kept"),
    )


def _failed(services: Services, upload: Upload, error: Exception, revision: str | None = None) -> IngestOutcome:
    if not isinstance(error, CitewellError):
        raise error  # a bug, not bad input: let it surface
    info = record_failure(services, upload, error)
    return IngestOutcome(document_id=upload.document_id, revision=revision, status="failed", chunks=0, error=info)


def _refused(request: IngestRequest, error: CitewellError | ValidationError) -> IngestOutcome:
    if isinstance(error, ValidationError):  # an id or field no record can hold
        info = ErrorInfo(code=InvalidInput.code, message=readable(error))
    else:
        info = ErrorInfo(code=error.code, message=error.message)
    return IngestOutcome(document_id=request.document_id, revision=None, status="failed", chunks=0, error=info)
