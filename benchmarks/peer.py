"""The peer: Haystack 2.x wired the way its documentation shows, over the same chunks and model.

In-memory document store, ``InMemoryBM25Retriever`` (Haystack's default BM25L) and
``InMemoryEmbeddingRetriever`` under the same tenant and role filter citewell applies, fused
by ``DocumentJoiner`` in ``reciprocal_rank_fusion`` mode. The query embedder is a Haystack
component around citewell's MiniLM, so both systems see identical vectors and chunk texts:
what differs is the engine and the fusion. A benchmark-only dependency (``bench`` extra).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.homes import published
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity
from citewell.ports import Embedder
from citewell.services import Services

LANE_OUTPUTS = {"bm25": "bm25", "vector": "dense", "hybrid": "joiner"}


def version() -> str:
    from importlib.metadata import version as installed

    return installed("haystack-ai")


def _query_embedder(embedder: Embedder) -> Any:
    from haystack import component

    @component
    class QueryEmbedder:
        """Embeds the query with the model citewell uses."""

        @component.output_types(embedding=list[float])
        def run(self, text: str) -> dict[str, list[float]]:
            return {"embedding": embedder.embed([text])[0].tolist()}

    return QueryEmbedder()


class HaystackPeer:
    def __init__(self, embedder: Embedder, identity: Identity) -> None:
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        self.embedder = embedder
        self.store = InMemoryDocumentStore()
        self.filters = {
            "operator": "AND",
            "conditions": [
                {"field": "meta.tenant", "operator": "==", "value": identity.tenant},
                {"field": "meta.role", "operator": "in", "value": sorted(identity.roles)},
            ],
        }

    @classmethod
    def over_home(cls, services: Services, identity: Identity) -> tuple[HaystackPeer, float]:
        """A peer holding every published chunk of a home with its cached vector, and the
        seconds its store took to write them."""
        pairs, vectors = published(services)
        chunks = [c for _, cs in pairs for c in cs]
        haystack = cls(services.embedder, identity)
        return haystack, haystack.index(chunks, np.stack([vectors[c.content_hash] for c in chunks]))

    def index(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> float:
        """Writes the chunks with their vectors; returns the seconds the store took."""
        from haystack import Document

        if any(len(c.allowed_roles) != 1 for c in chunks):
            raise ValueError("the peer's filter compares one role per chunk; give each chunk one role")
        documents = [
            Document(
                id=c.chunk_id, content=c.embedding_text, embedding=v.tolist(),
                meta={"document_id": c.document_id, "tenant": c.tenant, "role": next(iter(c.allowed_roles))},
            )
            for c, v in zip(chunks, vectors)
        ]
        started = time.perf_counter()
        self.store.write_documents(documents)
        return time.perf_counter() - started

    def pipeline(self, depth: int) -> Any:
        from haystack import Pipeline
        from haystack.components.joiners import DocumentJoiner
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever

        pipe = Pipeline()
        pipe.add_component("embedder", _query_embedder(self.embedder))
        pipe.add_component("bm25", InMemoryBM25Retriever(self.store, filters=self.filters, top_k=depth))
        pipe.add_component("dense", InMemoryEmbeddingRetriever(self.store, filters=self.filters, top_k=depth))
        pipe.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=depth))
        pipe.connect("embedder.embedding", "dense.query_embedding")
        pipe.connect("bm25", "joiner")
        pipe.connect("dense", "joiner")
        return pipe

    @staticmethod
    def run(pipe: Any, question: str) -> dict[str, list[str]]:
        """Document ids in rank order for each lane (``bm25``, ``vector``, ``hybrid``)."""
        out = pipe.run({"embedder": {"text": question}, "bm25": {"query": question}}, include_outputs_from={"bm25", "dense"})
        return {lane: [d.meta["document_id"] for d in out[name]["documents"]] for lane, name in LANE_OUTPUTS.items()}
