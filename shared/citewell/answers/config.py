"""Which generator answers, from the environment.

``CITEWELL_GENERATOR``: ``extractive`` (default), ``openai`` or ``bedrock``.
OpenAI-compatible: ``CITEWELL_OPENAI_BASE_URL``, ``CITEWELL_OPENAI_MODEL``, ``CITEWELL_OPENAI_API_KEY``.
Bedrock: ``CITEWELL_BEDROCK_MODEL_ID`` and the usual AWS region and credentials (boto3's own
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` points it at another endpoint, such as the local model server).
``CITEWELL_GENERATOR_TIMEOUT`` (seconds, default 30) and ``CITEWELL_EVIDENCE_CHARS`` (default 6000).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from citewell.answers.evidence import DEFAULT_BUDGET_CHARS
from citewell.errors import InvalidInput
from citewell.ports import Generator
from citewell.services import Services

if TYPE_CHECKING:
    from citewell.answers.generators.bedrock import BedrockGenerator
    from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator


def _required(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise InvalidInput(f"{name} must be set for this generator")
    return value


def generator_from_env(services: Services) -> Generator:
    if os.environ.get("CITEWELL_GENERATOR", "extractive").strip().lower() == "extractive":
        from citewell.answers.generators.extractive import ExtractiveGenerator

        return ExtractiveGenerator(services.embedder, services.metadata)
    return model_generator()


def model_generator() -> OpenAICompatibleGenerator | BedrockGenerator:
    """The configured model generator (an LLM reranker asks through it too); the extractive
    answerer is not a model."""
    kind = os.environ.get("CITEWELL_GENERATOR", "extractive").strip().lower()
    timeout = float(os.environ.get("CITEWELL_GENERATOR_TIMEOUT", "30"))
    if kind == "extractive":
        raise InvalidInput("this needs a model: set CITEWELL_GENERATOR to openai or bedrock")
    if kind == "openai":
        from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator

        return OpenAICompatibleGenerator(
            base_url=_required("CITEWELL_OPENAI_BASE_URL"), model=_required("CITEWELL_OPENAI_MODEL"),
            api_key=os.environ.get("CITEWELL_OPENAI_API_KEY") or None, timeout=timeout,
        )
    if kind == "bedrock":
        from citewell.answers.generators.bedrock import BedrockGenerator

        return BedrockGenerator(model_id=_required("CITEWELL_BEDROCK_MODEL_ID"))
    raise InvalidInput(f"CITEWELL_GENERATOR must be extractive, openai or bedrock, not {kind!r}")


def evidence_budget() -> int:
    return int(os.environ.get("CITEWELL_EVIDENCE_CHARS", DEFAULT_BUDGET_CHARS))
