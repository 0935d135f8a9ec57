"""From fused hits to evidence: read back, stitch neighbours, collapse near-duplicates, fit a budget.

Evidence text always comes from the MetadataStore's chunk records of the active revision,
never from the index's copy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citewell.models.chunks import Chunk
from citewell.models.documents import Document
from citewell.models.evidence import EvidenceItem
from citewell.models.identity import Identity
from citewell.models.search import SearchHit
from citewell.reads import stitched_text
from citewell.services import Services
from citewell.settings import DEFAULT_BUDGET_CHARS

MAX_CANDIDATES = 8
STITCH_STEPS = 3  # how many following chunks a running list may bring
SHINGLE = 5
DUPLICATE_CONTAINMENT = 0.8
_WORDS = re.compile(r"\w+")


@dataclass
class _Group:
    document: Document
    chunks: list[Chunk]
    rank: int


def _next_id(chunk: Chunk) -> str:
    return Chunk.make_id(chunk.document_id, chunk.section_index, chunk.index + 1)


def read_back(services: Services, identity: Identity, hits: Sequence[SearchHit]) -> list[tuple[Document, Chunk, int]]:
    """Current, visible chunk records for the hits, in hit order. Anything else is dropped."""
    if identity.is_empty:
        return []
    documents = services.documents.get_documents(identity.tenant, {h.document_id for h in hits})
    records = services.chunks.get_chunks_by_id(identity.tenant, [(h.document_id, h.revision, h.chunk_id) for h in hits])
    kept = []
    for hit in hits:
        document = documents.get(hit.document_id)
        record = records.get((hit.document_id, hit.revision, hit.chunk_id))
        if record is None or document is None or not document.serves(hit.revision, identity):
            continue
        kept.append((document, record, hit.rank))
    return kept


def _stitch(services: Services, identity: Identity, current: list[tuple[Document, Chunk, int]]) -> list[_Group]:
    """Hits whose list, table or sentence runs on bring the following chunks (a few at most);
    touching chunks of one revision become one passage."""
    members_by_revision: dict[tuple[str, str], list[tuple[Chunk, int]]] = {}
    documents: dict[str, Document] = {}
    frontier: list[tuple[Chunk, int]] = []
    for document, chunk, rank in current:
        documents[document.document_id] = document
        members_by_revision.setdefault((chunk.document_id, chunk.revision), []).append((chunk, rank))
        frontier.append((chunk, rank))
    for _ in range(STITCH_STEPS):
        frontier = [(c, r) for c, r in frontier if c.continues]
        if not frontier:
            break
        wanted = [(c.document_id, c.revision, _next_id(c)) for c, _ in frontier]
        found = services.chunks.get_chunks_by_id(identity.tenant, wanted)
        frontier = [(found[key], r) for key, (_, r) in zip(wanted, frontier) if key in found]
        for chunk, rank in frontier:
            members_by_revision[(chunk.document_id, chunk.revision)].append((chunk, rank))
    stitched: list[_Group] = []
    for (document_id, _), members in members_by_revision.items():
        members.sort(key=lambda m: (m[0].start, m[1]))
        run: list[Chunk] = []
        run_rank = 0
        for chunk, rank in members:
            if run and chunk.start <= run[-1].end:  # touching or overlapping: one passage
                if chunk.end > run[-1].end:
                    run.append(chunk)
                run_rank = min(run_rank, rank)
                continue
            if run:
                stitched.append(_Group(documents[document_id], run, run_rank))
            run, run_rank = [chunk], rank
        if run:
            stitched.append(_Group(documents[document_id], run, run_rank))
    stitched.sort(key=lambda g: (g.rank, g.document.document_id, g.chunks[0].start))
    return stitched




def _shingles(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORDS.findall(text)]
    if len(words) < SHINGLE:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _near_duplicate(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> bool:
    if not a or not b:
        return False
    return len(a & b) / min(len(a), len(b)) >= DUPLICATE_CONTAINMENT


def _within(group: _Group, hit: dict[tuple[str, str, str], int], budget: int) -> _Group | None:
    """The run of ``group``'s chunks around its best-ranked hit that fits ``budget``: that hit,
    then the chunks after it (what it runs on into), then those before it."""
    ranks = [hit.get((c.document_id, c.revision, c.chunk_id), len(hit) + 1) for c in group.chunks]
    start = end = ranks.index(min(ranks))

    def fits(a: int, b: int) -> bool:
        return len(stitched_text(group.chunks[a : b + 1])[0]) <= budget

    if not fits(start, end):
        return None
    while end + 1 < len(group.chunks) and fits(start, end + 1):
        end += 1
    while start > 0 and fits(start - 1, end):
        start -= 1
    return _Group(group.document, group.chunks[start : end + 1], group.rank)


def _hits_apart(group: _Group, hit: dict[tuple[str, str, str], int]) -> list[_Group]:
    """The hits of a passage that does not fit, each its own passage at its own rank, without
    the chunks stitched after them: a table's hits, chained by the rows each brought after it,
    became one passage cut back to its best hit, and the row the fifth hit held was lost."""
    parts = []
    for chunk in group.chunks:
        rank = hit.get((chunk.document_id, chunk.revision, chunk.chunk_id))
        if rank is not None:
            parts.append(_Group(group.document, [chunk], rank))
    return parts


def gather_evidence(
    services: Services,
    identity: Identity,
    hits: Sequence[SearchHit],
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    max_items: int = MAX_CANDIDATES,
) -> list[EvidenceItem]:
    """Evidence in rank order, within ``budget_chars``: a passage that does not fit and holds
    several hits is read as those hits apart (each at its rank, without what was stitched
    after it); one that still does not fit is cut back to the chunks around its best hit that
    do (the rows a table's hit brought after it can make a passage longer than the budget),
    and left out if even that hit does not."""
    current = read_back(services, identity, hits[: max_items * 2])
    hit = {(c.document_id, c.revision, c.chunk_id): rank for _, c, rank in current}
    evidence: list[EvidenceItem] = []
    seen: list[set[tuple[str, ...]]] = []
    used = 0
    queue = _stitch(services, identity, current)
    while queue:
        group = queue.pop(0)
        text, spans = stitched_text(group.chunks)
        if used + len(text) > budget_chars:
            if len(parts := _hits_apart(group, hit)) > 1:
                queue = sorted(queue + parts, key=lambda g: (g.rank, g.document.document_id, g.chunks[0].start))
                continue
            within = _within(group, hit, budget_chars - used)
            if within is None:
                continue  # fewer candidates, never a truncated chunk
            group = within
            text, spans = stitched_text(group.chunks)
        shingles = _shingles(text)
        if any(_near_duplicate(shingles, other) for other in seen):
            continue
        first = group.chunks[0]
        evidence.append(
            EvidenceItem(
                ref=f"S{len(evidence) + 1}", document_id=first.document_id, revision=first.revision,
                title=group.document.title, section_path=first.heading_path, text=text, spans=spans, rank=group.rank,
            )
        )
        seen.append(shingles)
        used += len(text)
        if len(evidence) == max_items:
            break
    return evidence
