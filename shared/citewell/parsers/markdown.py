"""Markdown through markdown-it-py: headings become sections, inline markup becomes plain text,
tables become records named by their header cells, and raw HTML is read as HTML (a comment, a
badge's ``<img>`` or a ``<div align>`` is markup, never a passage). A badge or a logo in Markdown
(``[![Build Status](...svg)](...)``) is decoration too: its alternative text is not read, so a
row of badges over a README's title leaves no paragraph behind. The title is the first
first-level heading, without the badges set beside it."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder, decorative
from citewell.parsers.html import fragment
from citewell.parsers.records import record_text
from citewell.parsers.sniff import MIME, Kind
from citewell.parsers.titles import choose

_md = MarkdownIt("commonmark").enable("table")


_HIDDEN = re.compile(r"<(/?)(script|style|template|noscript)\b", re.I)  # elements whose content is no text


def _heading_text(token: Token) -> str:
    """A heading's words; a heading that is only a logo (``# ![jsii](./logo.png)``) is named by it."""
    return _inline_text(token) or _inline_text(token, logos=True)


def _inline_text(token: Token, logos: bool = False) -> str:
    """The words of an inline run; a badge's or a logo's alternative text is none of them
    (``[![Build Status](https://.../badge.svg)](...)``): :func:`~citewell.parsers.builder.decorative`.
    ``logos``: an image that is no link is read by its alternative text whatever it shows."""
    out: list[str] = []
    hidden = 0  # inside an inline <script> or <style>: what it holds is code, not a passage
    linked = 0
    for child in token.children or []:
        if child.type == "html_inline":  # a tag or a comment is markup; the text between tags is its own token
            tag = _HIDDEN.match(child.content)
            if tag and not child.content.rstrip().endswith("/>"):
                hidden = max(0, hidden + (-1 if tag.group(1) else 1))
        elif hidden:
            continue
        elif child.type in ("link_open", "link_close"):
            linked = max(0, linked + (1 if child.type == "link_open" else -1))
        elif child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif child.type == "image" and (not linked if logos
                                        else not decorative(str(child.attrs.get("src") or ""), child.content, linked > 0)):
            out.append(child.content or "")
    return "".join(out)


def parse_markdown(text: str) -> ParsedDocument:
    builder = TextBuilder()
    tokens = _md.parse(text)
    list_depth = 0
    row: list[str] | None = None
    header: list[str] = []
    in_head = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            builder.heading(int(tok.tag[1:]), _heading_text(tokens[i + 1]))
            i += 3
            continue
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            list_depth += 1
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            list_depth -= 1
        elif tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and row is not None:
            row.append(_inline_text(tok))
        elif tok.type == "tr_close" and row is not None:
            if in_head:
                header = row
            else:
                builder.block(BlockKind.TABLE_ROW, record_text(header, row))
            row = None
        elif tok.type == "inline":
            kind = BlockKind.LIST_ITEM if list_depth else BlockKind.PARAGRAPH
            builder.block(kind, _inline_text(tok))
        elif tok.type in ("fence", "code_block"):
            builder.block(BlockKind.CODE, tok.content)
        elif tok.type == "html_block":
            fragment(tok.content, builder)
        i += 1
    return builder.build(MIME[Kind.MARKDOWN], title=choose(builder.top_heading))
