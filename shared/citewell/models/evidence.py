"""Evidence handed to a generator, and where each part of it sits in its file."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field


class Place(BaseModel):
    """Where a passage sits in its file, besides its headings: the PDF pages, or the sheet and
    rows of a spreadsheet (rows also for CSV records). Empty for formats without either."""

    pages: list[int] = Field(default_factory=list)
    sheet: str | None = None
    rows: list[int] = Field(default_factory=list)


def _starting_in(starts: Sequence[tuple[int, int]], start: int, end: int) -> list[int]:
    """The values of ``starts`` (``(offset, value)`` in offset order) whose stretch of text, from
    their offset to the next one's, overlaps ``[start, end)``."""
    found = []
    for i, (offset, value) in enumerate(starts):
        following = starts[i + 1][0] if i + 1 < len(starts) else None
        if offset < end and (following is None or following > start) and value not in found:
            found.append(value)
    return found


class EvidenceSpan(Place):
    """The part of an evidence text that came from one chunk (offsets into that evidence text), that
    chunk's place, and where its pages and rows begin (offsets into the evidence text, as in
    :attr:`Chunk.page_starts`; empty when the chunk has one page or row, or was written without them)."""

    chunk_id: str
    section_path: list[str]
    start: int
    end: int
    page_starts: list[tuple[int, int]] = Field(default_factory=list)
    row_starts: list[tuple[int, int]] = Field(default_factory=list)

    def place_of(self, start: int, end: int) -> Place:
        """The place of the evidence characters ``[start, end)`` inside this span: the pages and rows
        they lie on where the map says, else the chunk's."""
        start, end = max(start, self.start), min(end, self.end)
        pages = sorted(_starting_in(self.page_starts, start, end)) if self.page_starts else self.pages
        rows = sorted(_starting_in(self.row_starts, start, end)) if self.row_starts else self.rows
        return Place(pages=pages or self.pages, sheet=self.sheet, rows=rows or self.rows)


class EvidenceItem(BaseModel):
    """A passage handed to a generator as ``[ref]``: one chunk, or neighbours stitched whole."""

    ref: str
    document_id: str
    revision: str
    title: str
    section_path: list[str]
    text: str
    spans: list[EvidenceSpan]
    rank: int

    def span_at(self, offset: int) -> EvidenceSpan:
        """The chunk span that holds ``text[offset]``."""
        return next((s for s in self.spans if s.start <= offset < s.end), self.spans[-1])

    def place_of(self, parts: Sequence[tuple[int, int]]) -> Place:
        """The place of a quote made of ``parts`` (``[start, end)`` offsets into ``text``, an elided
        quote's in order): the pages and rows its characters lie on, in whichever chunks they are;
        the sheet of the first part's chunk (a section is never on two sheets)."""
        pages: set[int] = set()
        rows: list[int] = []
        sheet = None
        for start, end in parts:
            for span in self.spans:
                if span.start < end and start < span.end:
                    found = span.place_of(start, end)
                    pages.update(found.pages)
                    rows.extend(r for r in found.rows if r not in rows)
                    sheet = sheet or found.sheet
        return Place(pages=sorted(pages), sheet=sheet, rows=sorted(rows))
