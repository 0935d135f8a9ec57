"""Shared fixtures: real local stores in a temporary folder, one real embedding model per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from citewell.chunking import Chunker
from citewell.embedders.minilm import MiniLMEmbedder
from citewell.local.index import SqliteSearchIndex
from citewell.local.metadata import SqliteMetadataStore
from citewell.local.objects import FolderObjectStore
from citewell.ports import Embedder
from citewell.services import Services


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def make_services(home: Path, model: MiniLMEmbedder, embedder: Embedder | None = None) -> Services:
    """Real stores under ``home``; chunks are counted in ``model``'s tokens, vectors come from ``embedder``."""
    return Services(
        objects=FolderObjectStore(home / "objects"),
        metadata=SqliteMetadataStore(home / "metadata.db"),
        index=SqliteSearchIndex(home / "index.db"),
        embedder=embedder or model,
        chunker=Chunker(model.count_tokens),
    )


@pytest.fixture
def services(tmp_path: Path, embedder: MiniLMEmbedder) -> Services:
    return make_services(tmp_path, embedder)
