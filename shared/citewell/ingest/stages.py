"""The ingestion stages, written once against the ports, as a state machine over uploads.

``register`` records an immutable :class:`~citewell.models.documents.Upload` (its own id, a sequence
number per document, the access fields) and moves the record to ``processing``. Every later
stage is handed that upload and works from it, never from the live record; before it writes
anything that is served, it checks that its upload is still the current one (same generation,
latest sequence, no delete under way), and the record changes only by compare-and-set. An
upload that is no longer current is *superseded*: it removes what it wrote (it owns its
revision, artifacts and raw object, see :func:`citewell.models.documents.publication_revision`) and stops,
which on AWS acknowledges the message instead of retrying it. The cloud transport delivers at
least once, so every stage is idempotent on its upload.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from citewell import leases
from citewell.errors import IngestError, InvalidInput, NotFound, PublishConflict, UploadMissing
from citewell.ingest.artifacts import ChunksArtifact, chunks_lines
from citewell.ingest.registration import register_upload
from citewell.interrupts import deferred
from citewell.keys import STAGES, chunks_key, document_prefix, parse_key, parsed_key, raw_key, upload_keys
from citewell.models.chunks import Chunk
from citewell.models.documents import (
    Descriptive,
    Document,
    DocumentStatus,
    ErrorInfo,
    Fetched,
    Upload,
    descriptive,
    publication_revision,
)
from citewell.models.parsed import ParsedDocument
from citewell.parsers import PageProgress, parse
from citewell.parsers.gzipped import inner_name
from citewell.ports import BatchedIndex, StagedIndex
from citewell.records import is_current, update_document
from citewell.services import Services

if TYPE_CHECKING:
    import numpy as np

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # what breaks or garbles a line


class IngestRequest(Descriptive):
    """An upload with its access and descriptive fields. Built only from trusted input (operator flags, the API record)."""

    document_id: str
    tenant: str
    allowed_roles: frozenset[str]
    data: bytes
    filename: str | None = None
    title: str | None = None
    source: str = ""
    replace: bool = True  # False: leave a document from another source or with other roles alone (DocumentIdTaken)
    fetched: Fetched | None = None  # a web page's validators, kept on the record once its bytes are served


class ParsedArtifact(BaseModel):
    """What parse hands to chunk: the text and structure, and the revision it will publish as."""

    revision: str
    content_sha256: str
    title: str
    parsed: ParsedDocument


class ParseOutcome(BaseModel):
    status: Literal["parsed", "unchanged", "superseded"]
    revision: str | None = None
    content_sha256: str | None = None


def register(services: Services, request: IngestRequest) -> Upload:
    """Register the upload, then store its raw bytes under its own key. The calling process
    runs the later stages, so it holds the document's lease."""
    upload = register_upload(
        services, document_id=request.document_id, tenant=request.tenant, allowed_roles=request.allowed_roles,
        title=request.title, source=request.source, filename=request.filename, described=request,
        replace=request.replace, lease=leases.current(), fetched=request.fetched,
    )
    services.objects.put(raw_key(upload.tenant, upload.document_id, upload.upload_id), request.data)
    return upload


def _title_for(upload: Upload, parsed: ParsedDocument) -> str:
    """The title given, else the file's own, else its name (``guide.md.gz`` as ``guide.md`` would be)."""
    return upload.title or parsed.title or _title_from_name(inner_name(upload.filename or upload.document_id) or "")


def _title_from_name(name: str) -> str:
    """A file's name without its extension, its control characters (a newline a name may hold)
    as spaces: a title is printed on one line, in listings and under every citation."""
    spaced = _CONTROL.sub(" ", PurePosixPath(name).stem)
    return spaced.strip() or spaced


