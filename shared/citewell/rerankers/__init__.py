"""Which reranker reorders the read-back hits, from the environment.

``CITEWELL_RERANKER``: ``none`` (default: the fused order), ``http`` (a ``/rerank`` endpoint:
``CITEWELL_RERANK_URL``, ``CITEWELL_RERANK_MODEL``, ``CITEWELL_RERANK_API_KEY``), ``bedrock``
(``CITEWELL_BEDROCK_RERANK_MODEL_ARN``) or ``llm`` (the configured ``CITEWELL_GENERATOR``, which
must be a model). ``CITEWELL_RERANK_DEPTH`` (default 30): how many read-back hits are reranked;
``CITEWELL_RERANK_TIMEOUT`` (seconds, default 10).
"""

from __future__ import annotations

import functools
import os

from citewell.errors import InvalidInput
from citewell.ports import Reranker

DEFAULT_DEPTH = 30
ENV = ("CITEWELL_RERANKER", "CITEWELL_RERANK_URL", "CITEWELL_RERANK_MODEL", "CITEWELL_RERANK_API_KEY",
       "CITEWELL_BEDROCK_RERANK_MODEL_ARN", "CITEWELL_RERANK_TIMEOUT", "CITEWELL_GENERATOR", "CITEWELL_OPENAI_BASE_URL",
       "CITEWELL_OPENAI_MODEL", "CITEWELL_OPENAI_API_KEY", "CITEWELL_BEDROCK_MODEL_ID", "CITEWELL_GENERATOR_TIMEOUT")


def rerank_depth() -> int:
    value = os.environ.get("CITEWELL_RERANK_DEPTH", str(DEFAULT_DEPTH)).strip()
    if not value.isdigit() or not 1 <= int(value) <= 1000:
        raise InvalidInput(f"CITEWELL_RERANK_DEPTH must be a whole number from 1 to 1000, not {value!r}")
    return int(value)


def reranker_from_env() -> Reranker | None:
    """The configured reranker (None: the fused order), built once per configuration."""
    return _built(tuple(os.environ.get(name, "") for name in ENV))


@functools.lru_cache(maxsize=4)
def _built(settings: tuple[str, ...]) -> Reranker | None:
    values = dict(zip(ENV, settings))
    kind = values["CITEWELL_RERANKER"].strip().lower() or "none"
    timeout = float(values["CITEWELL_RERANK_TIMEOUT"] or 10)
    if kind == "none":
        return None
    if kind == "http":
        from citewell.rerankers.http import HttpReranker

        if not values["CITEWELL_RERANK_URL"].strip():
            raise InvalidInput("CITEWELL_RERANK_URL must be set for CITEWELL_RERANKER=http")
        return HttpReranker(values["CITEWELL_RERANK_URL"].strip(), values["CITEWELL_RERANK_MODEL"].strip(),
                            values["CITEWELL_RERANK_API_KEY"] or None, timeout)
    if kind == "bedrock":
        from citewell.rerankers.bedrock import BedrockReranker

        if not values["CITEWELL_BEDROCK_RERANK_MODEL_ARN"].strip():
            raise InvalidInput("CITEWELL_BEDROCK_RERANK_MODEL_ARN must be set for CITEWELL_RERANKER=bedrock")
        return BedrockReranker(values["CITEWELL_BEDROCK_RERANK_MODEL_ARN"].strip(), timeout=timeout)
    if kind == "llm":
        from citewell.answers.config import model_generator
        from citewell.rerankers.llm import LlmReranker

        return LlmReranker(model_generator())
    raise InvalidInput(f"CITEWELL_RERANKER must be none, http, bedrock or llm, not {kind!r}")
