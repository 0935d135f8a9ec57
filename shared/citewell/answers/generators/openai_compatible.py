"""Answers and follow-up rewrites from any OpenAI-compatible chat-completions endpoint: the
answer prompts over :class:`citewell.llm.openai_compatible.OpenAICompatibleModel`."""

from __future__ import annotations

from collections.abc import Sequence

from citewell.answers.drafts import listener
from citewell.answers.prompt import (
    REWRITE_PROMPT,
    SYSTEM_PROMPT,
    draft_from_reply,
    rewrite_prompt,
    rewritten_from_reply,
    user_prompt,
)
from citewell.llm.openai_compatible import OpenAICompatibleModel
from citewell.models import Draft, EvidenceItem


class OpenAICompatibleGenerator(OpenAICompatibleModel):
    def generate(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        listen = listener()
        if listen is not None:
            return draft_from_reply(self.stream(SYSTEM_PROMPT, user_prompt(question, evidence), listen))
        return draft_from_reply(self.complete(SYSTEM_PROMPT, user_prompt(question, evidence)))

    def rewrite(self, previous: Sequence[str], asked: str) -> str:
        """A follow-up made standalone by the model (see :data:`REWRITE_PROMPT`)."""
        return rewritten_from_reply(self.complete(REWRITE_PROMPT, rewrite_prompt(previous, asked)), asked)
