"""Removals of stored text under way or awaiting their compaction."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from citewell.leases import Lease
from citewell.models.values import utcnow


class Removal(BaseModel):
    """A removal of stored text under way or awaiting its compaction: until a compaction that
    started after it ended has finished, deleted bytes may still sit in segments and logs.
    It names no document: its own row must not become a trace of what it removed."""

    removal_id: str
    owner: Lease | None = None
    done: bool = False
    started_at: datetime = Field(default_factory=utcnow)
