"""The answer prompts over any model: one class for every model generator."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from citewell.answers.drafts import listener
from citewell.answers.prompt import (
    REWRITE_PROMPT,
    SYSTEM_PROMPT,
    draft_from_reply,
    rewrite_prompt,
    rewritten_from_reply,
    user_prompt,
)
from citewell.models.answers import Draft
from citewell.models.evidence import EvidenceItem


class _Model(Protocol):
    def complete(self, system: str, user: str) -> str: ...
    def stream(self, system: str, user: str, listen: Callable[[str], None]) -> str: ...


class ModelAnswers:
    """Answers and follow-up rewrites asked of a model with the answer prompts, whole or streamed to
    a draft listener: mixed into a model class of :mod:`citewell.llm`, which sends them."""

    def generate(self: _Model, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        listen = listener()
        if listen is not None:
            return draft_from_reply(self.stream(SYSTEM_PROMPT, user_prompt(question, evidence), listen))
        return draft_from_reply(self.complete(SYSTEM_PROMPT, user_prompt(question, evidence)))

    def rewrite(self: _Model, previous: Sequence[str], asked: str) -> str:
        """A follow-up made standalone by the model (see :data:`REWRITE_PROMPT`)."""
        return rewritten_from_reply(self.complete(REWRITE_PROMPT, rewrite_prompt(previous, asked)), asked)
