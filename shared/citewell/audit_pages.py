"""The audit in pages: a run is planned into pages, each one check over a bounded slice of its
items, so that no invocation reads every chunk record, cached answer or conversation at once.

``citewell audit`` runs the pages one after another in one process; on AWS the scheduled
invocation sends them to a queue that the audit function drains, several at once (each page is
independent: every finding is checked again against the records as they are when it is made).
A page runs in steps; after each step its progress is saved (:class:`~citewell.ports.records.AuditCheckpoints`,
in DynamoDB on AWS), so a page cut short by a timeout resumes after its last step done, and a
page stopped for time (the function's remaining time below :data:`STEP_MARGIN_S`) is handed
back to the queue to finish.

Page sizes keep one page well inside Lambda's 900 s and its memory at 1M chunks, 10,000
documents and 100,000 cached answers (``python -m benchmarks.aws_scale``, BENCHMARKS.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel

from citewell.audit_checks import Checks, Served
from citewell.deletion import compact
from citewell.ports import AuditCheckpoints

# Items a page holds at most, and a step (one checkpoint) of it, for the checks over many items.
PAGE_ITEMS = {"live": 250, "citations": 1000, "caches": 1000, "conversations": 250}
STEP_ITEMS = {"live": 25, "citations": 100, "caches": 100, "conversations": 25}
MESSAGE_BYTES = 200_000  # a page as one SQS message (256 KB at most), with room for the envelope
HASH_BOUNDS = [None, *"123456789abcdef", None]  # 16 ranges of the hex content hashes the embedding cache is keyed by
STEP_MARGIN_S = 120.0  # time a step may take at most (a step of the live check reads 25 documents' chunk records)

Kind = Literal["index", "live", "stuck", "uploads", "chunk_records", "objects", "citations", "caches", "conversations",
               "identities", "embeddings", "purges", "vectors", "removals", "compact"]
# The checks that read one inventory each, in the order the single pass ran them.
WHOLE: dict[Kind, Callable[[Checks], object]] = {
    "index": Checks.index, "stuck": Checks.stuck_documents, "uploads": Checks.uploads_check,
    "chunk_records": Checks.chunk_records, "objects": Checks.objects,
    "identities": Checks.identities, "purges": Checks.purges, "vectors": Checks.vectors, "removals": Checks.removals,
}

T = TypeVar("T", bound=BaseModel | tuple[str, str])


class AuditPage(BaseModel):
    """One page of a run: what a queue message carries, whole (no page reads another's state)."""

    run_id: str
    number: int
    kind: Kind
    repair: bool
    served: list[Served] = []
    keys: list[tuple[str, str]] = []
    low: str | None = None
    high: str | None = None

    def size(self) -> int:
        """Its items: the served documents or keys it holds, or 1 for a check run whole."""
        return len(self.served) if self.kind == "live" else len(self.keys) if self.kind in STEP_ITEMS else 1

    def step(self, checks: Checks, start: int, end: int) -> None:
        """Items ``start`` to ``end`` of the page."""
        if self.kind == "live":
            checks.live(self.served[start:end])
        elif self.kind == "citations":
            checks.citations(self.keys[start:end])
        elif self.kind == "caches":
            checks.caches(self.keys[start:end])
        elif self.kind == "conversations":
            checks.conversations(self.keys[start:end])
        elif self.kind == "embeddings":
            checks.embeddings(self.low, self.high)
        elif self.kind == "compact":
            for line in compact(checks.services):  # also finishes a deletion whose compaction was pending
                checks.found("pending_compaction", "", "", line)
        else:
            WHOLE[self.kind](checks)


class MemoryCheckpoints:
    """Checkpoints for a run in one process (``citewell audit``): a run cut short starts over."""

    def __init__(self) -> None:
        self.done: dict[tuple[str, int], int] = {}

    def audit_progress(self, run_id: str, page: int) -> int:
        return self.done.get((run_id, page), 0)

    def save_audit_progress(self, run_id: str, page: int, done: int) -> None:
        self.done[(run_id, page)] = done


def _packed(items: Sequence[T], limit: int) -> Iterator[list[T]]:
    """``items`` in runs of at most ``limit`` that fit a queue message."""
    page: list[T] = []
    size = 0
    for item in items:
        length = len(item.model_dump_json()) if isinstance(item, BaseModel) else len(json.dumps(item))
        if page and (len(page) == limit or size + length > MESSAGE_BYTES):
            yield page
            page, size = [], 0
        page.append(item)
        size += length + 1
    if page:
        yield page


def plan(checks: Checks, run_id: str) -> list[AuditPage]:
    """Every page of a run, in the order the single pass ran its checks. The inventories read
    here are keys and counts (documents, the index's rows per revision, cited documents, cached
    answers, conversations), never chunk records or citations."""
    services, repair = checks.services, checks.repair
    pages: list[AuditPage] = []

    def add(kind: Kind, **fields: object) -> None:
        pages.append(AuditPage(run_id=run_id, number=len(pages), kind=kind, repair=repair, **fields))  # type: ignore[arg-type]

    add("index")
    for served in _packed(checks.served(), PAGE_ITEMS["live"]):
        add("live", served=served)
    whole: tuple[Kind, ...] = ("stuck", "uploads", "chunk_records", "objects")
    for kind in whole:
        add(kind)
    for keys in _packed(sorted(services.answers.cited_documents()), PAGE_ITEMS["citations"]):
        add("citations", keys=keys)
    for keys in _packed(sorted(services.answer_cache.cache_inventory()), PAGE_ITEMS["caches"]):
        add("caches", keys=keys)
    for keys in _packed(sorted(services.conversations.conversation_keys()), PAGE_ITEMS["conversations"]):
        add("conversations", keys=keys)
    add("identities")
    for low, high in zip(HASH_BOUNDS, HASH_BOUNDS[1:], strict=False):
        add("embeddings", low=low, high=high)
    for kind in ("purges", "vectors", "removals"):
        add(kind)
    if repair:
        add("compact")
    return pages


def run_page(checks: Checks, page: AuditPage, checkpoints: AuditCheckpoints,
             time_left: Callable[[], float] | None = None) -> bool:
    """Run what is left of the page, a step at a time, saving its progress after each; False
    when it stopped for time (``time_left()`` under :data:`STEP_MARGIN_S` before a step)."""
    done, size = checkpoints.audit_progress(page.run_id, page.number), page.size()
    step = STEP_ITEMS.get(page.kind, 1)
    while done < size:
        if time_left is not None and time_left() < STEP_MARGIN_S:
            return False
        end = min(done + step, size)
        page.step(checks, done, end)
        done = end
        checkpoints.save_audit_progress(page.run_id, page.number, done)
    return True
