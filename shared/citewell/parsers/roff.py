"""Manual pages as roff source (the man macros: ``.TH``, ``.SH``, ``.TP``), read without groff.

Only what gives structure is interpreted: sections (``.SH``, ``.SS``), paragraphs (``.PP``,
``.LP``, ``.P``, ``.sp``), tagged paragraphs (``.TP``, ``.IP tag``) as items, unfilled text
(``.nf``/``.fi``, ``.EX``/``.EE``) as code, and the font macros (``.B``, ``.BR``) as their
text. Escapes are reduced to the characters they print; other requests are dropped. The
result has the shape of a rendered page, so it is built the same way
(``citewell.parsers.manpage``).
"""

from __future__ import annotations

import re
import shlex

from citewell.parsers.man_events import Code, Event, Heading, Item, Paragraph

_NAMED = {"em": "—", "en": "–", "aq": "'", "dq": '"', "bu": "•", "lq": "“", "rq": "”", "oq": "‘", "cq": "’",
          "co": "©", "rg": "®", "tm": "™", "mi": "-", "hy": "-", "ti": "~", "ha": "^", "ga": "`", "bv": "|",
          "Fo": "«", "Fc": "»", "sl": "/", "rs": "\\", "pl": "+", "eq": "="}
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


def _unescape(text: str) -> str:
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
    escapes are roff's, read by ``_unescape``."""
    kept = rest.replace("\\\"", "\x00").replace("\\", "\x01")
    try:
        args = shlex.split(kept, posix=True)
    except ValueError:  # an unbalanced quote: words as they are
        args = kept.split()
    return [arg.replace("\x01", "\\") for arg in args]


def _macro_text(name: str, rest: str) -> str:
    args = _arguments(rest)
    if name in _ALTERNATING:
        return _unescape("".join(args))
    return _unescape(" ".join(args))


_END = re.compile(r"^[.']\s*\.\s*$")  # "..", or ".  ." as Asciidoctor indents it inside a block


def _definitions(lines: list[str]) -> set[int]:
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


def roff_events(lines: list[str]) -> list[Event]:
    """Sections, paragraphs, items and code of a man page's roff source."""
    events: list[Event] = []
    text: list[str] = []
    item: Item | None = None
    pending_tag = False  # after .TP the next text line is the tag
    unfilled = False
    code: list[str] = []

    def flush() -> None:
        if not text:
            return
        joined = " ".join(t.strip() for t in text if t.strip())
        text.clear()
        if not joined:
            return
        if item is not None:
            item.parts.append(Paragraph(joined))
        else:
            events.append(Paragraph(joined))

    def end_item() -> None:
        nonlocal item
        flush()
        item = None

    definitions = _definitions(lines)
    for number, raw in enumerate(lines):
        line = raw.rstrip("\n")
        if number in definitions:
            continue
        if line.startswith(('.\\"', "'\\\"", '.\\\\"')) or line in (".", "'"):
            continue
        if unfilled and not line.startswith((".fi", ".EE")):
            code.append(_unescape(line))
            continue
        if line.startswith((".", "'")):
            name, _, rest = line[1:].strip().partition(" ")
            if name in ("fi", "EE"):
                unfilled = False
                block = Code("\n".join(code).strip("\n"))
                code.clear()
                if block.text:
                    (item.parts if item is not None else events).append(block)
                continue
            if name in ("nf", "EX"):
                flush()
                unfilled = True
                continue
            if name in ("SH", "SS"):
                end_item()
                events.append(Heading(1 if name == "SH" else 2, _macro_text(name, rest)))
                pending_tag = False
                continue
            if name == "TP":
                end_item()
                pending_tag = True
                continue
            if name == "IP":
                args = _arguments(rest)
                tag = _unescape(args[0]) if args else ""
                if tag and tag not in ("\\(bu", "•", "-", "*"):
                    end_item()
                    item = Item(tag)
                    events.append(item)
                else:
                    flush()
                continue
            if name in _PARAGRAPH:
                if name in ("PP", "LP", "P"):
                    end_item()
                else:
                    flush()
                continue
            if name in _FONT or name in _ALTERNATING:
                line = _macro_text(name, rest)
            else:
                continue  # .TH, .RS, .RE, .in, .ad, .hy and the rest: layout
        else:
            line = _unescape(line)
        if pending_tag:
            pending_tag = False
            item = Item(line.strip())
            events.append(item)
            continue
        text.append(line)
    end_item()
    if code:
        events.append(Code("\n".join(code)))
    return [e for e in events if not isinstance(e, Item) or e.tag]
