"""Conversations: an identity's thread of turns, and the feedback given on each."""

from __future__ import annotations

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
    """A thread of turns owned by one identity: tenant, subject and roles, exactly."""

    conversation_id: str
    tenant: str
    subject: str
    roles: list[str]
    turns: list[Turn] = Field(default_factory=list)
    version: int = 0  # compare-and-set: a save succeeds only over the version it read
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    def expired(self, days: float, now: datetime | None = None) -> bool:
        """Past ``days`` since its last question."""
        return self.updated_at < (now or utcnow()) - timedelta(days=days)

    def owned_by(self, identity: Identity) -> bool:
        return (not identity.is_empty and identity.tenant == self.tenant and identity.subject == self.subject
                and sorted(identity.roles) == self.roles)
