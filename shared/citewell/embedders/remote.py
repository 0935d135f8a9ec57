"""Embedders behind a network: Amazon Titan Text Embeddings v2 on Bedrock, and any
OpenAI-compatible ``/embeddings`` endpoint. Failures raise EmbedderUnavailable, so search
degrades to the lexical lane and ingestion records the failure instead of crashing."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from citewell.boto_deadline import bound_by_deadline
from citewell.deadline import MIN_CALL_S, applying, bounded, current, time_for
from citewell.errors import EmbedderUnavailable
from citewell.settings import DEFAULT_BEDROCK_EMBED_MODEL

RETRY_STATUS = {429, 500, 502, 503, 504}
TITAN_CALL_S = 60 + 60  # botocore's default read and connect timeouts: one call's own bound
THROTTLING = {"ThrottlingException", "TooManyRequestsException", "ServiceUnavailableException", "ModelNotReadyException"}


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)


class BedrockTitanEmbedder:
    """``amazon.titan-embed-text-v2:0``: one text per call, calls in parallel, throttling retried with backoff."""

    def __init__(self, model_id: str = DEFAULT_BEDROCK_EMBED_MODEL, dims: int = 1024, client: Any = None,
                 region: str | None = None, workers: int = 8, retries: int = 4, backoff: float = 0.5) -> None:
        if client is None:
            import boto3

            client = boto3.client("bedrock-runtime", region_name=region)
        # A call given up on at the deadline stops reading then too, rather than at botocore's 60 s.
        self.client, self.model_id, self.dims = bound_by_deadline(client), model_id, dims
        self.workers, self.retries, self.backoff = workers, retries, backoff
        name, _, version = model_id.rpartition(":")
        self.identity = f"{name}@{version}:{dims}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        deadline = current()  # each call, in its thread, keeps the request's deadline

        def one(text: str) -> list[float]:
            with applying(deadline):
                return self._one(text)

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            rows = list(pool.map(one, texts))
        return _unit(np.array(rows, dtype=np.float32))

    def _one(self, text: str) -> list[float]:
        from botocore.exceptions import BotoCoreError, ClientError

        body = json.dumps({"inputText": text, "dimensions": self.dims, "normalize": True})
        for attempt in range(self.retries + 1):
            try:  # within what the request has left, keeping time for the answer
                vector = bounded(lambda: json.loads(self.client.invoke_model(
                    modelId=self.model_id, body=body, contentType="application/json", accept="application/json",
                )["body"].read())["embedding"], TITAN_CALL_S)
                if len(vector) != self.dims:
                    raise EmbedderUnavailable(f"Bedrock returned {len(vector)} dimensions, expected {self.dims}")
                return vector
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "ClientError")
                if code not in THROTTLING or attempt == self.retries:
                    raise EmbedderUnavailable(f"Bedrock embedding failed ({code})") from exc
            except BotoCoreError as exc:
                raise EmbedderUnavailable(f"Bedrock could not be reached ({exc.__class__.__name__})") from exc
            except TimeoutError as exc:
                raise EmbedderUnavailable(f"Bedrock gave no embedding in time ({exc})") from None
            except (KeyError, ValueError, TypeError) as exc:
                raise EmbedderUnavailable("the Bedrock embedding reply is malformed") from exc
            pause, deadline = self.backoff * 2**attempt, current()
            if deadline is not None and deadline.left() - deadline.reserve < pause:
                raise EmbedderUnavailable(f"Bedrock throttled the embedding and the request has no time for a retry ({code})")
            time.sleep(pause)
        raise AssertionError("unreachable")


class OpenAICompatibleEmbedder:
    """``POST {base_url}/embeddings`` in batches; 429 and 5xx retried with backoff. Inside a
    request (:mod:`citewell.deadline`) each attempt's timeout, connect and read, is what the request
    has left (keeping the answer's reserve), at most ``timeout``; an attempt or a pause that would
    not fit is not made, and the search keeps its lexical lane."""

    def __init__(self, base_url: str, model: str, dims: int, version: str = "1", api_key: str | None = None,
                 batch_size: int = 64, timeout: float = 30.0, retries: int = 3, backoff: float = 0.5,
                 transport: Any = None) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport)
        self.timeout = timeout
        self.model, self.dims, self.batch_size = model, dims, batch_size
        self.retries, self.backoff = retries, backoff
        self.identity = f"{model}@{version}:{dims}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for offset in range(0, len(texts), self.batch_size):
            rows += self._batch(list(texts[offset : offset + self.batch_size]))
        return _unit(np.array(rows, dtype=np.float32).reshape(len(texts), self.dims))

    def _batch(self, texts: list[str]) -> list[list[float]]:
        import httpx

        failure = "no attempt"
        for attempt in range(self.retries + 1):
            try:
                seconds = time_for(self.timeout)
            except TimeoutError as exc:
                after = f" after {failure}" if attempt else ""
                raise EmbedderUnavailable(f"the embedding service was not asked in time ({exc}){after}") from None
            try:
                response = self.client.post("/embeddings", json={"model": self.model, "input": texts}, timeout=seconds)
            except httpx.TimeoutException as exc:
                failure = f"the embedding service gave no reply in time ({exc.__class__.__name__} after {seconds:.1f} s)"
            except httpx.HTTPError as exc:
                failure = f"the embedding service could not be reached ({exc.__class__.__name__})"
            else:
                if response.status_code < 400:
                    return self._parse(response, len(texts))
                failure = f"the embedding service answered HTTP {response.status_code}"
                if response.status_code not in RETRY_STATUS:
                    break
            if attempt < self.retries:
                pause, deadline = self.backoff * 2**attempt, current()
                if deadline is not None and deadline.left() - deadline.reserve < pause + MIN_CALL_S:
                    break  # the retry would not fit in what the request has left
                time.sleep(pause)
        raise EmbedderUnavailable(failure)

    def _parse(self, response: Any, expected: int) -> list[list[float]]:
        try:
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            vectors = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderUnavailable("the embedding service reply is malformed") from exc
        if len(vectors) != expected or any(len(v) != self.dims for v in vectors):
            raise EmbedderUnavailable(f"the embedding service returned {len(vectors)} vectors of the wrong shape")
        return vectors
