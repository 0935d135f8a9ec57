"""A rerank endpoint over httpx, in one of two wire formats.

``cohere``: ``POST {base}/rerank`` with ``{"model", "query", "documents", "top_n"}``, answered
with ``{"results": [{"index", "relevance_score"}, ...]}``: Cohere's Rerank API and the servers
that copy it (Jina, vLLM, llama.cpp's server, Xinference, OpenVINO Model Server, LiteLLM).
``tei``: Text Embeddings Inference's own ``POST {base}/rerank`` with ``{"query", "texts",
"truncate": true}``, answered with a list ``[{"index", "score"}, ...]`` of every text (it has no
``top_n``; a passage longer than the model reads is truncated by TEI rather than refused).
Extra fields (``document``, ``text``, ``usage``, ``meta``, ``id``) are ignored. One attempt
within the timeout: a search does not wait for retries, it falls back to the fused order.

Inside a request (:mod:`citewell.deadline`) the call gets what the request has left, keeping the
answer's reserve, at most its own timeout, and is not made with too little left. That time bounds
the whole call, not each read (:mod:`citewell.fetch.deadline` gives every
socket operation the time left): a service that trickles its reply a byte at a time would
otherwise hold a search for as long as it likes. The reply is streamed, decoded a piece at a
time when it is compressed anyway (:mod:`citewell.fetch.encodings`: httpx would inflate each read
whole, and ``gzip, gzip`` of a few KB is a gigabyte), and refused past :data:`MAX_REPLY_BYTES`,
so a reply that never ends costs that much memory, not all there is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Literal

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from citewell.deadline import time_for
from citewell.errors import FetchFailed, RerankerUnavailable
from citewell.fetch.deadline import Transport, until
from citewell.fetch.encodings import codings, decoded
from citewell.models.search import SearchHit
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
# The most a reply may hold: 1,000 candidates (the deepest CITEWELL_RERANK_DEPTH), each echoed
# back with its text as some services do (Jina, Xinference), JSON-escaped, are a few megabytes.
MAX_REPLY_BYTES = 16 * 1024 * 1024


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
    """``timeout``: seconds for the whole call, connecting to the reply's last byte."""

    def __init__(self, base_url: str, model: str = "", api_key: str | None = None, timeout: float = 10.0,
                 transport: httpx.BaseTransport | None = None, wire: WireFormat = "cohere") -> None:
        headers = {"Accept-Encoding": "identity"} | ({"Authorization": f"Bearer {api_key}"} if api_key else {})
        transport = transport or Transport(httpx.create_ssl_context(), httpx.Limits())
        self.client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport)
        self.model = model
        self.wire = wire
        self.timeout = timeout

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
        try:  # what the request has left, keeping the answer's reserve, at most the call's own timeout
            seconds = time_for(self.timeout)
        except TimeoutError as exc:
            raise RerankerUnavailable(f"the rerank service was not asked in time ({exc})") from None
        deadline = time.monotonic() + seconds
        try:
            with until(deadline):  # connect, send, headers and body: all within that time
                content = self._reply(body, deadline, seconds)
        except httpx.TimeoutException as exc:
            raise RerankerUnavailable(f"the rerank service timed out ({exc.__class__.__name__})") from None
        except httpx.HTTPError as exc:
            raise RerankerUnavailable(f"the rerank service could not be reached ({exc.__class__.__name__})") from None
        try:
            if self.wire == "tei":
                found = [(r.index, r.score) for r in _TEI_REPLY.validate_json(content)]
            else:
                found = [(r.index, r.relevance_score) for r in _Reply.model_validate_json(content).results]
        except ValidationError:
            problem = "is not a list of index and score" if self.wire == "tei" else "has no results of index and relevance_score"
            raise RerankerUnavailable(f"the rerank service reply {problem}") from None
        return checked(found, len(hits), top_n, "rerank service")

    def _reply(self, body: dict[str, object], deadline: float, seconds: float) -> bytes:
        """The reply's bytes, read no further than :data:`MAX_REPLY_BYTES` nor past ``deadline``."""
        with self.client.stream("POST", "/rerank", json=body) as response:
            if response.status_code >= 400:
                raise RerankerUnavailable(f"the rerank service answered HTTP {response.status_code}")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
                raise RerankerUnavailable(f"the rerank service's reply is {int(declared):,} bytes, over the limit of "
                                          f"{MAX_REPLY_BYTES:,}")
            content = bytearray()
            shown = "the rerank service's reply"
            try:
                for piece in decoded(response.iter_raw(), codings(response.headers.get("content-encoding", ""), shown), shown):
                    content += piece
                    if len(content) > MAX_REPLY_BYTES:
                        raise RerankerUnavailable(f"{shown} is over the limit of {MAX_REPLY_BYTES:,} bytes; the rest "
                                                  "was not read")
                    if time.monotonic() > deadline:
                        raise RerankerUnavailable(f"the rerank service timed out (its reply took over {seconds:.1f} s)")
            except FetchFailed as error:  # an encoding not read, or a body that does not decode
                raise RerankerUnavailable(error.message) from None
            return bytes(content)
