"""Plain text: paragraphs are separated by blank lines."""

from __future__ import annotations

from citewell.models import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder, split_paragraphs
from citewell.parsers.sniff import MIME, Kind


def parse_plain(text: str) -> ParsedDocument:
    builder = TextBuilder()
    for paragraph in split_paragraphs(text):
        builder.block(BlockKind.CODE, paragraph)  # keep the author's line breaks
    return builder.build(MIME[Kind.TEXT])
