"""Ports: the small interfaces behind which every stateful or networked part sits.

The ingestion stages and the query path are written once against these; each has an
embedded adapter (``citewell.local``) and a cloud adapter.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np

from citewell.filters import Scope, SearchFilter
from citewell.leases import Lease
from citewell.models import AnswerRecord, Chunk, Conversation, Document, Draft, EvidenceItem, Identity, Removal, SearchHit, Upload
from citewell.ocr import OcrPage, ScanLimits


@dataclass(frozen=True)
class LaneHit:
    """One ranked candidate from one retrieval lane (rank is 1-based)."""

    chunk_id: str
    document_id: str
    revision: str
    title: str
    section_path: list[str]
    text: str
    score: float  # bm25: the engine's relevance; vector: the cosine similarity to the query
    rank: int
    # Published by words first and still waiting for its vector: the vector lane cannot hold it,
    # so fusion counts its lexical rank for that lane too (absent there is not "not relevant").
    vectorless: bool = False


@dataclass(frozen=True)
class DocumentPage:
    """One page of a listing: the records the reader may read, by id, and the id to continue
    after (None: the listing is done). A page may hold fewer than asked and still go on: a
    store stops after reading a bounded number of records (see ``MetadataStore.page_documents``)."""

    documents: list[Document]
    after: str | None


class ObjectStore(Protocol):
    """Raw uploads and stage artifacts, by key."""

    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, key: str) -> int: ...
    def list(self, prefix: str) -> Iterator[str]: ...
    def temporaries(self, prefix: str = "") -> builtins.list[tuple[str, float]]:
        """Unfinished writes under ``prefix`` (a killed process leaves them) and their age in
        seconds; ``delete`` removes one."""
        ...


class MetadataStore(Protocol):
    """The authoritative records: documents, upload intents, chunk records and the caches."""

    def get_document(self, tenant: str, document_id: str) -> Document | None: ...
    def get_documents(self, tenant: str, document_ids: Iterable[str]) -> dict[str, Document]: ...
    def list_documents(self, tenant: str) -> list[Document]: ...
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
        """Remove the record; with ``generation``, only while it is still that life of the record."""
        ...

    def put_upload(self, upload: Upload) -> None: ...
    def get_upload(self, tenant: str, document_id: str, upload_id: str) -> Upload | None: ...
    def list_uploads(self, tenant: str, document_id: str) -> list[Upload]: ...
    def delete_upload(self, tenant: str, document_id: str, upload_id: str) -> int: ...
    def put_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Replace every (document, revision) present in ``chunks`` with exactly these records."""
        ...

    def get_chunks(self, tenant: str, document_id: str, revision: str) -> list[Chunk]: ...
    def get_chunks_by_id(self, tenant: str, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], Chunk]:
        """Chunk records by ``(document_id, revision, chunk_id)``; absent keys are left out."""
        ...

    def chunk_revisions(self, tenant: str, document_id: str) -> list[str]: ...
    def hashes_in_use(self, content_hashes: Iterable[str]) -> set[str]:
        """Which of these content hashes some chunk record still has."""
        ...

    def delete_chunks(self, tenant: str, document_id: str, revision: str) -> int: ...
    def get_embeddings(self, identity: str, content_hashes: Iterable[str]) -> dict[str, np.ndarray]: ...
    def put_embeddings(self, identity: str, vectors: dict[str, np.ndarray]) -> None: ...
    def delete_embeddings(self, identity: str, content_hashes: Iterable[str]) -> int: ...
    def delete_unused_embeddings(self, identity: str, content_hashes: Iterable[str]) -> int:
        """Drop those of these cached embeddings that no chunk record uses, judged at the delete:
        a chunk stage that wrote its records first keeps its vectors."""
        ...

    def put_answer(self, record: AnswerRecord) -> None:
        """Store (or rewrite, as a withdrawal does) a record whatever its sources are now."""
        ...

    def record_answer(self, record: AnswerRecord, cache: tuple[str, int] | None = None) -> bool:
        """Store a new answer (and its cache entry ``(cache_key, epoch)``) only while every source
        it rests on still serves the revision it read, atomically with that check; False when one
        changed (a delete or replacement won the race: nothing was written)."""
        ...

    def answers_citing(self, tenant: str, document_id: str, revision: str | None = None) -> list[AnswerRecord]: ...
    def drop_cached_answers(self, tenant: str, answer_ids: Iterable[str]) -> int: ...
    def get_answer(self, tenant: str, answer_id: str) -> AnswerRecord | None: ...
    def tenant_epoch(self, tenant: str) -> int: ...
    def bump_epoch(self, tenant: str) -> int:
        """Move the tenant's corpus epoch and drop its cached answers; returns how many were dropped."""
        ...

    def get_cached_answer(self, cache_key: str, tenant: str, epoch: int) -> str | None: ...
    def save_conversation(self, conversation: Conversation) -> Conversation | None:
        """Store over the version read (0: new) and return what was stored; None when another writer won."""
        ...

    def get_conversation(self, tenant: str, conversation_id: str) -> Conversation | None: ...
    def conversations_of(self, tenant: str, subject: str, limit: int = 50) -> list[Conversation]:
        """The subject's conversations, the latest first."""
        ...

    def conversations_answering(self, tenant: str, answer_ids: Iterable[str]) -> list[Conversation]:
        """Every conversation with a turn that got one of these answers (a withdrawal's turns)."""
        ...

    def conversations_idle_since(self, before: datetime) -> list[Conversation]:
        """Every conversation whose last question is older than ``before`` (what expiry removes),
        read without reading the others."""
        ...

    def delete_conversation(self, tenant: str, conversation_id: str) -> int: ...
    def conversation_inventory(self) -> list[Conversation]: ...
    def put_cached_answer(self, cache_key: str, tenant: str, epoch: int, answer_id: str) -> None: ...
    def compact(self, removed: bool) -> bool:
        """Make deletions physical: nothing removed may remain in logs, free space or the unused
        space of live pages; ``removed`` says text was removed since the last compaction that
        finished (a store may then rewrite its files). False when that could not finish now
        (another reader pins the log): the bytes are pending."""
        ...

    def begin_removal(self, owner: Lease | None) -> str:
        """Note, durably and before anything goes, that stored text is being removed."""
        ...

    def end_removal(self, removal_id: str) -> None: ...
    def removals(self) -> list[Removal]:
        """Removals whose compaction has not been seen through (see :func:`citewell.deletion.compact`)."""
        ...

    def clear_removals(self, removal_ids: Iterable[str]) -> None: ...
    def all_documents(self) -> list[Document]: ...
    def upload_inventory(self) -> list[Upload]: ...
    def embedding_hashes(self, identity: str) -> set[str]: ...
    def chunk_inventory(self) -> list[tuple[str, str, str, int]]: ...
    def citation_inventory(self) -> list[tuple[str, str, str, str]]: ...
    def cache_inventory(self) -> list[tuple[str, str]]: ...
    def embedding_identities(self) -> dict[str, int]: ...
    def delete_identity(self, identity: str) -> int: ...


