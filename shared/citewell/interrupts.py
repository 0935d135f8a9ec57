"""Ctrl-C at a safe moment: steps that must not stop half-way hold SIGINT until they end."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def deferred(deliver: bool = True) -> Iterator[None]:
    """SIGINT received inside the block takes effect when it ends (``deliver=False``: never).

    For short steps whose halves would disagree if cut (registering an upload and moving its
    record; indexing a revision and switching to it). Only the main thread receives signals;
    elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received and deliver:
            if callable(previous):
                previous(signal.SIGINT, None)  # the default handler raises KeyboardInterrupt; an outer hold records it
            elif previous != signal.SIG_IGN:
                raise KeyboardInterrupt


def interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C an error was raised from, if any: a compiled module loading when Ctrl-C comes
    turns it into its own error (onnxruntime's "ImportError: initialization failed")."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None
