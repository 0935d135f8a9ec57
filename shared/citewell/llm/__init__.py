"""Language models: the clients that an answer, a follow-up's rewrite, a rerank and a query's
expansion ask through, and the one built from the settings.

A model here is only its transport (``complete`` a system and a user message, whole or
``stream``\\ ed); the prompts are the callers'. It sits below search and answers, so the LLM
reranker and query expansion use the model the answers use without importing the answerer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from citewell.settings import InvalidSetting, settings

if TYPE_CHECKING:
    from citewell.llm.bedrock import BedrockModel
    from citewell.llm.openai_compatible import OpenAICompatibleModel

OpenAI = TypeVar("OpenAI", bound="OpenAICompatibleModel")
Bedrock = TypeVar("Bedrock", bound="BedrockModel")


def configured(openai: type[OpenAI], bedrock: type[Bedrock]) -> OpenAI | Bedrock:
    """The model ``CITEWELL_GENERATOR`` names, built as ``openai`` or ``bedrock`` (a model, or an
    answer generator over one); the extractive answerer is not a model, so it is refused."""
    found = settings()
    if found.generator == "extractive":
        raise InvalidSetting("a model is needed (CITEWELL_RERANKER=llm, query expansion): "
                             "set CITEWELL_GENERATOR to openai or bedrock")
    if found.generator == "openai":
        return openai(base_url=found.required("openai_base_url"), model=found.required("openai_model"),
                      api_key=found.openai_api_key, timeout=found.generator_timeout)
    return bedrock(model_id=found.required("bedrock_model_id"))


def model_from_settings() -> OpenAICompatibleModel | BedrockModel:
    """The configured model, for a caller that writes its own prompts."""
    from citewell.llm.bedrock import BedrockModel
    from citewell.llm.openai_compatible import OpenAICompatibleModel

    return configured(OpenAICompatibleModel, BedrockModel)
