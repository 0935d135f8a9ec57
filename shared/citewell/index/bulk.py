"""OpenSearch ``_bulk`` requests that ride out a busy domain.

A domain under write load answers a bulk request with 429 as a whole, or, more often, with 200
and a 429 on some of its items (``es_rejected_execution_exception``: a shard's write queue was
full); the other items are written. So a request's rejected rows, and only those, are sent again
after a capped exponential backoff with full jitter (many functions backing off together must not
come back together), up to :attr:`BulkRetry.attempts` sends of a row. Rows still refused then fail
the write with :class:`~citewell.errors.IndexOverloaded`: the stage's message goes back to its
queue, which delivers it again later, and nothing is switched to a revision with rows missing.
Any other refusal (a mapping error, a 400) is not retried: it fails the write at once.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from citewell.errors import IndexOverloaded, RetrievalUnavailable

BULK_ROWS = 500  # rows a _bulk request carries (opensearch-py's default): ~10 MB of JSON at 1,024 dimensions
TOO_MANY = 429


@dataclass(frozen=True)
class BulkRetry:
    """How a bulk request's rejected rows are sent again: at most ``attempts`` sends of a row, the
    wait before send ``n`` (from 1) drawn uniformly from ``[0, min(cap_s, base_s * 2**(n - 1))]``.
    The defaults wait at most 15.5 s over a request, well inside the publish function's 300 s."""

    attempts: int = 6
    base_s: float = 0.5
    cap_s: float = 8.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    jitter: Callable[[], float] = field(default=random.random, compare=False)

    def wait(self, attempt: int) -> float:
        """The pause before send ``attempt`` (1 is the first resend)."""
        return self.jitter() * min(self.cap_s, self.base_s * 2 ** (attempt - 1))


Row = tuple[str, dict[str, Any]]  # a row's _id and its source


def _lines(row_id: str, source: dict[str, Any]) -> str:
    """A row's action and source, as the request carries them (no index named: see send_rows)."""
    dumps = json.dumps
    return f"{dumps({'index': {'_id': row_id}})}\n{dumps(source, ensure_ascii=False, separators=(',', ':'))}\n"


def _item_error(row_id: str, status: Any, error: Any) -> str:
    """One refused row as its ``_id``, status and reason, never its source (its text and vector
    must reach no log or trace)."""
    if isinstance(error, dict):
        error = f"{error.get('type')}: {error.get('reason')}"
    return f"index {row_id!r}: {status} {str(error)[:300]}"


def _send(client: Any, target: str, pending: list[tuple[str, str]]) -> list[tuple[int, int | str, str]]:
    """One request of ``pending`` rows (``(_id, lines)``); returns the refused ones as
    ``(position in pending, status, error)``."""
    from opensearchpy.exceptions import TransportError

    try:
        reply = client.bulk(body="".join(lines for _, lines in pending), index=target)
    except TransportError as error:  # refused as a whole (or not answered): every row is refused
        status = error.status_code if isinstance(error.status_code, int) else "N/A"
        reason = f"{type(error).__name__}: {getattr(error, 'error', '')}"
        return [(n, status, _item_error(row_id, status, reason)) for n, (row_id, _) in enumerate(pending)]
    if not reply.get("errors"):
        return []
    refused: list[tuple[int, int | str, str]] = []
    for n, item in enumerate(reply["items"]):
        ((_, info),) = item.items()
        status = int(info.get("status", 0))
        if status >= 300:
            refused.append((n, status, _item_error(pending[n][0], status, info.get("error"))))
    return refused


def send_rows(client: Any, target: str, rows: Iterable[Row], retry: BulkRetry) -> int:
    """``rows`` sent to ``target``'s ``_bulk``, ``BULK_ROWS`` a request, each request's lines built
    as it is sent, so memory holds one request whatever the number of rows. No action names an
    index: the domain refuses one (``rest.action.multi.allow_explicit_index: false``), so a role's
    index paths hold. No request refreshes. Returns how many rows were written; raises
    :class:`~citewell.errors.IndexOverloaded` when rows were still refused as too many after
    ``retry.attempts`` sends, :class:`~citewell.errors.RetrievalUnavailable` at once for any other refusal."""
    written = 0
    iterator = iter(rows)
    while pending := [(row_id, _lines(row_id, source)) for row_id, source in islice(iterator, BULK_ROWS)]:
        for attempt in range(retry.attempts):
            if attempt:
                retry.sleep(retry.wait(attempt))
            refused = _send(client, target, pending)
            written += len(pending) - len(refused)
            other = [error for _, status, error in refused if status != TOO_MANY]
            if other:  # sending it again would not help
                raise RetrievalUnavailable(
                    f"{len(refused)} of {written + len(refused)} chunks were not indexed; first: {other[0]}")
            if not refused:
                break
            pending = [pending[n] for n, _, _ in refused]
        else:
            raise IndexOverloaded(f"{len(pending)} of {written + len(pending)} chunks were not indexed: the domain refused "
                                  f"them as too many requests {retry.attempts} times; first: {refused[0][2]}")
    return written
