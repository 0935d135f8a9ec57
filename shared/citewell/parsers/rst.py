"""reStructuredText through docutils: the doctree is walked, so sections, lists and code come
from the markup and never from its rules (``=====``, ``+---+``) read as text.

Tables (simple, grid, ``list-table``) become one record per row named by the header cells;
an option list one record per option (``option: -n, --dry-run; description: ...``); a field
list (``:Author: X``, or the bibliographic fields after the title) one record of its fields.
The title is the document's own: the title docutils promotes (a lone top-level section title,
or ``.. title::``), else a ``:title:`` field, else a top-level heading that opens the file.
Badges and logos before it (``.. image::``, a line of ``|PyPI| |CI|`` substitutions) are
decoration and open nothing: their alternative text is not read, in a paragraph or a title.

docutils reports problems through a stream and can stop at a severity: both are turned off,
so broken markup stays text. Where docutils gave up on a directive it does not know (a
Sphinx-only ``.. tabs::``), the directive's source is kept as code, not lost. File inclusion
and raw passthrough are disabled: a document cannot pull in another file.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable

from docutils import nodes
from docutils.core import publish_doctree

from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder, decorative
from citewell.parsers.records import record, record_text
from citewell.parsers.sniff import MIME, Kind
from citewell.parsers.titles import choose

# Markup that is no text: comments, link targets, substitutions' definitions, the title (emitted
# first), and what transforms left pending or raw passthrough (disabled).
_SKIPPED = tuple(getattr(nodes, name) for name in ("comment", "substitution_definition", "target", "pending", "raw",
                                                   "title", "meta", "decoration") if hasattr(nodes, name))
_NEVER = 5  # above docutils' most severe level (4, SEVERE): never halt, never report


def _settings() -> dict[str, object]:
    return {
        "report_level": _NEVER,
        "halt_level": _NEVER,
        "warning_stream": io.StringIO(),  # a fresh one per parse: nothing reaches stderr
        "file_insertion_enabled": False,
        "raw_enabled": False,
        "_disable_config": True,  # no docutils.conf from the machine it runs on
        "input_encoding": "unicode",
        "doctitle_xform": True,
        "docinfo_xform": True,
        "sectsubtitle_xform": False,
        "syntax_highlight": "none",
        "character_level_inline_markup": False,
        "pep_references": False,
        "rfc_references": False,
    }


# A role docutils does not know (Sphinx's :ref:, :doc:, :class:) is left as its source:
# ":ref:`the guide <guide>`" reads as "the guide", ":class:`Session`" as "Session".
_ROLE = re.compile(r"^(?::[\w.+-]+:)?`(?P<text>[^`<]*?)\s*(?:<[^`>]*>)?`(?::[\w.+-]+:)?_{0,2}$", re.DOTALL)


def _undecorated(node: nodes.Element) -> nodes.Element:
    """``node`` without its decorative images (:func:`~citewell.parsers.builder.decorative`): a
    badge's alternative text (``|Build Status|``, ``.. |PyPI| image:: ...``) is no text, in a
    paragraph or in a title (``filetype.py |Build Status|``)."""
    if not any(True for _ in node.findall(nodes.image)):
        return node
    copy = node.deepcopy()
    for image in list(copy.findall(nodes.image)):
        if image.parent is not None and decorative(str(image.get("uri", "")), str(image.get("alt", "")),
                                                   isinstance(image.parent, nodes.reference)):
            image.parent.remove(image)
    return copy


def _text(node: nodes.Node) -> str:
    if isinstance(node, nodes.Element):
        node = _undecorated(node)
    if not isinstance(node, nodes.Element) or not any(True for _ in node.findall(nodes.problematic)):
        return node.astext()
    parts: list[str] = []
    for piece in node.findall(nodes.Text):
        problem = piece.parent if isinstance(piece.parent, nodes.problematic) else None
        if problem is not None:
            match = _ROLE.match(piece.astext())
            parts.append(match.group("text") if match and match.group("text") else piece.astext())
        else:
            parts.append(piece.astext())
    return "".join(parts)


class _Walker:
    """Emits the blocks of a doctree into a builder, section depth giving heading levels."""

    def __init__(self, builder: TextBuilder, titled: bool) -> None:
        self.builder = builder
        self.base = 1 if titled else 0  # under a promoted title, top-level sections are level 2
        self.title_field: str | None = None
        self.opening_heading: str | None = None  # a top-level heading with nothing before it
        self._handlers: dict[type[nodes.Node], Callable[[nodes.Element, int], None]] = {
            nodes.section: self._section,
            nodes.paragraph: self._paragraph,
            nodes.bullet_list: self._list,
            nodes.enumerated_list: self._list,
            nodes.definition_list: self._definitions,
            nodes.field_list: self._fields,
            nodes.docinfo: self._fields,
            nodes.option_list: self._options,
            nodes.table: self._table,
            nodes.literal_block: self._code,
            nodes.doctest_block: self._code,
            nodes.line_block: self._code,
            nodes.system_message: self._message,
            nodes.topic: self._topic,
            nodes.Admonition: self._admonition,
            nodes.rubric: self._paragraph,
            nodes.subtitle: self._paragraph,
            nodes.caption: self._paragraph,
            nodes.attribution: self._paragraph,
        }

    def walk(self, parent: nodes.Element, depth: int) -> None:
        self.walk_nodes(parent.children, depth)

    def walk_nodes(self, children: list[nodes.Node], depth: int) -> None:
        for child in children:
            if not isinstance(child, nodes.Element):
                continue
            handler = next((h for kind, h in self._handlers.items() if isinstance(child, kind)), None)
            if handler is not None:
                handler(child, depth)
            elif isinstance(child, _SKIPPED):
                continue
            else:  # containers: block quotes, compounds, footnotes, figures, directives' wrappers
                self.walk(child, depth)

    def _section(self, node: nodes.Element, depth: int) -> None:
        body = [c for c in node.children if isinstance(c, nodes.Element) and not isinstance(c, (nodes.title, *_SKIPPED))]
        if body and all(isinstance(c, nodes.topic) and "contents" in c.get("classes", []) for c in body):
            return  # "Table of Contents" over a ``.. contents::``: headings listed again
        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        if title is not None:
            level = self.base + depth + 1
            if level == 1 and self.opening_heading is None and self.builder.is_empty:
                self.opening_heading = _text(title)
            self.builder.heading(level, _text(title))
        self.walk(node, depth + 1)

    def _paragraph(self, node: nodes.Element, depth: int) -> None:
        self.builder.block(BlockKind.PARAGRAPH, _text(node))

    def _code(self, node: nodes.Element, depth: int) -> None:
        self.builder.block(BlockKind.CODE, _text(node))

    def _list(self, node: nodes.Element, depth: int) -> None:
        """A list item's own paragraphs are one item; a list nested in it follows as its own items."""
        for item in node.children:
            if not isinstance(item, nodes.list_item):
                continue
            own = [c for c in item.children if isinstance(c, nodes.paragraph)]
            self.builder.block(BlockKind.LIST_ITEM, " ".join(_text(p) for p in own))
            self.walk_nodes([c for c in item.children if not isinstance(c, nodes.paragraph)], depth)

    def _definitions(self, node: nodes.Element, depth: int) -> None:
        """``term: definition``, one item each (a glossary entry, a setting and what it does)."""
        for item in (c for c in node.children if isinstance(c, nodes.definition_list_item)):
            term = " ".join(_text(t) for t in item.children if isinstance(t, (nodes.term, nodes.classifier)))
            definition = next((c for c in item.children if isinstance(c, nodes.definition)), None)
            own = [c for c in definition.children if isinstance(c, nodes.paragraph)] if definition else []
            body = " ".join(_text(p) for p in own)
            self.builder.block(BlockKind.LIST_ITEM, f"{term}: {body}" if body else term)
            if definition is not None:
                self.walk_nodes([c for c in definition.children if not isinstance(c, nodes.paragraph)], depth)

    def _fields(self, node: nodes.Element, depth: int) -> None:
        """One record of the list's fields; the bibliographic ones (``<author>``) by their name."""
        pairs: list[tuple[str, str]] = []
        for child in node.children:
            if isinstance(child, nodes.field):
                name = next((_text(c) for c in child.children if isinstance(c, nodes.field_name)), "")
                body = next((_text(c) for c in child.children if isinstance(c, nodes.field_body)), "")
            elif isinstance(child, nodes.Element):
                name, body = child.tagname, _text(child)
            else:
                continue
            if name.strip().lower() == "title" and self.title_field is None:
                self.title_field = body
            pairs.append((name, body))
        self.builder.block(BlockKind.RECORD, record(pairs))

    def _options(self, node: nodes.Element, depth: int) -> None:
        for item in node.children:
            if not isinstance(item, nodes.option_list_item):
                continue
            group = next((_text(c) for c in item.children if isinstance(c, nodes.option_group)), "")
            description = next((_text(c) for c in item.children if isinstance(c, nodes.description)), "")
            self.builder.block(BlockKind.RECORD, record([("option", group), ("description", description)]))

    def _table(self, node: nodes.Element, depth: int) -> None:
        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        if title is not None:
            self.builder.block(BlockKind.PARAGRAPH, _text(title))
        for group in node.findall(nodes.tgroup):
            head = next((c for c in group.children if isinstance(c, nodes.thead)), None)
            body = next((c for c in group.children if isinstance(c, nodes.tbody)), None)
            head_rows = _rows(head) if head is not None else []
            rows = _rows(body) if body is not None else []
            header = head_rows[-1] if head_rows else []
            if not header and len(rows) > 1:  # no header rule: the first row names the columns, as in a CSV
                header, rows = rows[0], rows[1:]
            for values in rows:
                self.builder.block(BlockKind.TABLE_ROW, record_text(header, values))

    def _message(self, node: nodes.Element, depth: int) -> None:
        """docutils' report of markup it gave up on: the source it quotes is the file's text.
        Warnings (a disabled ``raw`` or ``include``) are dropped with what they disabled."""
        if int(node.get("level", 0)) >= 3:
            for block in node.findall(nodes.literal_block):
                self.builder.block(BlockKind.CODE, _text(block))

    def _topic(self, node: nodes.Element, depth: int) -> None:
        if "contents" in node.get("classes", []):
            return  # a table of contents repeats the headings it lists
        self.walk(node, depth)

    def _admonition(self, node: nodes.Element, depth: int) -> None:
        """A note or warning: its kind leads its first paragraph ("Note: ...")."""
        label = node.tagname.capitalize() if node.tagname != "admonition" else ""
        first = True
        for child in node.children:
            if isinstance(child, nodes.title):
                label = _text(child)
                continue
            if first and isinstance(child, nodes.paragraph) and label:
                self.builder.block(BlockKind.PARAGRAPH, f"{label}: {_text(child)}")
            else:
                self.walk_nodes([child], depth)
            first = False