# The question's vector, or the function that computes it (None if it cannot be computed).
QueryVector: TypeAlias = "np.ndarray | Callable[[], np.ndarray | None]"


def query_vector(vector: QueryVector | None) -> np.ndarray | None:
    return vector() if callable(vector) else vector


class SearchIndex(Protocol):
    """Lexical and vector lanes over chunks, each filtered by the caller's identity *before* ranking."""

    def embedder_identity(self) -> str | None: ...
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder_identity: str) -> int:
        """Replace every (document, revision) present in ``chunks`` with exactly these chunks."""
        ...

    def flush(self) -> None:
        """Make every upsert so far searchable in one step (an ingest calls it after each batch)."""
        ...

    def count(self, tenant: str, document_id: str, revision: str) -> int: ...
    def delete_revision(self, tenant: str, document_id: str, revision: str) -> int: ...
    def delete_document(self, tenant: str, document_id: str) -> int: ...
    def revisions(self, tenant: str, document_id: str) -> list[str]: ...
    def inventory(self) -> list[tuple[str, str, str, int]]: ...
    def compact(self, removed: bool) -> bool:
        """Make deletions physical: nothing removed may remain in segments, logs, free space or
        the unused space of live pages (``removed`` as for the metadata store's).
        False when that could not finish now: the bytes are pending until the next compaction."""
        ...

    def access_inventory(self) -> list[tuple[str, str, str, frozenset[str], str]]:
        """``(tenant, document_id, revision, roles, title)`` of each distinct access of indexed rows."""
        ...

    def lexical(self, query: str, identity: Identity, k: int, scope: Scope = None) -> list[LaneHit]: ...
    def vector(
        self, query: np.ndarray, embedder_identity: str, identity: Identity, k: int, scope: Scope = None
    ) -> list[LaneHit]: ...
    def lanes(
        self, text: str | None, vector: QueryVector | None, embedder_identity: str, identity: Identity, k: int,
        scope: Scope = None,
    ) -> dict[str, list[LaneHit]]:
        """The lanes that were given input, in one round trip where the engine allows it. With a
        ``scope`` (a query filter's document ids) each lane ranks only the caller's rows of those
        documents, as it ranks only the caller's rows: an empty scope finds nothing. A
        vector given as a function is computed here, once: an engine may run its lexical lane
        meanwhile. Should it give None (the embedder failed), only the lexical lane answers."""
        ...


