"""The model and engine ports: embedders, generators, rerankers, completers, OCR, token counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from citewell.models.answers import Draft
from citewell.models.evidence import EvidenceItem
from citewell.models.search import SearchHit
from citewell.ocr import OcrPage, ScanLimits


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


@runtime_checkable
class DocumentOcr(OcrEngine, Protocol):
    """An engine that reads a whole PDF (or multi-page TIFF) where it is stored, in one job off the
    stage's clock (Amazon Textract's asynchronous text detection), instead of page by page. A TIFF
    comes through ``read``, which takes that route itself. ``read_document(pages)`` gives
    every page of the file, in order, once the job has finished, and keeps them, so a stage run again
    pays for nothing twice; until then it starts the job (once) and raises
    :class:`~citewell.errors.OcrPending`. ``limits.pages`` caps the whole file: the job reads
    every page of it."""

    def read_document(self, pages: int) -> list[OcrPage]: ...


class TokenCounter(Protocol):
    """Counts tokens the way the embedding model will, so chunk budgets are real."""

    def __call__(self, texts: Sequence[str]) -> list[int]: ...
