"""Which reranker reorders the read-back hits, from the settings (``CITEWELL_RERANKER`` and the
variables beside it in :mod:`citewell.settings`; what each does is in docs/configuration.md)."""

from __future__ import annotations

import functools

from citewell.ports import Reranker
from citewell.settings import Settings, settings


def rerank_depth() -> int:
    return settings().rerank_depth


def reranker_from_env() -> Reranker | None:
    """The configured reranker (None: the fused order), built once per configuration."""
    return _built(settings())


@functools.lru_cache(maxsize=4)
def _built(found: Settings) -> Reranker | None:
    if found.reranker == "none":
        return None
    if found.reranker in ("http", "tei"):
        from citewell.rerankers.http import HttpReranker

        return HttpReranker(found.required("rerank_url"), found.rerank_model or "", found.rerank_api_key, found.rerank_timeout,
                            wire="tei" if found.reranker == "tei" else "cohere")
    if found.reranker == "bedrock":
        from citewell.rerankers.bedrock import BedrockReranker

        return BedrockReranker(found.required("bedrock_rerank_model_arn"), timeout=found.rerank_timeout)
    from citewell.llm import model_from_settings
    from citewell.rerankers.llm import LlmReranker

    return LlmReranker(model_from_settings())
