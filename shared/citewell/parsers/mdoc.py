"""Manual pages in mdoc, BSD's manual macros (``.Dd``/``.Dt``/``.Os``, ``.Sh``, ``.Bl -tag``,
``.It Cm Host``), read without groff or mandoc: OpenSSH's pages, tmux's, dash's, file's.

The page reads in the shape of a man(7) page (``citewell.parsers.roff``), so it is built the
same way (``citewell.parsers.manpage``): ``.Sh`` and ``.Ss`` are sections; a tagged list's
``.It`` (``-tag``, ``-hang``, ``-ohang``, ``-inset``, ``-diag``) is an item whose tag is the
option or keyword it describes; a ``-bullet``, ``-dash``, ``-enum`` or ``-item`` list's items
are list items; a ``-column`` list's rows are table rows, under the first row when it is set
bold (``.It Sy Key Ta Sy Function``). A list inside an item is part of its description: each
of its items a paragraph led by its tag ("yes: ..."), a table's rows rows. Literal displays (``.Bd -literal``,
``.Dl``) are code. Every other macro line is set to its words by
:mod:`citewell.parsers.mdoc_inline`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from citewell.parsers.man_events import Event, Row
from citewell.parsers.mdoc_inline import Setter, Token, Words, tokens
from citewell.parsers.roff import EventSink, request, text_lines, unescape

_FIRST_MACRO = re.compile(r"^\.\s*(Dd|Dt|Sh|TH|SH)\b")
_COMMENT = re.compile(r'(?<!\\)\\".*$')
_TAGGED = {"-tag", "-hang", "-ohang", "-inset", "-diag"}
_MARKS = {"-bullet": "•", "-dash": "-", "-hyphen": "-", "-item": "•", "-enum": ""}
_FIELD_ORDER = "ATBJRNVICPQUDO"  # a reference's fields as groff sets them: authors, title, book ... date, note
# In SYNOPSIS each of these begins a line of its own (a utility's usage, a function's prototype).
_SYNOPSIS_LINES = {"Nm", "Ft", "Fn", "Fo", "In", "Fd", "Cd"}


def is_mdoc(lines: list[str]) -> bool:
    """mdoc's header (``.Dd``, ``.Dt``) or section macro (``.Sh``) comes before man's (``.TH``, ``.SH``)."""
    for line in lines:
        found = _FIRST_MACRO.match(line)
        if found:
            return found.group(1) in ("Dd", "Dt", "Sh")
    return False


@dataclass
class _List:
    kind: str  # "tag", "mark" (bullets, numbers, plain items) or "column"
    mark: str = "•"  # "" numbers the items
    nested: bool = False  # its items are paragraphs of the item around it, not items of the page
    number: int = 0
    header: list[str] | None = None  # a column list's bold first row
    rows: int = 0


class _MdocReader:
    def __init__(self) -> None:
        self.sink = EventSink()
        self.setter = Setter()
        self.words = Words()  # the paragraph being set
        self.section = ""
        self.lists: list[_List] = []
        self.displays: list[bool] = []  # the open .Bd displays: literal or not
        self.unfilled = False  # roff's .nf
        self.code: list[str] = []
        self.tag: Words | None = None  # an .It tag still being set (.It Xo ... .Xc runs over lines)
        self.lead: tuple[str, str] | None = None  # a nested item's tag and separator: its first paragraph's start
        self.reference: list[tuple[str, str]] | None = None  # the fields of an .Rs reference so far
        self.table: str | None = None  # in a tbl table: its "format" lines, then its "data"
        self.last = ""  # the last macro line's macro
        self.blocks: dict[str, Callable[[str, list[Token]], None]] = {
            "Sh": self._section, "Ss": self._section, "Bl": self._list_begin, "El": self._list_end,
            "It": self._list_item, "Bd": self._display_begin, "Ed": self._display_end, "D1": self._one_line,
            "Dl": self._one_line, "Rs": self._reference_begin, "Re": self._reference_end, "nf": self._unfilled,
            "fi": self._unfilled, "TS": self._table, "TE": self._table, "Ud": self._under_development,
            **dict.fromkeys(("Pp", "Lp", "br", "sp"), self._break),
        }

    # -- lines ---------------------------------------------------------------------------------

    def read(self, lines: list[str]) -> list[Event]:
        for line in text_lines(lines):
            self._line(line)
        self._close_all()
        return self.sink.finished()

    def _line(self, line: str) -> None:
        if not line.startswith((".", "'")):
            self._text(_COMMENT.sub("", line))
            return
        name, rest = request(line)
        args = tokens(_COMMENT.sub("", rest))
        if self.tag is not None:
            self.setter.macro_line(self.tag, name, args)
            self._tag_set()
        elif self._literal():
            self._literal_macro(name, args)
        elif name in self.blocks:
            self.blocks[name](name, args)
        elif name.startswith("%"):
            self._reference_field(name, args)
        elif self.setter.callable(Token(name)):
            self._macro(name, args)
        self.last = name  # anything else (.Dd, .Os, .Bk, .Tg, .if, .ds ...): layout

    def _text(self, line: str) -> None:
        if self.tag is not None:
            self.setter.text_line(self.tag, line)
        elif self._literal():
            self.code.append(unescape(line))
        elif self.table == "format":
            self.table = "data" if line.rstrip().endswith(".") else "format"
        elif not line.strip():
            self._flush()  # a blank line breaks the paragraph
        else:
            cells = line.replace("T{", "").replace("T}", "") if self.table else line
            if cells.strip() not in ("_", "="):
                self.setter.text_line(self.words, cells)

    def _macro(self, name: str, args: list[Token]) -> None:
        if self.section == "SYNOPSIS" and name in _SYNOPSIS_LINES and not (name in ("Fn", "Fo") and self.last == "Ft"):
            self._flush()
        self.setter.macro_line(self.words, name, args)

    def _literal(self) -> bool:
        return self.unfilled or any(self.displays)

    def _literal_macro(self, name: str, args: list[Token]) -> None:
        """In a literal display, a macro line is a line of it; the display ends at ``.Ed``."""
        if name in ("Ed", "Bd", "fi", "nf"):
            self.blocks[name](name, args)
        elif name in ("Pp", "Lp", "sp"):
            self.code.append("")
        elif self.setter.callable(Token(name)):
            line = Words()
            self.setter.macro_line(line, name, args)
            self.code.append(line.text())

    def _set(self, args: list[Token]) -> str:
        """Arguments (no macro of their own: a heading's, a tag's) set to their words."""
        words = Words()
        self.setter.macro_line(words, "", args)
        return words.text()

    # -- paragraphs, sections and displays -------------------------------------------------------

    def _flush(self) -> None:
        text = self.words.take()
        if self.lead is not None:
            (lead, separator), self.lead = self.lead, None
            text = f"{lead}{separator}{text}" if text and lead else (text or lead)
        self.sink.paragraph(text)

    def _break(self, _: str, __: list[Token]) -> None:
        self._flush()

    def _close_all(self) -> None:
        self._flush()
        if self.tag is not None:  # an .Xo never closed: the tag is what was set
            self.setter.extending = 0
            self._tag_set()
        self._end_code()
        self.displays.clear()
        self.unfilled = False
        self.lists.clear()
        self.sink.item = None

    def _section(self, name: str, args: list[Token]) -> None:
        self._close_all()
        heading = self._set(args)
        self.sink.heading(1 if name == "Sh" else 2, heading)
        if name == "Sh":
            self.section = heading.upper()

    def _end_code(self) -> None:
        self.sink.code("\n".join(self.code))
        self.code.clear()

    def _display_begin(self, _: str, args: list[Token]) -> None:
        self._flush()
        self.displays.append(any(arg.text in ("-literal", "-unfilled") for arg in args))

    def _display_end(self, _: str, __: list[Token]) -> None:
        if self.displays and self.displays.pop():
            self._end_code()
        else:
            self._flush()

    def _unfilled(self, name: str, _: list[Token]) -> None:
        if name == "nf":
            self._flush()
            self.unfilled = True
        else:
            self.unfilled = False
            self._end_code()

    def _one_line(self, name: str, args: list[Token]) -> None:
        """``.D1`` an indented line of text; ``.Dl`` a literal one (lines in a row, one display)."""
        self._flush()
        text = self._set(args)
        if name == "Dl":
            self.sink.code(text, join=self.last == "Dl")
        else:
            self.sink.paragraph(text)

    def _table(self, name: str, _: list[Token]) -> None:
        """tbl's ``.TS`` ... ``.TE``: its format lines are no text; its cells are read as lines."""
        self._flush()
        self.table = "format" if name == "TS" else None

    def _under_development(self, _: str, __: list[Token]) -> None:
        self.setter.text_line(self.words, "currently under development.")

    def _reference_begin(self, _: str, __: list[Token]) -> None:
        self._flush()
        self.reference = []

    def _reference_field(self, name: str, args: list[Token]) -> None:
        if self.reference is None:  # a field outside .Rs: its words
            self.setter.macro_line(self.words, "", args)
        else:
            self.reference.append((name, self._set(args)))

    def _reference_end(self, _: str, __: list[Token]) -> None:
        """"J. Schlyter and W. Griffin, Using DNS to ..., RFC 4255, January 2006." """
        fields = self.reference or []
        self.reference = None
        authors = [text for name, text in fields if name == "%A"]
        named = ", ".join(authors[:-1]) + ("," if len(authors) > 2 else "") + f" and {authors[-1]}" \
            if len(authors) > 1 else "".join(authors)
        parts = [named] if named else []
        parts += [text for name, text in sorted(fields, key=lambda f: _FIELD_ORDER.find(f[0][1:])) if name != "%A" and text]
        self.setter.text_line(self.words, ", ".join(parts) + "." if parts else "")
        self._flush()

    # -- lists ---------------------------------------------------------------------------------

    def _list_begin(self, _: str, args: list[Token]) -> None:
        self._flush()
        kinds = [arg.text for arg in args if arg.text in _TAGGED or arg.text in _MARKS or arg.text == "-column"]
        kind = kinds[0] if kinds else "-tag"
        listed = _List("tag" if kind in _TAGGED else "column" if kind == "-column" else "mark",
                       mark=_MARKS.get(kind, "•"), nested=self.sink.item is not None)
        self.lists.append(listed)

    def _list_end(self, _: str, __: list[Token]) -> None:
        self._flush()
        if self.lists and not self.lists.pop().nested:
            self.sink.item = None

    def _list_item(self, _: str, args: list[Token]) -> None:
        self._flush()
        if not self.lists:  # an item outside a list: its words are text
            self.setter.macro_line(self.words, "", args)
            return
        listed = self.lists[-1]
        if listed.kind == "column":
            self._row(listed, args)
        elif listed.kind == "tag":
            self.tag = Words()
            self.setter.macro_line(self.tag, "", args)
            self._tag_set()
        else:
            listed.number += 1
            mark = listed.mark or f"{listed.number}."
            if listed.nested:
                self.lead = (mark if not listed.mark else "", " ")
            else:
                self.sink.start_item(mark, bullet=True)
            self.setter.macro_line(self.words, "", args)

    def _tag_set(self) -> None:
        """The tag is complete unless an ``.Xo`` is still open: the item it tags begins."""
        if self.tag is None or self.setter.extending:
            return
        tag, self.tag = self.tag.take(), None
        item = self.sink.item
        if self.lists and self.lists[-1].nested:
            self.lead = (tag, ": ")
        elif item is not None and not item.parts and item.bullet is False and self.sink.events[-1] is item:
            item.tag = f"{item.tag}, {tag}" if item.tag else tag  # tags in a row share the description after them
        else:
            self.sink.start_item(tag, bullet=False)

    def _row(self, listed: _List, args: list[Token]) -> None:
        cells: list[list[Token]] = [[]]
        for arg in args:
            if arg.text == "Ta" and not arg.quoted:
                cells.append([])
            else:
                cells[-1].append(arg)
        texts = [self._set(cell) for cell in cells]
        listed.rows += 1
        if listed.rows == 1 and all(cell[0].text == "Sy" for cell in cells if cell):
            listed.header = texts
            return
        self.sink.row(Row(texts, listed.header or []))


def mdoc_events(lines: list[str]) -> list[Event]:
    """Sections, paragraphs, items, rows and code of a page in mdoc."""
    return _MdocReader().read(lines)