def parse_stage(services: Services, upload: Upload, progress: PageProgress | None = None) -> ParseOutcome:
    """Extract text. The same text, roles and title as what is served is a no-op. ``progress``
    hears the pages of a PDF or a scan as they are read."""
    document = services.documents.get_document(upload.tenant, upload.document_id)
    if not is_current(document, upload):
        abandon(services, upload)
        return ParseOutcome(status="superseded")
    assert document is not None
    try:
        data = services.objects.get(raw_key(upload.tenant, upload.document_id, upload.upload_id))
    except NotFound:
        raise UploadMissing("the uploaded bytes were removed before they were read; upload the file again") from None
    parsed = parse(data, upload.filename or upload.document_id, max_bytes=services.max_bytes, ocr=services.ocr,
                   progress=progress)
    title = _title_for(upload, parsed)
    content = parsed.content_sha256
    if document.content_sha256 == content and _served_as(services, document, upload.allowed_roles, title):
        def settle(d: Document) -> Document | None:
            if not is_current(d, upload):
                return None
            return d.model_copy(update={
                "status": DocumentStatus.PUBLISHED, "error": None, "source": upload.source, "filename": upload.filename,
                **descriptive(upload), "encoding": parsed.encoding, "fetched": upload.fetched,
            })

        settled = update_document(services.documents, upload.tenant, upload.document_id, settle)
        abandon(services, upload)  # the served upload stays; this one's copy of the bytes goes
        return ParseOutcome(status="unchanged" if settled else "superseded", content_sha256=content)
    revision = publication_revision(content, upload.upload_id)
    artifact = ParsedArtifact(revision=revision, content_sha256=content, title=title, parsed=parsed)
    services.objects.put(parsed_key(upload.tenant, upload.document_id, upload.upload_id), _serialized(artifact))
    return ParseOutcome(status="parsed", revision=revision, content_sha256=content)


def _serialized(artifact: BaseModel) -> bytes:
    """An artifact as JSON, with Ctrl-C held until it is written: pydantic turns a KeyboardInterrupt
    raised inside its serializer into a serialization error, which would report a large file's
    Ctrl-C as an error instead of stopping the ingest."""
    with deferred():
        return artifact.model_dump_json().encode()


def _served_as(services: Services, document: Document, roles: frozenset[str], title: str) -> bool:
    """The record and the active revision's chunks carry these access fields."""
    if document.active_revision is None or document.allowed_roles != roles or document.title != title:
        return False
    chunks = services.chunks.get_chunks(document.tenant, document.document_id, document.active_revision)
    return bool(chunks) and all(c.title == title and c.allowed_roles == roles for c in chunks)


def chunk_stage(services: Services, upload: Upload, progress: Callable[[int, int], None] | None = None) -> ChunksArtifact | None:
    """Chunk the upload's text with the upload's access fields; None when superseded.
    ``progress(done, total)`` hears how many characters of the text are chunked."""
    document = services.documents.get_document(upload.tenant, upload.document_id)
    if not is_current(document, upload):
        abandon(services, upload)
        return None
    try:
        raw = services.objects.get(parsed_key(upload.tenant, upload.document_id, upload.upload_id))
    except NotFound:  # removed since the check: a delete or a newer upload's publish took it
        if is_current(services.documents.get_document(upload.tenant, upload.document_id), upload):
            raise
        abandon(services, upload)
        return None
    artifact = ParsedArtifact.model_validate_json(raw)
    access = Document(
        document_id=upload.document_id, tenant=upload.tenant, allowed_roles=upload.allowed_roles, title=artifact.title,
        source=upload.source, **descriptive(upload),
    )
    chunks = services.chunker.chunk(artifact.parsed, access, artifact.revision, progress)
    result = ChunksArtifact(revision=artifact.revision, content_sha256=artifact.content_sha256, chunks=chunks,
                            encoding=artifact.parsed.encoding)
    services.chunks.put_chunks(chunks)  # before embedding: the embedding cache counts these as users
    services.objects.put(chunks_key(upload.tenant, upload.document_id, upload.upload_id), chunks_lines(result))
    return result


PUBLISH_PAGE = 500  # chunk records read, vectors looked up and rows sent per step of a publish to a BatchedIndex
EMBED_SLICE = 128  # chunks embedded and stored per step: progress moves, and a stop keeps what was done
EMBED_PAGE = PUBLISH_PAGE  # chunks the embed function reads of its artifact per step (see citewell.ingest.artifacts)


