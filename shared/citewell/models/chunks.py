"""Chunks, the retrievable passages of a revision, and the stable ids of the sections they lie in."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import BaseModel, Field

from citewell.models.values import sha256_text


def section_id(revision: str, section_index: int, heading_path: Sequence[str]) -> str:
    """A section's stable id: its number in the document and a digest of the revision and its
    heading path. The same section of the same revision always has the same id; once the
    document is replaced an id names nothing (a read of it is refused as stale, never answered
    with whatever section now has that number)."""
    import json

    digest = hashlib.sha256(json.dumps([revision, section_index, list(heading_path)]).encode()).hexdigest()[:16]
    return f"{section_index}-{digest}"


def chunk_section_id(chunk_id: str, revision: str, heading_path: Sequence[str]) -> str:
    """The id of the section a chunk id (``document_id#section#index``) lies in; "" for no chunk."""
    parts = chunk_id.rsplit("#", 2)
    if len(parts) != 3 or not parts[1].isascii() or not parts[1].isdigit() or not revision:
        return ""
    return section_id(revision, int(parts[1]), heading_path)


class Chunk(BaseModel):
    """A retrievable passage: ``text == extracted_text[start:end]`` of its revision.

    ``body_start`` marks where the part not shared with the previous chunk begins: the
    bodies ``extracted_text[body_start:end]`` of a revision's chunks concatenate to the
    whole extracted text.
    """

    chunk_id: str
    document_id: str
    tenant: str
    allowed_roles: frozenset[str]
    revision: str
    title: str
    section_index: int
    index: int
    heading_path: list[str]
    start: int
    end: int
    body_start: int
    text: str
    pages: list[int] = Field(default_factory=list)
    sheet: str | None = None
    rows: list[int] = Field(default_factory=list)
    continues: bool = False  # a list, table or sentence run goes on in the next chunk of the section
    # Where each page and row begins in ``text`` (``(offset into text, page or row)``, in text order),
    # so a citation names the page or row of its quote, not the chunk's range. Kept only when the
    # chunk spans more than one (else ``pages``/``rows`` are exact); records written before these
    # existed have neither, and cite the chunk's range.
    page_starts: list[tuple[int, int]] = Field(default_factory=list)
    row_starts: list[tuple[int, int]] = Field(default_factory=list)
    # Read by OCR from scanned pages: the lowest mean confidence (0 to 1) of those pages; None for
    # text from a text layer or a text format.
    ocr_confidence: float | None = None

    def record_json(self) -> str:
        """The stored record: the page and row maps and the OCR confidence only when there is one,
        so a chunk on one page (most of a PDF's) costs a DynamoDB item nothing for them."""
        empty = {name for name in ("page_starts", "row_starts", "ocr_confidence") if not getattr(self, name)}
        return self.model_dump_json(exclude=empty)

    @staticmethod
    def make_id(document_id: str, section_index: int, index: int) -> str:
        return f"{document_id}#{section_index}#{index}"

    @property
    def context(self) -> str:
        """Title and heading path: indexed and embedded with the text so a chunk knows where it is."""
        parts = [self.title, *[h for h in self.heading_path if h != self.title]]
        return " > ".join(p for p in parts if p)

    @property
    def embedding_text(self) -> str:
        return f"{self.context}\n{self.text}" if self.context else self.text

    @property
    def content_hash(self) -> str:
        """Key of the embedding cache: the exact text the embedder sees."""
        return sha256_text(self.embedding_text)
