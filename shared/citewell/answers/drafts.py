"""Where a model's draft goes while it is written: a listener set for the current thread (the
streaming server sets one per request); none, and generators ask for the whole reply at once.

The draft is never the answer: verification may reject it, and the final event says what stands."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

DraftListener = Callable[[str], None]
_listener: ContextVar[DraftListener | None] = ContextVar("citewell_draft_listener", default=None)


def listener() -> DraftListener | None:
    return _listener.get()


@contextmanager
def drafts_to(listen: DraftListener) -> Iterator[None]:
    token = _listener.set(listen)
    try:
        yield
    finally:
        _listener.reset(token)
