"""Which generator answers, from the environment.

``CITEWELL_GENERATOR``: ``extractive`` (default), ``openai`` or ``bedrock``.
OpenAI-compatible: ``CITEWELL_OPENAI_BASE_URL``, ``CITEWELL_OPENAI_MODEL``, ``CITEWELL_OPENAI_API_KEY``.
Bedrock: ``CITEWELL_BEDROCK_MODEL_ID`` and the usual AWS region and credentials (boto3's own
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` points it at another endpoint, such as the local model server).
``CITEWELL_GENERATOR_TIMEOUT`` (seconds, default 30) and ``CITEWELL_EVIDENCE_CHARS`` (default 6000).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citewell.ports import Generator
from citewell.services import Services
from citewell.settings import InvalidSetting, settings

if TYPE_CHECKING:
    from citewell.answers.generators.bedrock import BedrockGenerator
    from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator


def generator_from_env(services: Services) -> Generator:
    if settings().generator == "extractive":
        from citewell.answers.generators.extractive import ExtractiveGenerator

        return ExtractiveGenerator(services.embedder, services.metadata)
    return model_generator()


def model_generator() -> OpenAICompatibleGenerator | BedrockGenerator:
    """The configured model generator (an LLM reranker asks through it too); the extractive
    answerer is not a model."""
    found = settings()
    if found.generator == "extractive":
        raise InvalidSetting("CITEWELL_RERANKER=llm needs a model: set CITEWELL_GENERATOR to openai or bedrock")
    if found.generator == "openai":
        from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator

        return OpenAICompatibleGenerator(
            base_url=found.required("openai_base_url"), model=found.required("openai_model"),
            api_key=found.openai_api_key, timeout=found.generator_timeout,
        )
    from citewell.answers.generators.bedrock import BedrockGenerator

    return BedrockGenerator(model_id=found.required("bedrock_model_id"))


def evidence_budget() -> int:
    return settings().evidence_chars
