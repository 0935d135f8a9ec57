"""Conversations: an identity's thread of turns, and the feedback given on each."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from citewell.models.identity import Identity
from citewell.models.values import utcnow

MAX_COMMENT_CHARS = 2000


class Feedback(BaseModel):
    """What the asker said of an answer: kept on the turn that gave it to them, withdrawn with it."""

    helpful: bool
    comment: str | None = Field(default=None, max_length=MAX_COMMENT_CHARS)
    at: datetime = Field(default_factory=utcnow)


class Turn(BaseModel):
    """One question of a conversation. ``asked`` is what the caller typed, ``question`` the
    standalone form it was answered as; both go (``withdrawn``) when the answer is withdrawn."""

    seq: int
    answer_id: str
    asked: str
    question: str
    at: datetime = Field(default_factory=utcnow)
    feedback: Feedback | None = None
    withdrawn: bool = False


class Conversation(BaseModel):
    """A thread of turns owned by one identity: tenant, subject and roles, exactly.

    Its turns are stored each on its own (a long conversation never outgrows one record, and an
    ask writes one turn, not all), so ``turns`` holds the turns read with it, in ``seq`` order:
    all of them, the latest few, or those a lookup asked for (see
    :class:`~citewell.ports.ConversationRecords`). ``turn_count`` is how many it has; the next is
    ``turn_count + 1``."""

    conversation_id: str
    tenant: str
    subject: str
    roles: list[str]
    turns: list[Turn] = Field(default_factory=list)
    turn_count: int = 0
    version: int = 0  # compare-and-set: a save succeeds only over the version it read
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    def expired(self, days: float, now: datetime | None = None) -> bool:
        """Past ``days`` since its last question."""
        return self.updated_at < (now or utcnow()) - timedelta(days=days)

    def owned_by(self, identity: Identity) -> bool:
        return (not identity.is_empty and identity.tenant == self.tenant and identity.subject == self.subject
                and sorted(identity.roles) == self.roles)


def stored_head(record: str) -> tuple[Conversation, list[Turn] | None]:
    """A stored conversation record read: its head (without turns), and the turns it holds when
    it was written before turns were stored on their own (None for a head). Such a record is
    read as it is and its turns moved out at its next write."""
    conversation = Conversation.model_validate_json(record)
    if "turn_count" in json.loads(record):
        return conversation, None
    turns = conversation.turns
    return conversation.model_copy(update={"turns": [], "turn_count": max((t.seq for t in turns), default=0)}), turns


def head_json(conversation: Conversation) -> str:
    """The record a head is stored as: everything but its turns."""
    return conversation.model_dump_json(exclude={"turns"})


def latest(turns: list[Turn], last: int | None, before: int | None = None) -> list[Turn]:
    """The last ``last`` of ``turns`` (all of them for None), of those before seq ``before`` when given."""
    if before is not None:
        turns = [t for t in turns if t.seq < before]
    return turns if last is None else turns[max(0, len(turns) - last):] if last > 0 else []
