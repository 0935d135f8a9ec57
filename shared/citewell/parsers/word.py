"""DOCX through python-docx: heading styles become sections, tables become records, and a
paragraph set in a code style or wholly in a monospace font is code, its lines kept."""

from __future__ import annotations

import io
import re

from docx import Document as open_docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder
from citewell.parsers.records import record_text
from citewell.parsers.sniff import MIME, Kind
from citewell.parsers.titles import choose

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def _heading_level(paragraph: Paragraph) -> int | None:
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    if name.lower() == "title":
        return 0  # above every "Heading N"
    match = _HEADING_STYLE.match(name)
    return int(match.group(1)) if match else None


# Fonts and style names a document sets code in: "Courier New", "Consolas", "DejaVu Sans Mono";
# "HTML Preformatted", "Source Code", "Code".
_MONOSPACE = re.compile(r"courier|consolas|mono|menlo|monaco|lucida console|inconsolata", re.IGNORECASE)
_CODE_STYLE = re.compile(r"\bcode\b|preformatted|source", re.IGNORECASE)


def _is_code(paragraph: Paragraph) -> bool:
    """A paragraph in a code style, or broken into lines and set wholly in a monospace font: a
    command or a configuration, whose line breaks are its lines ("git branch textual -d" then
    "git push yourgit :textual", not one line of both). A line of prose in Courier stays prose."""
    style = paragraph.style
    while style is not None:
        if _CODE_STYLE.search(style.name or ""):
            return True
        style = style.base_style
    runs = [run for run in paragraph.runs if run.text.strip()]
    return "\n" in paragraph.text and bool(runs) and all(_MONOSPACE.search(run.font.name or "") for run in runs)


def _table(table: Table, builder: TextBuilder) -> None:
    rows = [[cell.text for cell in row.cells] for row in table.rows]
    if not rows:
        return
    header = rows[0]
    for values in rows[1:] or [header]:
        builder.block(BlockKind.TABLE_ROW, record_text(header if len(rows) > 1 else [], values))


def parse_docx(data: bytes) -> ParsedDocument:
    document = open_docx(io.BytesIO(data))
    builder = TextBuilder()
    styled_title: str | None = None
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            _table(item, builder)
            continue
        level = _heading_level(item)
        if level is not None:
            builder.heading(level, item.text)
            if level == 0 and styled_title is None:
                styled_title = item.text
        else:
            style = (item.style.name if item.style is not None else "") or ""
            kind = BlockKind.LIST_ITEM if style.lower().startswith("list") else BlockKind.PARAGRAPH
            builder.block(BlockKind.CODE if kind is BlockKind.PARAGRAPH and _is_code(item) else kind, item.text)
    return builder.build(MIME[Kind.DOCX], title=choose(document.core_properties.title, styled_title))
