"""Which generator answers, from the environment.

``CITEWELL_GENERATOR``: ``extractive`` (default), ``openai`` or ``bedrock``.
OpenAI-compatible: ``CITEWELL_OPENAI_BASE_URL``, ``CITEWELL_OPENAI_MODEL``, ``CITEWELL_OPENAI_API_KEY``.
Bedrock: ``CITEWELL_BEDROCK_MODEL_ID`` and the usual AWS region and credentials (boto3's own
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` points it at another endpoint, such as the local model server).
``CITEWELL_GENERATOR_TIMEOUT`` (seconds, default 30) and ``CITEWELL_EVIDENCE_CHARS`` (default 6000).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citewell.llm import configured
from citewell.ports import Generator
from citewell.services import Services
from citewell.settings import settings

if TYPE_CHECKING:
    from citewell.answers.generators.bedrock import BedrockGenerator
    from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator


def generator_from_env(services: Services) -> Generator:
    if settings().generator == "extractive":
        from citewell.answers.extractive.generator import ExtractiveGenerator

        return ExtractiveGenerator(services.embedder, services.embeddings)
    return model_generator()


def model_generator() -> OpenAICompatibleGenerator | BedrockGenerator:
    """The configured model answering (the extractive answerer is not a model)."""
    from citewell.answers.generators.bedrock import BedrockGenerator
    from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator

    return configured(OpenAICompatibleGenerator, BedrockGenerator)


def evidence_budget() -> int:
    return settings().evidence_chars
