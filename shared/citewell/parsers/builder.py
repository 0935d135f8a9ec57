"""Assembles extracted text from structural blocks, keeping offsets, sections and locators."""

from __future__ import annotations

import re
from typing import TypedDict, Unpack

from citewell.models.parsed import Block, BlockKind, ParsedDocument, Section


class Where(TypedDict, total=False):
    """Where a block came from, as :class:`~citewell.models.parsed.Block` keeps it."""

    page: int | None
    sheet: str | None
    row: int | None
    ocr_confidence: float | None


_BLANK_LINES = re.compile(r"\n\s*\n")
SEPARATOR = "\n\n"
# Terminal escape sequences (a log's colours, a window title, an OSC 52 clipboard write) are no
# text: they would glue words to codes, and quoted to a terminal they would act on it. Other
# control characters are spaces. Tabs, line breaks and form feeds stay for the cleaners below.
_ESCAPE = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def _inert(text: str) -> str:
    return _CONTROL.sub(" ", _ESCAPE.sub("", text)) if _CONTROL.search(text) else text


# Where a README's decoration comes from: status badges (CI, coverage, versions, downloads, chat)
# and the project's logo or banner.
_DECORATION = re.compile(
    r"shields\.io|badge|travis-ci\.|codecov\.io|coveralls\.io|circleci\.com|appveyor\.com|pepy\.tech|"
    r"gitter\.im|/workflows/|/actions/|readthedocs\.org/projects/|snyk\.io|bestpractices\.|logo|banner",
    re.IGNORECASE)


def decorative(url: str, alt: str = "", linked: bool = False) -> bool:
    """Whether an image is decoration, its alternative text no passage: an image that is a link
    (a badge, a logo that leads to the project's site), or a badge, a logo or a banner by its
    address or its text. A figure's description ("the API calls the worker") stays text."""
    return linked or bool(_DECORATION.search(url)) or bool(_DECORATION.search(alt))


def clean_inline(text: str) -> str:
    """Collapse runs of whitespace to one space: prose from markup carries layout noise."""
    return " ".join(_inert(text).split())


def clean_lines(text: str) -> str:
    """Keep line structure (code, addresses) but drop trailing spaces and blank edges."""
    lines = [line.rstrip() for line in _inert(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def split_paragraphs(text: str) -> list[str]:
    return [p for p in (clean_lines(p) for p in _BLANK_LINES.split(text)) if p.strip()]


class TextBuilder:
    """Appends blocks separated by a blank line; headings open sections that tile the text."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._pos = 0
        self._blocks: list[Block] = []
        self._headings: list[tuple[int, str]] = []
        self._section_starts: list[tuple[int, list[str]]] = [(0, [])]
        self._section_has_body = False
        self.first_heading: str | None = None  # the first heading of any level
        self.top_heading: str | None = None  # the first heading of level 1 or above (a title)
        self.opens_with_heading = False  # the first block is a heading

    @property
    def is_empty(self) -> bool:
        """No block yet: a heading now opens the document."""
        return not self._blocks

    def heading(self, level: int, text: str, **where: Unpack[Where]) -> None:
        text = clean_inline(text)
        if not text:
            return
        self._headings = [(lvl, h) for lvl, h in self._headings if lvl < level] + [(level, text)]
        if self.first_heading is None:
            self.first_heading = text
            self.opens_with_heading = not self._blocks
        if self.top_heading is None and level <= 1:
            self.top_heading = text
        start = self._emit(BlockKind.HEADING, text, where)
        self._open_section(start, [h for _, h in self._headings])

    def section(self, path: list[str]) -> None:
        """Start a section at the next block without emitting a heading (an XLSX sheet, say)."""
        self._headings = [(i + 1, h) for i, h in enumerate(path)]
        start = self._pos + (len(SEPARATOR) if self._parts else 0)
        self._open_section(start, list(path))

    def block(self, kind: BlockKind, text: str, **where: Unpack[Where]) -> None:
        text = clean_lines(text) if kind is BlockKind.CODE else clean_inline(text)
        if text:
            self._emit(kind, text, where)

    def _emit(self, kind: BlockKind, text: str, where: Where) -> int:
        if self._parts:
            self._parts.append(SEPARATOR)
            self._pos += len(SEPARATOR)
        start = self._pos
        self._parts.append(text)
        self._pos += len(text)
        self._blocks.append(Block(kind=kind, start=start, end=self._pos, **where))
        self._section_has_body = self._section_has_body or kind is not BlockKind.HEADING
        return start

    def _open_section(self, start: int, path: list[str]) -> None:
        """A section with no body yet (empty, or only a title) takes the new path instead of
        being closed: a chunk of nothing but a heading helps no one."""
        if self._section_has_body:
            self._section_starts.append((start, path))
        else:
            self._section_starts[-1] = (self._section_starts[-1][0], path)
        self._section_has_body = False

    def build(self, mime: str, title: str | None = None) -> ParsedDocument:
        """``title`` is the parser's choice by :mod:`citewell.parsers.titles`; no heading is
        taken for it here (a lower one would name a chapter, not the document)."""
        text = "".join(self._parts)
        sections: list[Section] = []
        bounds = [(min(start, len(text)), path) for start, path in self._section_starts] + [(len(text), [])]
        for (start, path), (end, _) in zip(bounds, bounds[1:]):
            if end > start:
                sections.append(Section(heading_path=path, start=start, end=end))
        return ParsedDocument(mime=mime, text=text, sections=sections, blocks=self._blocks, title=title)
