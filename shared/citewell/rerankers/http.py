"""A rerank endpoint over httpx, in one of two wire formats.

``cohere``: ``POST {base}/rerank`` with ``{"model", "query", "documents", "top_n"}``, answered
with ``{"results": [{"index", "relevance_score"}, ...]}``: Cohere's Rerank API and the servers
that copy it (Jina, vLLM, llama.cpp's server, Xinference, OpenVINO Model Server, LiteLLM).
``tei``: Text Embeddings Inference's own ``POST {base}/rerank`` with ``{"query", "texts",
"truncate": true}``, answered with a list ``[{"index", "score"}, ...]`` of every text (it has no
``top_n``; a passage longer than the model reads is truncated by TEI rather than refused).
Extra fields (``document``, ``text``, ``usage``, ``meta``, ``id``) are ignored. One attempt
within the timeout: a search does not wait for retries, it falls back to the fused order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from citewell.errors import RerankerUnavailable
from citewell.models import SearchHit
from citewell.ports import Reranked


class _Result(BaseModel):
    index: int
    relevance_score: float


class _Reply(BaseModel):
    results: list[_Result]


class _Rank(BaseModel):
    """One text of TEI's reply (its ``Rank`` schema)."""

    index: int
    score: float


_TEI_REPLY = TypeAdapter(list[_Rank])
WireFormat = Literal["cohere", "tei"]


def checked(found: Sequence[tuple[int, float]], candidates: int, top_n: int, service: str) -> list[Reranked]:
    """A service's ``(index, score)`` pairs, best first, refused unless every index names one
    candidate once and every score is a number."""
    indices = [index for index, _ in found]
    if any(not 0 <= i < candidates for i in indices) or len(set(indices)) != len(indices):
        raise RerankerUnavailable(f"the {service} reply names candidates that were not sent, or one twice")
    if any(not math.isfinite(score) for _, score in found):
        raise RerankerUnavailable(f"the {service} reply has a score that is not a number")
    if len(found) < min(top_n, candidates):
        raise RerankerUnavailable(f"the {service} reply ranks {len(found)} of the {min(top_n, candidates)} candidates asked for")
    ordered = sorted(found, key=lambda pair: (-pair[1], pair[0]))  # by score, whatever order the list came in
    return [Reranked(index=i, score=float(s)) for i, s in ordered[:top_n]]


class HttpReranker:
    def __init__(self, base_url: str, model: str = "", api_key: str | None = None, timeout: float = 10.0,
                 transport: httpx.BaseTransport | None = None, wire: WireFormat = "cohere") -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport)
        self.model = model
        self.wire = wire

    @property
    def name(self) -> str:
        return f"http:{self.model or self.client.base_url}"

    def rerank(self, question: str, hits: Sequence[SearchHit], top_n: int) -> list[Reranked]:
        texts = [h.text for h in hits]
        body: dict[str, object] = (
            {"query": question, "texts": texts, "truncate": True} if self.wire == "tei"
            else {"query": question, "documents": texts, "top_n": top_n}
        )
        if self.model and self.wire == "cohere":
            body["model"] = self.model
        try:
            response = self.client.post("/rerank", json=body)
        except httpx.TimeoutException as exc:
            raise RerankerUnavailable(f"the rerank service timed out ({exc.__class__.__name__})") from None
        except httpx.HTTPError as exc:
            raise RerankerUnavailable(f"the rerank service could not be reached ({exc.__class__.__name__})") from None
        if response.status_code >= 400:
            raise RerankerUnavailable(f"the rerank service answered HTTP {response.status_code}")
        try:
            if self.wire == "tei":
                found = [(r.index, r.score) for r in _TEI_REPLY.validate_json(response.content)]
            else:
                found = [(r.index, r.relevance_score) for r in _Reply.model_validate_json(response.content).results]
        except ValidationError:
            problem = "is not a list of index and score" if self.wire == "tei" else "has no results of index and relevance_score"
            raise RerankerUnavailable(f"the rerank service reply {problem}") from None
        return checked(found, len(hits), top_n, "rerank service")
