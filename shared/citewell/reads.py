"""Reading a whole document or one section: the corpus contract's read order, whole document ->
section -> chunks.

A read is a snapshot of one revision, the active one, taken from the chunk records (the text a
citation is checked against), and it fits a budget in characters or is refused with
:class:`~citewell.errors.OverBudget`, never cut. Sections are named by
:func:`citewell.models.chunks.section_id`, so a section id taken from a search hit or a citation
names that section of that revision only: after a replacement it names nothing.

The answerer uses the same reads (:func:`widened`): a model is given the document of its best
passage whole (or, when that is over the evidence budget, the section the passage lies in) in
place of that document's passages, one source whose spans are still the chunks, so every quote
is still bound to a chunk id of the revision the caller may read; evidence that all comes from
one document that fits is that document alone. Neighbouring chunks are joined by
:func:`stitched_text`, here because every read, the answerer's evidence included, joins them one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from citewell.errors import NotFound, OverBudget
from citewell.models.chunks import Chunk, section_id
from citewell.models.documents import Document
from citewell.models.evidence import EvidenceItem, EvidenceSpan
from citewell.models.identity import Identity
from citewell.services import Services

REREADS = 3  # a document replaced (and purged) between reading its record and its chunks is read again
Scope = Literal["document", "section"]


class SectionInfo(BaseModel):
    section_id: str
    heading_path: list[str]
    chars: int


class Snapshot(BaseModel):
    """One revision's text, whole or one section of it, within ``budget`` characters."""

    document_id: str
    title: str
    revision: str
    section: SectionInfo | None = None  # the section read; None: the whole document
    sections: list[SectionInfo]  # every section of the revision (a whole read's), or the one read
    text: str
    chars: int
    budget: int


def served_chunks(services: Services, identity: Identity, document_id: str) -> tuple[Document, list[Chunk]]:
    """The document and its active revision's chunk records, in text order, when the caller may
    read it now; the same NotFound whether it does not exist, is another tenant's, is not for the
    caller's roles or is not served (processing, outside its effective window)."""
    if not identity.is_empty:
        for _ in range(REREADS):
            document = services.documents.get_document(identity.tenant, document_id)
            if document is None or document.active_revision is None or not document.serves(document.active_revision, identity):
                break
            chunks = services.chunks.get_chunks(identity.tenant, document_id, document.active_revision)
            if chunks:  # a served revision always has chunks: none means it was replaced since the record was read
                return document, sorted(chunks, key=lambda c: (c.start, c.section_index, c.index))
    raise NotFound(f"no such document {document_id!r} for this caller")


def sections_of(chunks: Sequence[Chunk]) -> dict[str, list[Chunk]]:
    """The revision's chunks by section id, in text order."""
    found: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        found.setdefault(section_id(chunk.revision, chunk.section_index, chunk.heading_path), []).append(chunk)
    return found


def section_info(sid: str, chunks: list[Chunk]) -> SectionInfo:
    """One section's id, headings and length, as a read lists it."""
    return SectionInfo(section_id=sid, heading_path=chunks[0].heading_path, chars=len(stitched_text(chunks)[0]))


def read(services: Services, identity: Identity, document_id: str, budget: int, section: str | None = None) -> Snapshot:
    """The caller's snapshot of the document (or of the section ``section`` names) at its active
    revision. NotFound for a document the caller may not read or a section this revision does
    not have; OverBudget when the text is longer than ``budget``."""
    return snapshot(*served_chunks(services, identity, document_id), budget, section)


