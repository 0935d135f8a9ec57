"""Benchmark homes: fresh folders wired like ``open_local``, and what a built home holds."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from benchmarks.cache import CachedEmbedder
from citewell.deployments import open_local
from citewell.evaluation.retrieval import EVAL_TENANT
from citewell.models.chunks import Chunk
from citewell.models.documents import Document
from citewell.services import Services


def fresh_home(home: Path, cache: Path | None = None) -> Services:
    """An empty home at ``home``; with ``cache``, its embedder reads and fills that vector cache."""
    shutil.rmtree(home, ignore_errors=True)
    services = open_local(home)
    if cache is not None:
        services.embedder = CachedEmbedder(services.embedder, cache)
    return services


def published(services: Services) -> tuple[list[tuple[Document, list[Chunk]]], dict[str, np.ndarray]]:
    """Every published evaluation document with its chunks, and their vectors by content hash."""
    documents = [d for d in services.documents.list_documents(EVAL_TENANT) if d.active_revision]
    pairs = [(d, services.chunks.get_chunks(EVAL_TENANT, d.document_id, d.active_revision or "")) for d in documents]
    hashes = {c.content_hash for _, chunks in pairs for c in chunks}
    return pairs, services.embeddings.get_embeddings(services.embedder.identity, hashes)
