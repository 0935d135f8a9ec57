"""Answers and follow-up rewrites from any OpenAI-compatible chat-completions endpoint: the
answer prompts over :class:`citewell.llm.openai_compatible.OpenAICompatibleModel`."""

from __future__ import annotations

from citewell.answers.generators.model import ModelAnswers
from citewell.llm.openai_compatible import OpenAICompatibleModel


class OpenAICompatibleGenerator(ModelAnswers, OpenAICompatibleModel):
    pass