def _rows(part: nodes.Element) -> list[list[str]]:
    """The rows of a table head or body as cell texts by column: a cell spanning columns
    (``morecols``) fills each, one spanning rows (``morerows``) the rows below it too."""
    grid: list[list[str]] = []
    below: dict[int, tuple[int, str]] = {}  # column -> (rows still covered, text)
    for row in part.children:
        if not isinstance(row, nodes.row):
            continue
        cells: list[str] = []
        entries = [e for e in row.children if isinstance(e, nodes.entry)]
        column = 0

        def fill_spanned(cells: list[str]) -> None:
            nonlocal column
            while column in below:
                left, text = below[column]
                cells.append(text)
                if left <= 1:
                    del below[column]
                else:
                    below[column] = (left - 1, text)
                column += 1

        for entry in entries:
            fill_spanned(cells)
            text = _text(entry)
            for _ in range(int(entry.get("morecols", 0)) + 1):
                if int(entry.get("morerows", 0)):
                    below[column] = (int(entry["morerows"]), text)
                cells.append(text)
                column += 1
        fill_spanned(cells)
        grid.append(cells)
    return grid


def parse_rst(text: str) -> ParsedDocument:
    doctree = publish_doctree(text, settings_overrides=_settings())
    declared = doctree.get("title")
    builder = TextBuilder()
    title_node = next((c for c in doctree.children if isinstance(c, nodes.title)), None)
    if title_node is not None:
        builder.heading(1, _text(title_node))
        if declared == title_node.astext():  # the promoted title as docutils spells it, badges and all
            declared = _text(title_node)
    walker = _Walker(builder, titled=title_node is not None)
    walker.walk(doctree, 0)
    return builder.build(MIME[Kind.RST], title=choose(declared, walker.title_field, walker.opening_heading))