def snapshot(document: Document, chunks: list[Chunk], budget: int, section: str | None = None) -> Snapshot:
    """:func:`read` of chunks already read by :func:`served_chunks`."""
    document_id = document.document_id
    sections = sections_of(chunks)
    if section is not None:
        if section not in sections:
            raise NotFound(f"no section {section!r} in the current revision of {document_id!r} "
                           "(a section id names one revision: search again for the current one)")
        chunks = sections[section]
    text = stitched_text(chunks)[0]
    if len(text) > budget:
        what = f"section {section!r} of {document_id!r}" if section is not None else repr(document_id)
        hint = "" if section is not None else ": read one section of it (a search hit's or citation's section_id)"
        raise OverBudget(f"{what} is {len(text):,} characters, over the budget of {budget:,}{hint}", len(text), budget)
    listed = [section_info(sid, part) for sid, part in sections.items()]
    chosen = next((i for i in listed if i.section_id == section), None)
    return Snapshot(document_id=document.document_id, title=document.title, revision=document.active_revision or "",
                    section=chosen, sections=[chosen] if chosen else listed, text=text, chars=len(text), budget=budget)


def widened(
    services: Services, identity: Identity, evidence: Sequence[EvidenceItem], budget: int,
) -> tuple[list[EvidenceItem], Scope | None]:
    """The evidence with its best passage's document read whole in place of its passages, or,
    when that is over ``budget``, the one section that passage lies in; the other documents'
    passages follow, as many as still fit (in rank order). Evidence that all comes from one
    document is then that document alone. Unchanged (and None) when neither fits, or the
    document no longer serves the revision the passages were read at."""
    if not evidence:
        return list(evidence), None
    best = evidence[0]
    try:
        document, chunks = served_chunks(services, identity, best.document_id)
    except NotFound:
        return list(evidence), None
    if document.active_revision != best.revision:
        return list(evidence), None
    sections = sections_of(chunks)
    in_section = {c.chunk_id: sid for sid, part in sections.items() for c in part}
    holding = {in_section.get(span.chunk_id) for span in best.spans}
    candidates: list[tuple[Scope, list[Chunk]]] = [("document", chunks)]
    if len(holding) == 1 and len(sections) > 1 and (sid := holding.pop()) is not None:
        candidates.append(("section", sections[sid]))
    for scope, part in candidates:
        text, spans = stitched_text(part)
        if len(text) > budget:
            continue
        covered = {c.chunk_id for c in part}
        whole = EvidenceItem(ref="S1", document_id=document.document_id, revision=best.revision, title=document.title,
                             section_path=part[0].heading_path if scope == "section" else [], text=text, spans=spans,
                             rank=best.rank)
        kept, used = [whole], len(text)
        for item in evidence[1:]:
            if item.document_id == best.document_id and {s.chunk_id for s in item.spans} <= covered:
                continue  # read in the whole already
            if used + len(item.text) <= budget:
                kept.append(item.model_copy(update={"ref": f"S{len(kept) + 1}"}))
                used += len(item.text)
        return kept, scope
    return list(evidence), None

def stitched_text(chunks: list[Chunk]) -> tuple[str, list[EvidenceSpan]]:
    """Concatenate neighbouring chunks without repeating their overlap."""
    text, spans, end = "", [], chunks[0].start
    for chunk in chunks:
        skip = max(0, end - chunk.start)
        fresh = chunk.text[skip:]
        spans.append(EvidenceSpan(chunk_id=chunk.chunk_id, section_path=chunk.heading_path, start=len(text),
                                  end=len(text) + len(fresh), pages=chunk.pages, sheet=chunk.sheet, rows=chunk.rows,
                                  page_starts=_moved(chunk.page_starts, skip, len(text)),
                                  row_starts=_moved(chunk.row_starts, skip, len(text))))
        text += fresh
        end = chunk.end
    return text, [s for s in spans if s.end > s.start]


def _moved(starts: list[tuple[int, int]], skip: int, at: int) -> list[tuple[int, int]]:
    """A chunk's page or row starts as offsets into the evidence text, where the chunk's text from
    ``skip`` on begins at ``at``: what begins in the left-out overlap begins at ``at`` instead."""
    moved: list[tuple[int, int]] = []
    for offset, value in starts:
        if offset <= skip and moved:
            moved.pop()  # a later start before the fresh text supersedes it
        moved.append((at + max(0, offset - skip), value))
    return moved
