"""What a search answers: ranked, read-back hits and what their lanes and the expansion did."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, PrivateAttr, computed_field

from citewell.models.chunks import chunk_section_id


class LaneRanks(BaseModel):
    bm25: int | None = None
    vector: int | None = None
    expansion: int | None = None  # its best rank in a probe's list, when query expansion ran


class SearchHit(BaseModel):
    """``score`` is the fused rank score (1.1 times for an authoritative document); ``similarity``
    the vector lane's cosine, when it ranked the chunk. ``weak``: only the vector lane found it,
    at a similarity that relevant passages seldom have (:data:`citewell.search.WEAK_SIMILARITY`):
    near in meaning, and not holding the words asked for, so not evidence that they are in the
    documents."""

    rank: int
    chunk_id: str
    document_id: str
    revision: str
    title: str
    section_path: list[str]
    text: str
    score: float
    lanes: LaneRanks
    similarity: float | None = None
    weak: bool = False
    rerank: float | None = None  # the reranker's score, when one reordered the hits
    locale: str = "en"  # its document's language

    @computed_field  # type: ignore[prop-decorator]  # mypy allows no decorator above @property; pydantic's own advice
    @property
    def section_id(self) -> str:
        """Its section's stable id: ``citewell read --section`` and ``GET /documents/{id}?section=`` take it."""
        return chunk_section_id(self.chunk_id, self.revision, self.section_path)


class Probes(BaseModel):
    """What query expansion turned the question into (:mod:`citewell.expansion`): shown beside the
    hits it helped find, so a caller sees why a passage without the question's words came up."""

    lexical: list[str] = Field(default_factory=list)  # paraphrases, each run in the lexical lane
    passage: str | None = None  # the hypothetical answer passage, run in the vector lane


class SearchResult(BaseModel):
    hits: list[SearchHit]
    degraded: list[str] = Field(default_factory=list)
    expansion: Probes | None = None  # the probes searched beside the question; None: the question alone
    # The question's vector (None when the vector lane did not run): the answer that follows
    # scores its sentences against it instead of embedding the question again. Never sent.
    _query_vector: Any = PrivateAttr(default=None)