def embed_stage(
    services: Services, chunks: Sequence[Chunk], on_embedded: Callable[[int, int], None] | None = None,
    still_wanted: Callable[[], set[str]] | None = None,
) -> int:
    """Embed only what the cache lacks under this embedder identity. Returns how many were embedded;
    ``on_embedded(done, total)`` hears of each slice, and of the total first. ``still_wanted``,
    asked after each slice, names the content hashes whose uploads are still current: a large
    file deleted or replaced mid-ingest stops costing the model at once, not minutes later."""
    identity = services.embedder.identity
    wanted = {c.content_hash: c.embedding_text for c in chunks}
    todo = _uncached(services, identity, list(wanted))
    done, total = 0, len(todo)
    if on_embedded:
        on_embedded(0, total)
    while todo:
        hashes, todo = todo[:EMBED_SLICE], todo[EMBED_SLICE:]
        vectors = services.embedder.embed([wanted[h] for h in hashes])
        services.embeddings.put_embeddings(identity, dict(zip(hashes, vectors)))
        done += len(hashes)
        if on_embedded:
            on_embedded(done, total)
        if todo and still_wanted is not None:
            current = still_wanted()
            kept = [h for h in todo if h in current]
            if len(kept) < len(todo):
                total, todo = total - (len(todo) - len(kept)), kept
                if on_embedded:
                    on_embedded(done, total)
    return done


def _uncached(services: Services, identity: str, hashes: list[str]) -> list[str]:
    """Those of ``hashes`` the cache lacks, looked up ``PUBLISH_PAGE`` at a time: only the answer
    is kept, never the cached vectors (a re-upload of 50,000 chunks would hold 200 MB of them)."""
    cached: set[str] = set()
    for start in range(0, len(hashes), PUBLISH_PAGE):
        cached.update(services.embeddings.get_embeddings(identity, hashes[start : start + PUBLISH_PAGE]))
    return [h for h in hashes if h not in cached]


def release_embeddings(services: Services, chunks: Sequence[Chunk]) -> int:
    """Drop the cached embeddings of a superseded upload's chunks that no chunk record uses.

    Called after an upload that has embedded learns it was superseded: a newer upload's purge
    may have run between this upload's cache check and its write, and found nothing to drop."""
    return services.embeddings.delete_unused_embeddings(services.embedder.identity, {c.content_hash for c in chunks})


def publish_stage(
    services: Services, upload: Upload, revision: str, content_sha256: str, encoding: str | None = None,
    vectors_follow: bool = False, flush: bool = False,
) -> int | None:
    """Index the revision, verify it, switch the record to it, then remove what it replaced.

    With ``flush`` the index commits its lexical rows before the switch, so a record that says
    ``published`` is found by words at once, even by a search that meets another writer (which
    does not wait to commit them itself). A server's upload flushes; a CLI batch commits once.

    With ``vectors_follow`` (a :class:`~citewell.ports.StagedIndex` only) chunks the embedding
    cache lacks are published without vectors: the document is searchable by words and citeable
    at once, and :func:`vector_stage` brings its vectors after. Returns the chunk count, or None
    when the upload was superseded. A crash before the switch leaves the previous revision
    served; what this upload wrote is its own and goes when it is superseded or by the audit.
    Only what was listed *before* a successful switch is removed after it: at that moment no
    newer upload existed, so all of it is older.
    """
    tenant, document_id = upload.tenant, upload.document_id
    document = services.documents.get_document(tenant, document_id)
    if document is not None and document.active_upload == upload.upload_id and document.active_revision == revision:
        return document.chunk_count  # a redelivery: already published
    if not is_current(document, upload):
        abandon(services, upload, revision)
        return None
    pages = _revision_pages(services, tenant, document_id, revision)
    first = next(pages, None)
    if first is None:
        raise NotFound(f"no chunk records for revision {revision[:12]} of {document_id!r}")
    title = first[0].title
    listed = set(services.index.revisions(tenant, document_id)) | set(services.chunks.chunk_revisions(tenant, document_id))
    older_revisions = listed - {revision}
    older_objects = [
        key for stage in STAGES for key in services.objects.list(document_prefix(stage, tenant, document_id))
        if _upload_of(key) not in (None, upload.upload_id)  # a key not of our making is left to the audit to report
    ]
    older_uploads = [u for u in services.uploads.list_uploads(tenant, document_id) if u.seq < upload.seq]
    try:
        count = _index_pages(services, (tenant, document_id, revision), chain([first], pages), vectors_follow)
    except NotFound:  # a page's vectors gone: a delete or a newer upload purged them while the rows went in
        if is_current(services.documents.get_document(tenant, document_id), upload):
            raise
        abandon(services, upload, revision)
        return None
    if flush:
        services.index.flush()
    indexed = services.index.count(tenant, document_id, revision)
    if indexed != count:
        raise PublishConflict(f"index holds {indexed} chunks of revision {revision[:12]}, expected {count}")

    def switch(d: Document) -> Document | None:
        if not is_current(d, upload):
            return None
        return d.model_copy(update={
            "active_revision": revision, "active_upload": upload.upload_id, "content_sha256": content_sha256,
            "encoding": encoding, "chunk_count": count, "status": DocumentStatus.PUBLISHED, "error": None,
            "allowed_roles": upload.allowed_roles, "title": title, "source": upload.source,
            "filename": upload.filename, **descriptive(upload), "fetched": upload.fetched,
            "purging": sorted(set(d.purging) | older_revisions),  # an intent until the purge below is done (see finish_purges)
        })

    if update_document(services.documents, tenant, document_id, switch) is None:
        abandon(services, upload, revision)
        return None
    services.answer_cache.bump_epoch(tenant)  # cached answers of this tenant may rest on the old revision
    from citewell.deletion import finish_purges

    finish_purges(services, tenant, document_id, older_revisions, Counter(), (older_objects, older_uploads))
    return count


