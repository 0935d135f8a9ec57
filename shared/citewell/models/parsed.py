"""What a parser extracted from a file: the text, its sections and its blocks."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

from citewell.models.values import sha256_text


class Section(BaseModel):
    """A span of the extracted text under one heading path. Sections tile the text."""

    heading_path: list[str]
    start: int
    end: int


class BlockKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE_ROW = "table_row"
    RECORD = "record"
    CODE = "code"


class Block(BaseModel):
    """One structural unit of extracted text with its offsets and where it came from."""

    kind: BlockKind
    start: int
    end: int
    page: int | None = None
    sheet: str | None = None
    row: int | None = None
    ocr_confidence: float | None = None  # read by OCR from a scanned page: the page's mean confidence (0 to 1)


class ParsedDocument(BaseModel):
    """What a parser extracted: the text, its sections and blocks (offsets into ``text``)."""

    mime: str
    text: str
    sections: list[Section]
    blocks: list[Block]
    title: str | None = None
    encoding: str | None = None  # the text encoding the bytes were read in; None for binary formats

    @property
    def content_sha256(self) -> str:
        return sha256_text(self.text)
