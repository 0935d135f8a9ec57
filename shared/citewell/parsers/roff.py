"""Manual pages as roff source (the man macros: ``.TH``, ``.SH``, ``.TP``), read without groff.

Only what gives structure is interpreted: sections (``.SH``, ``.SS``), paragraphs (``.PP``,
``.LP``, ``.P``, ``.sp``), tagged paragraphs (``.TP``, ``.IP tag``) as items, unfilled text
(``.nf``/``.fi``, ``.EX``/``.EE``) as code, and the font macros (``.B``, ``.BR``) as their
text. Escapes are reduced to the characters they print; other requests are dropped. The
result has the shape of a rendered page, so it is built the same way
(``citewell.parsers.manpage``). BSD's mdoc macros (``.Sh``, ``.Bl``, ``.Fl``) are read by
:mod:`citewell.parsers.mdoc` from the same escapes and the same :class:`EventSink`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator

from citewell.parsers.man_events import Code, Event, Heading, Item, Paragraph, Row

_NAMED = {"em": "—", "en": "–", "aq": "'", "dq": '"', "bu": "•", "lq": "“", "rq": "”", "oq": "‘", "cq": "’",
          "co": "©", "rg": "®", "tm": "™", "mi": "-", "hy": "-", "ti": "~", "ha": "^", "ga": "`", "bv": "|",
          "Fo": "«", "Fc": "»", "sl": "/", "rs": "\\", "pl": "+", "eq": "=", "ci": "○", "sq": "□", "->": "→",
          "<-": "←", "<=": "≤", ">=": "≥", "!=": "≠", "+-": "±", "mu": "×", "di": "÷", "de": "°", "at": "@",
          "sh": "#", "Do": "$", "ct": "¢", "Po": "£", "Ye": "¥", "Eu": "€", "aa": "´", "ua": "↑", "da": "↓",
          # mdoc's strings (\*q, \*(Lq, \*(Ba ...)
          "q": '"', "Lq": "“", "Rq": "”", "Ba": "|", "Lt": "<", "Gt": ">", "Le": "≤", "Ge": "≥", "Ne": "≠",
          "Am": "&", "Pm": "±", "If": "∞", "Na": "NaN", "Pi": "π", "Ua": "↑", "Da": "↓", "Tm": "™"}
_ESCAPE = re.compile(r"\\(?:f(?:\[[^\]]*\]|\(..|.)|\((..)|\[([^\]]*)\]|\*(?:\[([^\]]*)\]|\((..)|(.))|[sS][+-]?\d+|"
                     r"[hvwlLoxXNkzb]'[^']*'|n(?:\(..|\[[^\]]*\]|.)|(.))")
# One-character escapes by what they print. groff's zero-width ones (``\&`` ``\)`` ``\%``, the
# italic corrections ``\/`` ``\,`` that ``help2man`` pages put around every \fI word, the break
# point ``\:``, the thin spaces ``\|`` ``\^``, the half-line motions ``\u`` ``\d`` ``\r``, the
# break ``\p``) print nothing; the fixed spaces (``\ `` ``\~`` ``\0``) a space. Any other
# character escaped prints as itself (``\-``, ``\.``, ``\'``).
_SINGLE = {"e": "\\", "E": "\\", " ": " ", "~": " ", "0": " ", "t": "\t", "|": "", "^": "", "&": "", ")": "",
           "%": "", ",": "", "/": "", ":": "", "c": "", "u": "", "d": "", "r": "", "p": "", "a": ""}
_ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}
_DEFINING = {"de", "de1", "am", "am1", "ig"}  # requests whose lines up to ".." are a definition, not text
_FONT = {"B", "I", "SM", "SB", "R"}
_PARAGRAPH = {"PP", "LP", "P", "sp", "br", "HP"}
# DocBook's pages draw a list's mark by hand for nroff (``\h'-04'\(bu\h'+03'\c``) and again
# with ``.IP \(bu`` for troff; read as both, the hand-drawn one is a stray "•".
_DRAWN_MARK = re.compile(r"\s*(?:[•○◦·▪‣∙]|\d{1,2}[.)])\s*")
_BULLETS = {"•", "○", "◦", "·", "▪", "‣", "∙", "-", "–", "*", "o", "+"}  # .IP's tag as a list's mark


def unescape(text: str) -> str:
    """What roff prints for ``text``: named characters and strings as their characters, font
    changes, sizes, motions and registers as nothing."""

    def replace(match: re.Match[str]) -> str:
        two, bracket, string_bracket, string_two, string_one, single = match.groups()
        name = two or bracket or string_bracket or string_two or string_one
        if name is not None:
            return _NAMED.get(name, "")
        if single is not None:
            return _SINGLE.get(single, single)
        return ""  # a font change, a size, a motion, a register

    return _ESCAPE.sub(replace, text)


def _arguments(rest: str) -> list[str]:
    """A request's arguments, split at spaces outside double quotes. Backslashes are kept from
    ``shlex``, which would take ``\\^`` for an escaped ``^`` (grep's page read ``-^-ignore-case``):
    escapes are roff's, read by ``unescape``."""
    kept = rest.replace("\\\"", "\x00").replace("\\", "\x01")
    try:
        args = shlex.split(kept, posix=True)
    except ValueError:  # an unbalanced quote: words as they are
        args = kept.split()
    return [arg.replace("\x01", "\\") for arg in args]


def _macro_text(name: str, rest: str) -> str:
    args = _arguments(rest)
    if name in _ALTERNATING:
        return unescape("".join(args))
    return unescape(" ".join(args))


_END = re.compile(r"^[.']\s*\.\s*$")  # "..", or ".  ." as Asciidoctor indents it inside a block


def definitions(lines: list[str]) -> set[int]:
    """The numbers of the lines that define a macro (``.de`` / ``.am`` / ``.ig`` up to the line
    that ends it), which are no text. A definition that never ends is taken for none: its lines
    are read as text rather than the rest of the page dropped."""
    inside: set[int] = set()
    start: int | None = None
    for number, line in enumerate(lines):
        if start is None:
            words = line[1:].split() if line.startswith((".", "'")) else []
            if words and words[0] in _DEFINING:
                start = number
        elif _END.match(line):
            inside.update(range(start, number + 1))
            start = None
    return inside


def is_comment(line: str) -> bool:
    """A comment line (``.\\"``), or a request with no name (``.`` alone): no text."""
    return line.startswith(('.\\"', "'\\\"", '.\\\\"')) or line.rstrip() in (".", "'")


def text_lines(lines: list[str]) -> Iterator[str]:
    """The page's lines a reader reads, without their line ends: neither macro definitions
    (``definitions``) nor comments (``is_comment``). Both the man(7) and the mdoc readers read these."""
    defined = definitions(lines)
    for number, raw in enumerate(lines):
        line = raw.rstrip("\n")
        if number not in defined and not is_comment(line):
            yield line


def request(line: str) -> tuple[str, str]:
    """A request or macro line's name and the rest of it: ``.SH "EXIT STATUS"`` is ``SH``, ``"EXIT STATUS"``."""
    name, _, rest = line[1:].strip().partition(" ")
    return name, rest.strip()


class EventSink:
    """What a reader has read so far: the page's events, and the item whose description is
    being read (a paragraph or an example goes into it while there is one)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.item: Item | None = None

    def paragraph(self, text: str) -> None:
        if text:
            (self.item.parts if self.item is not None else self.events).append(Paragraph(text))

    def code(self, text: str, *, join: bool = False) -> None:
        """An example; ``join`` adds it to an example just before it (one display over lines)."""
        text = text.strip("\n")
        if not text:
            return
        into = self.item.parts if self.item is not None else self.events
        if join and into and isinstance(into[-1], Code):
            into[-1] = Code(into[-1].text + "\n" + text)
        else:
            into.append(Code(text))

    def row(self, row: Row) -> None:
        (self.item.parts if self.item is not None else self.events).append(row)

    def heading(self, level: int, text: str) -> None:
        self.item = None
        self.events.append(Heading(level, text))

    def start_item(self, tag: str, *, bullet: bool | None = None) -> None:
        self.item = Item(tag, bullet=bullet)
        self.events.append(self.item)

    def finished(self) -> list[Event]:
        return [e for e in self.events if not isinstance(e, Item) or e.tag]


class _ManReader:
    """The man(7) macros, line by line: requests that shape the page are handled by name, the
    font macros give their text, and a line of text fills the paragraph (or is ``.TP``'s tag)."""

    def __init__(self) -> None:
        self.sink = EventSink()
        self.text: list[str] = []
        self.pending_tag = False  # after .TP the next text line is the tag
        self.unfilled = False
        self.code: list[str] = []
        self.depth = 0  # how many .RS deep the text is
        self.item_depth = 0  # and the item being read
        self.requests: dict[str, Callable[[str, str], None]] = {
            "RS": self._indent, "RE": self._indent,
            "fi": self._end_unfilled, "EE": self._end_unfilled, "nf": self._start_unfilled, "EX": self._start_unfilled,
            "SH": self._heading, "SS": self._heading, "TP": self._tagged_paragraph, "IP": self._indented_paragraph,
            **dict.fromkeys(_PARAGRAPH, self._paragraph),
        }

    def read(self, lines: list[str]) -> list[Event]:
        for line in text_lines(lines):
            self._line(line)
        self._end_item()
        if self.code:  # an unfilled block the page never ended
            self.sink.events.append(Code("\n".join(self.code)))
        return self.sink.finished()

    def _line(self, line: str) -> None:
        if self.unfilled and not line.startswith((".fi", ".EE")):
            self.code.append(unescape(line))
            return
        if not line.startswith((".", "'")):
            text = unescape(line)
            if not (line.endswith("\\c") and _DRAWN_MARK.fullmatch(text)):
                self._text(text)
            return
        name, rest = request(line)
        handler = self.requests.get(name)
        if handler is not None:
            handler(name, rest)
        elif name in _FONT or name in _ALTERNATING:
            self._text(_macro_text(name, rest))
        # .TH, .RS, .RE, .in, .ad, .hy and the rest: layout

    def _text(self, line: str) -> None:
        if self.pending_tag:
            self.pending_tag = False
            self.flush()
            self.item_depth = self.depth
            self.sink.start_item(line.strip())
        else:
            self.text.append(line)

    def flush(self) -> None:
        joined = " ".join(t.strip() for t in self.text if t.strip())
        self.text.clear()
        self.sink.paragraph(joined)

    def _end_item(self) -> None:
        self.flush()
        self.sink.item = None

    def _start_unfilled(self, _: str, __: str) -> None:
        self.flush()
        self.unfilled = True

    def _end_unfilled(self, _: str, __: str) -> None:
        self.unfilled = False
        self.sink.code("\n".join(self.code))
        self.code.clear()

    def _heading(self, name: str, rest: str) -> None:
        self.flush()
        self.sink.heading(1 if name == "SH" else 2, _macro_text(name, rest))
        self.pending_tag = False

    def _tagged_paragraph(self, _: str, __: str) -> None:
        self._end_item()
        self.pending_tag = True

    def _indented_paragraph(self, _: str, rest: str) -> None:
        """``.IP tag``: an item; ``.IP \\(bu``: a list item, unless it is indented under an item
        (then it is a paragraph of that item's description); ``.IP`` alone: the item goes on, a
        paragraph more; ``.IP "" 0``: back at the margin, the list is over."""
        args = _arguments(rest)
        tag = unescape(args[0]).strip() if args else ""
        if tag in _BULLETS and self.sink.item is not None and self.depth > self.item_depth:
            self.flush()
        elif tag:
            self._end_item()
            self._start_item(tag)
        elif args[1:2] == ["0"]:
            self._end_item()
        else:
            self.flush()

    def _start_item(self, tag: str) -> None:
        self.item_depth = self.depth
        if tag in _BULLETS:
            self.sink.start_item("•", bullet=True)
        else:
            self.sink.start_item(tag)

    def _indent(self, name: str, _: str) -> None:
        """``.RS``/``.RE``: an ``.RE`` back out of the indent an item began in ends the item
        (DocBook's bullets each sit in an ``.RS``; the text after the list is no part of the last)."""
        self.depth = self.depth + 1 if name == "RS" else max(0, self.depth - 1)
        if self.depth < self.item_depth:
            self._end_item()
            self.item_depth = self.depth

    def _paragraph(self, name: str, _: str) -> None:
        if name in ("PP", "LP", "P"):
            self._end_item()
        else:
            self.flush()


def roff_events(lines: list[str]) -> list[Event]:
    """Sections, paragraphs, items and code of a man page's roff source."""
    return _ManReader().read(lines)
