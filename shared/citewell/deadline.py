"""One deadline per request, shared by every model call it makes.

API Gateway gives a request 30 s whatever its Lambda does, and a ``/query`` may call a model four
times (the follow-up rewrite, the question's embedding, the rerank, the answer), each with a limit
of its own that alone may take most of it. So ``/query`` sets one :class:`Deadline` (28 s, or less
when the invocation has less left) and each call takes what is left of it, through
:func:`bounded`: a call with too little left is not made, and one that runs out is given up on,
so its stage degrades (the rules' rewrite, the lexical lane, the fused order, the extractive
answer) and the request still answers in time. The stores the answer cannot be made without
(DynamoDB, OpenSearch) take what is left through :func:`store_time`, the reserve included (it is
kept for them), and a store that gives no reply in it ends the request with a 503 before the
deadline. Without a deadline (ingestion, the CLI) a call has its own limit only.

The deadline travels in a context variable, set once where the request starts
(:func:`applying`), so the stages between need not carry it.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

REQUEST_SECONDS = 28.0  # API Gateway's 30 s, less the reply's way back through it
INVOCATION_MARGIN_S = 1.0  # what a Lambda invocation keeps after the deadline to send its reply
MIN_CALL_S = 0.5  # a call given less is not made: it could not finish
FALLBACK_RESERVE_S = 4.0  # what a model's answer leaves to the extractive one that replaces it
REPLY_S = 0.5  # what a store's call leaves the reply that follows it (an answer's last steps, or its 503)

T = TypeVar("T")
_current: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("citewell_deadline", default=None)
# Calls waited on with a timeout run here; one given up on ends with its own client's limit.
_calls = ThreadPoolExecutor(max_workers=16, thread_name_prefix="citewell-bounded")


@dataclass(frozen=True)
class Deadline:
    """When a request must have its answer, on the monotonic clock, and what each call leaves of
    it for the extractive answer that replaces a model's (none once that answer is being made)."""

    at: float
    reserve: float = FALLBACK_RESERVE_S

    @classmethod
    def after(cls, seconds: float, reserve: float = FALLBACK_RESERVE_S) -> Deadline:
        return cls(time.monotonic() + seconds, reserve)

    @classmethod
    def for_invocation(cls, context: Any, seconds: float = REQUEST_SECONDS) -> Deadline:
        """``seconds`` from now, or less when the Lambda invocation ``context`` has less left."""
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if callable(remaining):
            seconds = min(seconds, remaining() / 1000 - INVOCATION_MARGIN_S)
        return cls.after(max(0.0, seconds))

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def budget(self, limit: float) -> float:
        """What a call of at most ``limit`` seconds may take now, keeping the reserve."""
        return max(0.0, min(limit, self.left() - self.reserve))


def current() -> Deadline | None:
    """The deadline of the request being answered; None outside one."""
    return _current.get()


@contextmanager
def last_resort() -> Iterator[Deadline | None]:
    """The block is the answer that replaces a model's: its calls may spend the reserve."""
    deadline = current()
    with applying(replace(deadline, reserve=0.0) if deadline is not None else None) as spent:
        yield spent


@contextmanager
def applying(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Every :func:`bounded` call in the block takes what is left of ``deadline`` (None: none has one)."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


def time_for(limit: float) -> float:
    """The seconds a call of at most ``limit`` may take now (``limit`` outside a request);
    TimeoutError when less than :data:`MIN_CALL_S` is left."""
    deadline = current()
    if deadline is None:
        return limit
    seconds = deadline.budget(limit)
    if seconds < MIN_CALL_S:
        kept = f", {deadline.reserve:.0f} s of it kept for the extractive answer" if deadline.reserve else ""
        raise TimeoutError(f"not made: {deadline.left():.1f} s left of the request{kept}")
    return seconds


def store_time(limit: float, keep: float = REPLY_S) -> float:
    """The seconds a call to a store the answer needs (DynamoDB, OpenSearch) may take now: what is
    left of the request less ``keep``, at most ``limit`` (``limit`` outside a request). The reserve
    is not kept from it: the reserve is what the optional model calls leave for these and for the
    extractive answer, which cannot be made without them. TimeoutError when less than
    :data:`MIN_CALL_S` is left."""
    deadline = current()
    if deadline is None:
        return limit
    seconds = min(limit, deadline.left() - keep)
    if seconds < MIN_CALL_S:
        raise TimeoutError(f"not made: {deadline.left():.1f} s left of the request")
    return seconds


def spare(seconds: float) -> bool:
    """Whether more than ``seconds`` is left of the request (always, outside one): what work the
    answer does not need (housekeeping) asks before it starts."""
    deadline = current()
    return deadline is None or deadline.left() > seconds


def bounded(call: Callable[[], T], limit: float) -> T:
    """``call``, given what is left of the request's deadline (at most ``limit``, keeping the
    reserve); TimeoutError when too little is left to start it or it runs out. Outside a
    request it runs as it is, under its own client's limits."""
    if current() is None:
        return call()
    seconds = time_for(limit)
    future = _calls.submit(contextvars.copy_context().run, call)
    try:
        return future.result(timeout=seconds)
    except TimeoutError:
        if future.done():  # the call's own timeout, raised as it is
            raise
        future.cancel()
        raise TimeoutError(f"no reply in the {seconds:.1f} s the request had left") from None