def reindex_revision(services: Services, tenant: str, document_id: str, revision: str) -> int:
    """Write a revision's rows again from its chunk records, a page at a time, each page embedded
    where the cache lacks it (the audit's repair of a served revision missing from the index).
    Returns how many rows were written: 0 when the revision has no records."""
    pages = _revision_pages(services, tenant, document_id, revision)
    first = next(pages, None)
    if first is None:
        return 0

    def embedded() -> Iterator[list[Chunk]]:
        for page in chain([first], pages):
            embed_stage(services, page)
            yield page

    return _index_pages(services, (tenant, document_id, revision), embedded(), vectors_follow=False)


def _revision_pages(services: Services, tenant: str, document_id: str, revision: str) -> Iterator[list[Chunk]]:
    """The revision's chunk records as its index takes them: ``PUBLISH_PAGE`` at a time for a
    :class:`~citewell.ports.BatchedIndex`; for any other (it takes a revision whole) in one page, in
    reading order. Nothing when it has none."""
    if isinstance(services.index, BatchedIndex):
        yield from services.chunks.chunk_pages(tenant, document_id, revision, PUBLISH_PAGE)
    elif chunks := services.chunks.get_chunks(tenant, document_id, revision):
        yield chunks


def _index_pages(services: Services, key: tuple[str, str, str], pages: Iterable[list[Chunk]], vectors_follow: bool) -> int:
    """Index a revision's chunk records, given page by page, with their cached vectors; returns how
    many. A :class:`~citewell.ports.BatchedIndex` takes each page as it is read, its vectors looked
    up for that page alone, so the function holds one page whatever the revision's length; a chunk
    without a cached vector fails it (NotFound, retried: the rows written so far are this upload's,
    replaced by the retry). Any other index (the embedded one) takes the revision whole."""
    import numpy as np

    index, identity = services.index, services.embedder.identity
    if not isinstance(index, BatchedIndex):
        chunks = [c for page in pages for c in page]  # one page: see _revision_pages
        cached = services.embeddings.get_embeddings(identity, (c.content_hash for c in chunks))
        absent = [c.chunk_id for c in chunks if c.content_hash not in cached]
        if absent and not vectors_follow:
            raise NotFound(f"{len(absent)} chunks have no embedding yet, first {absent[0]!r}")
        _index_chunks(services, chunks, cached, absent)
        return len(chunks)
    counted = 0

    def batches() -> Iterator[tuple[list[Chunk], np.ndarray]]:
        nonlocal counted
        for page in pages:
            cached = services.embeddings.get_embeddings(identity, {c.content_hash for c in page})
            absent = [c.chunk_id for c in page if c.content_hash not in cached]
            if absent:
                raise NotFound(f"{len(absent)} chunks (of a page of {len(page)}) have no embedding yet, first {absent[0]!r}")
            counted += len(page)
            yield page, np.stack([cached[c.content_hash] for c in page])

    index.write_revision(*key, batches(), identity)
    return counted


