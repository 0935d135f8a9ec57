"""The ports a stage or a query needs, bundled; and the embedded wiring of them under one folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from citewell.chunking import Chunker, ChunkingConfig
from citewell.ports import (
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
from citewell.settings import DEFAULT_MAX_BYTES, settings


class Records(TypedDict):
    """The record roles of :class:`Services`, each by its port."""

    documents: DocumentRecords
    uploads: UploadRecords
    chunks: ChunkRecords
    embeddings: EmbeddingCache
    answers: AnswerRecords
    conversations: ConversationRecords
    removals: Removals


def records(store: MetadataStore) -> Records:
    """Every record role served by ``store``. The adapters keep all the records in one database
    (one table on AWS) and some of their writes span roles in one transaction, so one store
    serves them all: ``Services(objects=..., **records(store), index=..., ...)`` builds the
    services, and ``replace(services, **records(other))`` puts another store in its place."""
    return Records(documents=store, uploads=store, chunks=store, embeddings=store, answers=store,
                   conversations=store, removals=store)


@dataclass
class Services:
    """The ports a stage or a query works through; each record role is held by its own port."""

    objects: ObjectStore
    documents: DocumentRecords
    uploads: UploadRecords
    chunks: ChunkRecords
    embeddings: EmbeddingCache  # cached vectors (the model that computes them is ``embedder``)
    answers: AnswerRecords
    conversations: ConversationRecords
    removals: Removals
    index: SearchIndex
    embedder: Embedder
    chunker: Chunker
    max_bytes: int = DEFAULT_MAX_BYTES
    reranker: Reranker | None = None  # None: the one CITEWELL_RERANKER configures (none: the fused order)
    expander: Completer | None = None  # expands questions; None: the one the settings name (none for extractive)
    ocr: OcrEngine | None = None  # reads scans; None: images and PDF pages without text are empty_text


def default_home() -> Path:
    """``CITEWELL_HOME`` if set, else the per-user data folder."""
    if found := settings().home:
        return found
    from platformdirs import user_data_path

    return user_data_path("citewell")


def home_folder(home: Path) -> Path:
    """``home``, created if missing; a clear error if it is a file or cannot be created."""
    from citewell.errors import HomeNotWritable, InvalidInput

    home = home.expanduser()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InvalidInput(f"the home {home} is not a folder (a file has that name or is on its path)") from None
    except PermissionError:
        raise HomeNotWritable(f"cannot create the home {home}: no permission to write in {home.parent}") from None
    return home


def open_local(home: Path | None = None, *, chunking: ChunkingConfig | None = None, existing: bool = False) -> Services:
    """Everything under ``home``: ``objects/``, ``metadata.db``, ``index.db``. With ``existing``
    (a command that reads, or changes what is there) a home nothing was ingested into is an
    error, not a new empty home: a mistyped ``--home`` would otherwise answer "no documents"
    and leave databases behind."""
    from citewell.embedders.minilm import MiniLMEmbedder
    from citewell.errors import NotFound
    from citewell.index.sqlite import SqliteSearchIndex
    from citewell.metadata.sqlite import SqliteMetadataStore
    from citewell.objects.folder import FolderObjectStore
    from citewell.ocr.rapid import embedded_engine

    home = (home or default_home()).expanduser()
    if existing and not (home / "metadata.db").exists():  # a folder in its place is named by the store
        if not any(p.exists() and not p.is_dir() for p in (home, *home.parents)):  # a file in the way: below
            raise NotFound(f"there is no citewell home at {home}: nothing was ingested there (check --home, or ingest first)")
    home = home_folder(home)
    embedder = MiniLMEmbedder()
    found = settings()
    max_bytes = found.max_bytes
    chunking = chunking or ChunkingConfig(max_tokens=found.chunk_tokens, overlap_tokens=found.chunk_overlap)
    return Services(
        objects=FolderObjectStore(home / "objects"),
        **records(SqliteMetadataStore(home / "metadata.db")),
        index=SqliteSearchIndex(home / "index.db"),
        embedder=embedder,
        chunker=Chunker(embedder.count_tokens, chunking),
        max_bytes=max_bytes,
        ocr=embedded_engine(),
    )
