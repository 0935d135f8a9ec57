"""The ports a stage or a query needs, bundled (what builds them for each deployment: :mod:`citewell.deployments`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from citewell.chunking import Chunker
from citewell.ports import (
    AnswerCache,
    AnswerRecords,
    ChunkRecords,
    Completer,
    ConversationRecords,
    DocumentRecords,
    Embedder,
    EmbeddingCache,
    MetadataStore,
    ObjectStore,
    OcrEngine,
    Removals,
    Reranker,
    SearchIndex,
    UploadRecords,
)
from citewell.settings import DEFAULT_MAX_BYTES


class Records(TypedDict):
    """The record roles of :class:`Services`, each by its port."""

    documents: DocumentRecords
    uploads: UploadRecords
    chunks: ChunkRecords
    embeddings: EmbeddingCache
    answers: AnswerRecords
    answer_cache: AnswerCache
    conversations: ConversationRecords
    removals: Removals


def records(store: MetadataStore) -> Records:
    """Every record role served by ``store``. The adapters keep all the records in one database
    (one table on AWS) and some of their writes span roles in one transaction, so one store
    serves them all: ``Services(objects=..., **records(store), index=..., ...)`` builds the
    services, and ``replace(services, **records(other))`` puts another store in its place."""
    return Records(documents=store, uploads=store, chunks=store, embeddings=store, answers=store,
                   answer_cache=store, conversations=store, removals=store)


@dataclass
class Services:
    """The ports a stage or a query works through; each record role is held by its own port."""

    objects: ObjectStore
    documents: DocumentRecords
    uploads: UploadRecords
    chunks: ChunkRecords
    embeddings: EmbeddingCache  # cached vectors (the model that computes them is ``embedder``)
    answers: AnswerRecords
    answer_cache: AnswerCache  # cached answers by question, and each tenant's corpus epoch
    conversations: ConversationRecords
    removals: Removals
    index: SearchIndex
    embedder: Embedder
    chunker: Chunker
    max_bytes: int = DEFAULT_MAX_BYTES
    reranker: Reranker | None = None  # None: the one CITEWELL_RERANKER configures (none: the fused order)
    expander: Completer | None = None  # expands questions; None: the one the settings name (none for extractive)
    ocr: OcrEngine | None = None  # reads scans; None: images and PDF pages without text are empty_text
