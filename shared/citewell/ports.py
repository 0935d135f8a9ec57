"""Ports: the small interfaces behind which every stateful or networked part sits.

The ingestion stages and the query path are written once against these; each has an
embedded adapter (``citewell.local``) and a cloud adapter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from citewell.models import AnswerRecord, Chunk, Document, Draft, EvidenceItem, Identity


@dataclass(frozen=True)
class LaneHit:
    """One ranked candidate from one retrieval lane (rank is 1-based)."""

    chunk_id: str
    document_id: str
    revision: str
    title: str
    section_path: list[str]
    text: str
    score: float
    rank: int


class ObjectStore(Protocol):
    """Raw uploads and stage artifacts, by key."""

    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, key: str) -> int: ...
    def list(self, prefix: str) -> Iterator[str]: ...


class MetadataStore(Protocol):
    """The authoritative records: documents, chunk records and the embedding cache."""

    def get_document(self, tenant: str, document_id: str) -> Document | None: ...
    def get_documents(self, tenant: str, document_ids: Iterable[str]) -> dict[str, Document]: ...
    def list_documents(self, tenant: str) -> list[Document]: ...
    def put_document(self, document: Document) -> None: ...
    def delete_document(self, tenant: str, document_id: str) -> int: ...
    def switch_revision(
        self, tenant: str, document_id: str, expected: str | None, new: str, chunk_count: int
    ) -> bool:
        """Conditional write: move ``active_revision`` from ``expected`` to ``new``."""
        ...

    def put_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Replace every (document, revision) present in ``chunks`` with exactly these records."""
        ...

    def get_chunks(self, tenant: str, document_id: str, revision: str) -> list[Chunk]: ...
    def get_chunks_by_id(self, tenant: str, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], Chunk]:
        """Chunk records by ``(document_id, revision, chunk_id)``; absent keys are left out."""
        ...

    def delete_chunks(self, tenant: str, document_id: str, revision: str) -> int: ...
    def get_embeddings(self, identity: str, content_hashes: Iterable[str]) -> dict[str, np.ndarray]: ...
    def put_embeddings(self, identity: str, vectors: dict[str, np.ndarray]) -> None: ...
    def put_answer(self, record: AnswerRecord) -> None: ...
    def get_answer(self, tenant: str, answer_id: str) -> AnswerRecord | None: ...
    def tenant_epoch(self, tenant: str) -> int: ...
    def bump_epoch(self, tenant: str) -> int:
        """Move the tenant's corpus epoch and drop its cached answers."""
        ...

    def get_cached_answer(self, cache_key: str, tenant: str, epoch: int) -> str | None: ...
    def put_cached_answer(self, cache_key: str, tenant: str, epoch: int, answer_id: str) -> None: ...



class SearchIndex(Protocol):
    """Lexical and vector lanes over chunks, each filtered by the caller's identity *before* ranking."""

    def embedder_identity(self) -> str | None: ...
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder_identity: str) -> int:
        """Replace every (document, revision) present in ``chunks`` with exactly these chunks."""
        ...

    def count(self, tenant: str, document_id: str, revision: str) -> int: ...
    def delete_revision(self, tenant: str, document_id: str, revision: str) -> int: ...
    def set_access(self, tenant: str, document_id: str, allowed_roles: frozenset[str]) -> int: ...
    def lexical(self, query: str, identity: Identity, k: int) -> list[LaneHit]: ...
    def vector(self, query: np.ndarray, embedder_identity: str, identity: Identity, k: int) -> list[LaneHit]: ...


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



class TokenCounter(Protocol):
    """Counts tokens the way the embedding model will, so chunk budgets are real."""

    def __call__(self, texts: Sequence[str]) -> list[int]: ...
