"""Reading a whole document or one section: the corpus contract's read order, whole document ->
section -> chunks.

A read is a snapshot of one revision, the active one, taken from the chunk records (the text a
citation is checked against), and it fits a budget in characters or is refused with
:class:`~citewell.errors.OverBudget`, never cut. Sections are named by
:func:`citewell.models.section_id`, so a section id taken from a search hit or a citation
names that section of that revision only: after a replacement it names nothing.

The answerer uses the same reads (:func:`widened`): when every passage of a model's evidence
comes from one document, or one section of it, and that fits the evidence budget, the model is
given the whole of it instead, one source whose spans are still the chunks, so every quote is
still bound to a chunk id of the revision the caller may read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from citewell.answers.evidence import stitched_text
from citewell.errors import NotFound, OverBudget
from citewell.models import Chunk, Document, EvidenceItem, Identity, section_id
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
            document = services.metadata.get_document(identity.tenant, document_id)
            if document is None or document.active_revision is None or not document.serves(document.active_revision, identity):
                break
            chunks = services.metadata.get_chunks(identity.tenant, document_id, document.active_revision)
            if chunks:  # a served revision always has chunks: none means it was replaced since the record was read
                return document, sorted(chunks, key=lambda c: (c.start, c.section_index, c.index))
    raise NotFound(f"no such document {document_id!r} for this caller")


def sections_of(chunks: Sequence[Chunk]) -> dict[str, list[Chunk]]:
    """The revision's chunks by section id, in text order."""
    found: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        found.setdefault(section_id(chunk.revision, chunk.section_index, chunk.heading_path), []).append(chunk)
    return found


def _info(sid: str, chunks: list[Chunk]) -> SectionInfo:
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
    listed = [_info(sid, part) for sid, part in sections.items()]
    chosen = next((i for i in listed if i.section_id == section), None)
    return Snapshot(document_id=document.document_id, title=document.title, revision=document.active_revision or "",
                    section=chosen, sections=[chosen] if chosen else listed, text=text, chars=len(text), budget=budget)


def widened(services: Services, identity: Identity, evidence: Sequence[EvidenceItem], budget: int) -> tuple[list[EvidenceItem], Scope | None]:
    """The evidence as one source, the whole document or the one section all of it comes from,
    when that fits ``budget`` and is the revision the evidence was read at; else the evidence
    as it is (and None)."""
    if not evidence or len({(e.document_id, e.revision) for e in evidence}) != 1:
        return list(evidence), None
    try:
        document, chunks = served_chunks(services, identity, evidence[0].document_id)
    except NotFound:
        return list(evidence), None
    if document.active_revision != evidence[0].revision:
        return list(evidence), None
    sections = sections_of(chunks)
    cited = {span.chunk_id for item in evidence for span in item.spans}
    holding = [sid for sid, part in sections.items() if cited & {c.chunk_id for c in part}]
    candidates: list[tuple[Scope, list[Chunk]]] = [("document", chunks)]
    if len(holding) == 1 and len(sections) > 1:
        candidates.append(("section", sections[holding[0]]))
    for scope, part in candidates:
        text, spans = stitched_text(part)
        if len(text) <= budget:
            whole = EvidenceItem(ref="S1", document_id=document.document_id, revision=part[0].revision, title=document.title,
                                 section_path=part[0].heading_path if scope == "section" else [], text=text, spans=spans,
                                 rank=min(e.rank for e in evidence))
            return [whole], scope
    return list(evidence), None
