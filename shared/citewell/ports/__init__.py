"""Ports: the small interfaces behind which every stateful or networked part sits.

The ingestion stages and the query path are written once against these; each has an
embedded adapter and a cloud adapter, side by side in the port's package (:mod:`citewell.objects`,
:mod:`citewell.metadata`, :mod:`citewell.index`, :mod:`citewell.embedders`, :mod:`citewell.llm`,
:mod:`citewell.rerankers`, :mod:`citewell.ocr`). By kind: the records, one port per
role (:mod:`citewell.ports.records`), the search index (:mod:`citewell.ports.index`), the object
store (:mod:`citewell.ports.objects`), and the models and engines (:mod:`citewell.ports.models`).
Every name is taken from here: ``from citewell.ports import DocumentRecords``.
"""

from __future__ import annotations

from citewell.ports.index import (
    BatchedIndex,
    EmbedderCheckedIndex,
    ExpungingIndex,
    IndexedChunks,
    LaneHit,
    QueryVector,
    SearchIndex,
    SearchLanes,
    StagedIndex,
    query_vector,
)
from citewell.ports.models import Completer, DocumentOcr, Embedder, Generator, OcrEngine, Reranked, Reranker, TokenCounter
from citewell.ports.objects import ChainedObjects, ObjectStore, SizedObjects
from citewell.ports.records import (
    AnswerCache,
    AnswerRecords,
    AuditCheckpoints,
    ChunkRecords,
    ClaimingUploads,
    ConversationRecords,
    DocumentPage,
    DocumentRecords,
    EmbeddingCache,
    MetadataStore,
    Removals,
    UploadRecords,
)

__all__ = [
    "AnswerCache", "AnswerRecords", "AuditCheckpoints", "BatchedIndex", "ChainedObjects", "ChunkRecords", "ClaimingUploads",
    "Completer", "ConversationRecords",
    "DocumentPage",
    "DocumentRecords", "Embedder", "EmbedderCheckedIndex", "EmbeddingCache", "ExpungingIndex", "Generator",
    "DocumentOcr", "IndexedChunks", "LaneHit", "MetadataStore", "ObjectStore", "OcrEngine", "query_vector", "QueryVector",
    "Removals", "Reranked", "Reranker", "SearchIndex", "SearchLanes", "SizedObjects", "StagedIndex", "TokenCounter",
    "UploadRecords",
]