@runtime_checkable
class StagedIndex(SearchIndex, Protocol):
    """An index that publishes a revision before its vectors: words first, meaning when the
    model has caught up. The embedded index does; OpenSearch takes whole publications (the AWS
    pipeline embeds before it publishes)."""

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder_identity: str,
               pending: Collection[str] = frozenset()) -> int:
        """As :meth:`SearchIndex.upsert`; the chunk ids in ``pending`` wait for their vectors."""
        ...

    def set_vectors(self, tenant: str, document_id: str, revision: str, vectors: Mapping[str, np.ndarray]) -> int:
        """Give waiting rows of this revision their vectors; rows gone (deleted, replaced) take none."""
        ...

    def vectorless(self) -> list[tuple[str, str, str, int]]:
        """``(tenant, document_id, revision, rows)`` still waiting for vectors."""
        ...

    def vectorless_documents(self, identity: Identity) -> int:
        """Documents the identity may read that the vector lane does not yet cover."""
        ...


class Embedder(Protocol):
    """Texts to unit vectors. ``identity`` is ``model@version:dims``; vectors never mix identities."""

    @property
    def identity(self) -> str: ...
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class Generator(Protocol):
    """Writes an answer from numbered evidence, citing ``[S1]``-style refs, or refuses."""

    @property
    def name(self) -> str: ...
    def generate(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        """Raises :class:`~citewell.errors.GeneratorUnavailable` when the model service fails."""
        ...



@dataclass(frozen=True)
class Reranked:
    """One candidate's place after reranking: its index in the candidates given, and its score."""

    index: int
    score: float


class Reranker(Protocol):
    """Reorders read-back hits (the caller's only) by their relevance to the question."""

    @property
    def name(self) -> str: ...
    def rerank(self, question: str, hits: Sequence[SearchHit], top_n: int) -> list[Reranked]:
        """At most ``top_n`` of ``hits``, best first. Raises
        :class:`~citewell.errors.RerankerUnavailable` when the service fails or its reply is unusable."""
        ...


class Completer(Protocol):
    """A model generator's plain completion: what an LLM reranker asks through."""

    @property
    def name(self) -> str: ...
    def complete(self, system: str, user: str) -> str:
        """Raises :class:`~citewell.errors.GeneratorUnavailable` when the model service fails."""
        ...


class OcrEngine(Protocol):
    """Reads the text of scanned pages. ``document`` is an image (PNG, JPEG, or TIFF, whose frames
    are pages) or a one-page PDF: the forms Amazon Textract's DetectDocumentText takes, so the
    PDF parser hands over a page without rendering it and each engine decodes what it is given.
    Raises :class:`~citewell.errors.IngestError` (typed) for what it cannot read. ``on_page(done,
    total)`` hears of each page read, so a long scan shows its pages moving. ``limits`` bound
    the pages and pixels of one file: the engine holds an image to them before decoding it, and
    the PDF parser holds all of a PDF's scanned pages to them before the first is read."""

    @property
    def name(self) -> str: ...
    @property
    def limits(self) -> ScanLimits: ...
    def read(self, document: bytes, on_page: Callable[[int, int], None] | None = None) -> list[OcrPage]: ...


class TokenCounter(Protocol):
    """Counts tokens the way the embedding model will, so chunk budgets are real."""

    def __call__(self, texts: Sequence[str]) -> list[int]: ...
