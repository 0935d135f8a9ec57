"""A question asked in a conversation, as the API and the CLI ask it: the configured generator
rewrites a follow-up and answers it, the turn is kept, and a new conversation sweeps the
expired ones away (bytes and all)."""

from __future__ import annotations

from collections.abc import Sequence

from citewell.answers.config import evidence_budget, generator_from_env
from citewell.answers.service import ask
from citewell.conversations import ask_in_conversation
from citewell.deadline import FALLBACK_RESERVE_S, spare
from citewell.deletion import expire_conversations
from citewell.filters import SearchFilter
from citewell.models.answers import Answer
from citewell.models.identity import Identity
from citewell.search import LANES
from citewell.services import Services


def answer_turn(services: Services, identity: Identity, asked: str, conversation_id: str | None,
                lanes: Sequence[str] = LANES, filters: SearchFilter | None = None, mixed_locales: bool = False) -> Answer:
    generator, budget = generator_from_env(services), evidence_budget()
    answer = ask_in_conversation(
        services, identity, asked, conversation_id,
        lambda question: ask(services, identity, question, generator, budget, lanes=lanes, filters=filters,
                             mixed_locales=mixed_locales), generator,
    )
    if conversation_id is None and spare(FALLBACK_RESERVE_S):  # housekeeping never takes the request's last seconds
        try:
            expire_conversations(services)
        except TimeoutError:
            pass  # no time left in this request: the next new conversation sweeps, and a removal begun is resumed
    return answer
