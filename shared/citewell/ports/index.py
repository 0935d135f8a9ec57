"""The search index port: lexical and vector lanes over chunks, and what some indexes add."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np

from citewell.filters import Scope
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity


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


# The question's vector, or the function that computes it (None if it cannot be computed).
QueryVector: TypeAlias = "np.ndarray | Callable[[], np.ndarray | None]"


def query_vector(vector: QueryVector | None) -> np.ndarray | None:
    return vector() if callable(vector) else vector


class IndexedChunks(Protocol):
    """What the index holds: each published revision's chunks (with their vectors, under one
    embedder identity), written whole, counted, listed and removed."""

    def embedder_identity(self) -> str | None:
        """The identity the index's vectors were made with; None while it holds none."""
        ...

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder_identity: str) -> int:
        """Replace every (document, revision) present in ``chunks`` with exactly these chunks."""
        ...

    def flush(self) -> None:
        """Make every upsert so far searchable in one step (an ingest calls it after each batch)."""
        ...

    def count(self, tenant: str, document_id: str, revision: str) -> int:
        """How many rows the revision has (a publish checks it against its chunks)."""
        ...

    def delete_revision(self, tenant: str, document_id: str, revision: str) -> int:
        """Remove the revision's rows; returns how many went."""
        ...

    def delete_document(self, tenant: str, document_id: str) -> int:
        """Remove every row of the document; returns how many went."""
        ...

    def revisions(self, tenant: str, document_id: str) -> list[str]:
        """The document's revisions that have rows."""
        ...

    def inventory(self) -> list[tuple[str, str, str, int]]:
        """``(tenant, document_id, revision, rows)`` of every indexed revision (for the audit)."""
        ...

    def access_inventory(self) -> list[tuple[str, str, str, frozenset[str], str]]:
        """``(tenant, document_id, revision, roles, title)`` of each distinct access of indexed rows."""
        ...

    def compact(self, removed: bool) -> bool:
        """Make deletions physical: nothing removed may remain in segments, logs, free space or
        the unused space of live pages (``removed`` as for the records' :meth:`Removals.compact`).
        False when that could not finish now: the bytes are pending until the next compaction."""
        ...


class SearchLanes(Protocol):
    """The retrieval lanes, each filtered by the caller's identity *before* ranking."""

    def lexical(self, query: str, identity: Identity, k: int, scope: Scope = None) -> list[LaneHit]:
        """The caller's ``k`` best rows for the words of ``query`` (BM25 or the engine's equal)."""
        ...

    def vector(
        self, query: np.ndarray, embedder_identity: str, identity: Identity, k: int, scope: Scope = None
    ) -> list[LaneHit]:
        """The caller's ``k`` rows nearest ``query``, a vector of ``embedder_identity``."""
        ...

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


class SearchIndex(IndexedChunks, SearchLanes, Protocol):
    """Lexical and vector lanes over chunks, each filtered by the caller's identity *before*
    ranking: what every index adapter implements (both roles, over one engine)."""


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


@runtime_checkable
class BatchedIndex(SearchIndex, Protocol):
    """An index that takes a revision in batches (OpenSearch): a publish holds one batch of rows
    at a time, never the revision, so a function's memory does not grow with a document's length."""

    def write_revision(self, tenant: str, document_id: str, revision: str,
                       batches: Iterable[tuple[Sequence[Chunk], np.ndarray]], embedder_identity: str) -> int:
        """Replace the revision's rows with the chunks of ``batches`` (chunks of this revision and
        their vectors, one each), each batch read when it is written. The rows are searchable (and
        counted by :meth:`count`) when it returns. Returns how many were written."""
        ...


@runtime_checkable
class ExpungingIndex(SearchIndex, Protocol):
    """An index whose deleted rows stay in its segments until a merge (OpenSearch): the scheduled
    audit asks for that merge."""

    def expunge(self) -> None:
        """Ask the engine to merge away segments' deleted rows, without waiting for it to finish."""
        ...


@runtime_checkable
class EmbedderCheckedIndex(SearchIndex, Protocol):
    """An index that can be rebuilt for another embedder while stages run (OpenSearch behind an
    alias): a stage checks it before spending a model's time on vectors."""

    def require_embedder(self, embedder_identity: str) -> None:
        """Return when the index, read now, was built for ``embedder_identity`` (or there is none
        yet); raise :class:`~citewell.errors.EmbedderSwitched` otherwise."""
        ...
