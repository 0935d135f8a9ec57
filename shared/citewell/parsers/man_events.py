"""What a manual page reads as, rendered or in roff: the events both readers emit, and how a
page is known by its content (sniffing asks this; neither reader is needed to answer it)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# "GIT-STASH(1)   Git Manual   GIT-STASH(1)", "LS(1)   LS(1)": the page name, then the same
# again; or the name alone ("CARGO-PROFILES(5)"), as a page rendered narrow or trimmed heads it.
HEADER = re.compile(r"^(?P<page>[^\s()]+\([0-9][\w]*\))(?:(?:\s+.*)?\s+(?P=page))?\s*$")
OVERSTRIKE = re.compile(r".\x08")  # "N\bNA\bA": bold and underline as a terminal draws them
ROFF_START = re.compile(r"^\.(?:TH|Dd|SH|Sh)\b", re.MULTILINE)
_IGNORE = re.compile(r"^[.']\s*ig\b")
_IGNORE_END = re.compile(r"^[.']\s*\.\s*$")


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Paragraph:
    text: str


@dataclass
class Code:
    text: str


@dataclass
class Row:
    """A table's row: its cells, and the header's (empty where the table has none)."""

    cells: list[str]
    header: list[str] = field(default_factory=list)


Part = Paragraph | Code | Row  # what describes an item


@dataclass
class Item:
    """A tag and what describes it: paragraphs, examples indented deeper (as code), tables.
    ``bullet`` says whether it is a list item (its tag a bullet or a number, its text all it
    says) or a tag described (an option, a keyword); ``None`` where only the tag can tell (a
    rendered page's ``•``)."""

    tag: str
    parts: list[Part] = field(default_factory=list)
    bullet: bool | None = None


Event = Heading | Paragraph | Code | Item | Row


def looks_like_manpage(text: str) -> bool:
    """Rendered: a NAME heading over an indented line, under the running header or followed
    by a SYNOPSIS or DESCRIPTION heading. Roff: a ``.TH`` (or mdoc's ``.Dd``) before any text."""
    text = OVERSTRIKE.sub("", text)
    lines = [line.rstrip() for line in text.splitlines()[:400]]
    body = [line for line in lines if line.strip()]
    if not body:
        return False
    if roff_first(body):
        return True
    header = bool(HEADER.match(body[0].strip()))
    start = 1 if header else 0
    if len(body) < start + 2 or body[start] != "NAME" or not body[start + 1].startswith(" "):
        return False
    return header or any(line in ("SYNOPSIS", "DESCRIPTION") for line in body[start + 2 :])


def roff_first(body: list[str]) -> bool:
    """A roff title or section request comes before any line of text: what precedes it are
    comments and other requests (grep's page defines a macro and strings before its ``.TH``;
    ssh-copy-id's puts its licence in an ``.ig`` block, text that roff ignores)."""
    ignoring = False
    for line in body:
        if ignoring:
            ignoring = not _IGNORE_END.match(line)
        elif ROFF_START.match(line):
            return True
        elif _IGNORE.match(line):
            ignoring = True
        elif not line.startswith((".", "'")):  # a line of text before any title: not roff source
            return False
    return False