def _index_chunks(services: Services, chunks: list[Chunk], cached: dict[str, np.ndarray], absent: list[str]) -> None:
    """Write the revision's rows with their cached vectors; the chunks named in ``absent`` (no
    vector cached yet) as pending rows of a :class:`~citewell.ports.StagedIndex`, whose vectors
    follow. Any other index takes whole publications only."""
    import numpy as np

    identity = services.embedder.identity
    if absent:
        index = services.index
        if not isinstance(index, StagedIndex):
            raise TypeError(f"{type(index).__name__} takes whole publications: embed before publishing")
        width = next(iter(cached.values())).shape[0] if cached else dimensions(identity)
        blank = np.zeros(width, dtype=np.float32)
        index.upsert(chunks, np.stack([cached.get(c.content_hash, blank) for c in chunks]), identity, pending=absent)
    else:
        services.index.upsert(chunks, np.stack([cached[c.content_hash] for c in chunks]), identity)


def dimensions(identity: str) -> int:
    """The width of an embedder's vectors, from its identity ``model@version:dims``."""
    try:
        return int(identity.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        raise ValueError(f"an embedder identity names its dimensions (model@version:dims), not {identity!r}") from None


def vector_stage(services: Services, chunks: Sequence[Chunk]) -> int:
    """The second step of a staged publication: embed what the cache lacks of these published
    chunks and give their index rows the vectors. Returns how many rows took one.

    It only updates rows still in the index, under the revision the chunk names, so a revision
    deleted or replaced meanwhile takes nothing, and no row of one revision gets another's
    vector. Embeddings written for a revision no longer served are released again: a delete's
    purge may have run between the write and this check."""
    index = services.index
    if not isinstance(index, StagedIndex) or not chunks:
        return 0
    embed_stage(services, chunks)
    identity = services.embedder.identity
    cached = services.embeddings.get_embeddings(identity, {c.content_hash for c in chunks})
    groups: dict[tuple[str, str, str], list[Chunk]] = {}
    for chunk in chunks:
        groups.setdefault((chunk.tenant, chunk.document_id, chunk.revision), []).append(chunk)
    written = 0
    for (tenant, document_id, revision), group in groups.items():
        vectors = {c.chunk_id: cached[c.content_hash] for c in group if c.content_hash in cached}
        written += index.set_vectors(tenant, document_id, revision, vectors)
        document = services.documents.get_document(tenant, document_id)
        if document is None or document.status is DocumentStatus.DELETING or document.active_revision != revision:
            release_embeddings(services, group)
    return written


def _upload_of(key: str) -> str | None:
    try:
        return parse_key(key).upload_id
    except InvalidInput:
        return None


def abandon(services: Services, upload: Upload, revision: str | None = None) -> Counter[str]:
    """Remove everything a superseded or failed upload wrote: its revision's chunk records and
    index rows, its objects, its intent. Never the upload that is served."""
    removed: Counter[str] = Counter()
    document = services.documents.get_document(upload.tenant, upload.document_id)
    if document is not None and document.active_upload == upload.upload_id:
        return removed
    if revision is None:
        parsed = parsed_artifact(services, upload)
        revision = parsed.revision if parsed else None
    if revision is not None:
        from citewell.deletion import purge_revision

        purge_revision(services, upload.tenant, upload.document_id, revision, removed)
    for key in upload_keys(upload.tenant, upload.document_id, upload.upload_id):
        removed["objects"] += services.objects.delete(key)
    removed["uploads"] += services.uploads.delete_upload(upload.tenant, upload.document_id, upload.upload_id)
    return removed


def parsed_artifact(services: Services, upload: Upload) -> ParsedArtifact | None:
    """What an upload parsed to (its revision among it), if it got that far."""
    try:
        raw = services.objects.get(parsed_key(upload.tenant, upload.document_id, upload.upload_id))
    except NotFound:
        return None
    return ParsedArtifact.model_validate_json(raw)


def record_failure(services: Services, upload: Upload, error: IngestError | Exception) -> ErrorInfo:
    """The document keeps serving its previous revision, if any; the failure is on its record
    when this upload is still the latest. The upload's own objects go either way."""
    info = ErrorInfo(code=getattr(error, "code", "internal_error"), message=getattr(error, "message", str(error)))

    def fail(d: Document) -> Document | None:
        if not is_current(d, upload) or d.status is not DocumentStatus.PROCESSING:  # superseded, or it got through
            return None
        return d.model_copy(update={"status": DocumentStatus.FAILED, "error": info})

    update_document(services.documents, upload.tenant, upload.document_id, fail)
    abandon(services, upload)
    return info
