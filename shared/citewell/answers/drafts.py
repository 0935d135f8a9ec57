"""Where a model's draft goes while it is written: a listener set for the current thread (the
streaming server sets one per request); none, and generators ask for the whole reply at once.

The draft is never the answer: verification may reject it, a source may change before the
answer is kept (and the question is answered again), and the final event says what stands.
:func:`retract` tells the listener at once that what it heard was thrown away, so a page stops
showing it before the next draft, or the final answer, comes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

DraftListener = Callable[[str], None]
Retraction = Callable[[str], None]  # hears why the draft heard so far does not stand


@dataclass(frozen=True)
class _Listening:
    draft: DraftListener
    retract: Retraction | None


_listening: ContextVar[_Listening | None] = ContextVar("citewell_draft_listener", default=None)


def listener() -> DraftListener | None:
    found = _listening.get()
    return found.draft if found else None


def retract(reason: str) -> None:
    """The draft written so far was thrown away, for ``reason``; nothing when no one listens."""
    found = _listening.get()
    if found is not None and found.retract is not None:
        found.retract(reason)


@contextmanager
def drafts_to(listen: DraftListener, retracted: Retraction | None = None) -> Iterator[None]:
    token = _listening.set(_Listening(listen, retracted))
    try:
        yield
    finally:
        _listening.reset(token)
