"""Plain text: paragraphs are separated by blank lines and keep their line breaks.

Headings are the ones plain text writes: a line underlined (and perhaps overlined) with a
rule of one character about its length (Setext, reStructuredText-style: "Title" over
"====="), levels in the order the styles first appear; and the outline headings of GNU NEWS
files ("* Noteworthy changes in release 9.4", "** Bug fixes") when the file is in that form
(an outline line with nothing under it but its like is an entry of a list, not a heading,
unless it is shaped like the file's headings at its level: "* Changes in Wget 1.19.5" over
entries written at its own level, as older releases of a NEWS file often are); and the
margin headings of a file whose body is indented (an RFC's "1.  Introduction", a NEWS file's
"NEWS for the Nettle 3.8 release" over its tab-indented notes): a one-line paragraph at the
margin over an indented one, when most paragraphs are indented. These head sections, never
title the file. A rule standing alone is layout, not text. The title is the first heading when it opens the
file. A commented configuration file is read through ``config.uncommented``.
"""

from __future__ import annotations

import re

from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder, split_paragraphs
from citewell.parsers.config import is_commented_config, uncommented
from citewell.parsers.sniff import MIME, Kind
from citewell.parsers.titles import choose

_RULE = re.compile(r"^([=\-~^*+#_])\1{2,}\s*$")
_OUTLINE = re.compile(r"^(\*{1,4}) (\S.*)$")
_OUTLINE_MODE = re.compile(r"-\*-\s*(?:mode:\s*)?outline\s*-\*-", re.IGNORECASE)
_NUMBERS = re.compile(r"\d+(?:[.\-]\d+)*")
TITLE_CHARS = 120  # an underlined line longer than this is prose over a rule


def _underlines(title: str, rule: str) -> bool:
    """Whether ``rule`` is drawn under ``title``: about its length (a little short or long)."""
    title, rule = title.strip(), rule.strip()
    if not title or len(title) > TITLE_CHARS or _RULE.match(title) or title[0] in " \t":
        return False
    return 0.7 * len(title) <= len(rule) <= 1.3 * len(title) + 3


class _Styles:
    """Heading levels by underline style, in the order the styles first appear."""

    def __init__(self) -> None:
        self._seen: list[tuple[str, bool]] = []

    def level(self, char: str, overlined: bool) -> int:
        style = (char, overlined)
        if style not in self._seen:
            self._seen.append(style)
        return self._seen.index(style) + 1


def _outline(paragraphs: list[str], first_line: str) -> bool:
    """A GNU-style outline: one-line paragraphs starting "* " and "** " at the margin, or a
    ``-*- outline -*-`` mode line."""
    if _OUTLINE_MODE.search(first_line):
        return True
    single = [m.group(1) for p in paragraphs if "\n" not in p and (m := _OUTLINE.match(p))]
    return single.count("*") >= 2 and single.count("**") >= 2


def _outline_line(paragraph: str) -> re.Match[str] | None:
    return _OUTLINE.match(paragraph.split("\n", 1)[0])


def _shape(title: str) -> str:
    """A heading's words with its numbers (versions, dates) as one mark: "Changes in Wget 1.21"
    and "Changes in Wget 1.19.5" are one shape."""
    return _NUMBERS.sub("#", title).strip().lower()


def _outline_heads(paragraphs: list[str]) -> list[re.Match[str] | None]:
    """For each paragraph, its outline match if it is a heading, else None. A heading has
    something under it (a paragraph that is not an outline line, or one a level deeper), or
    has the shape of a heading found so at its level."""
    matches = [_outline_line(p) for p in paragraphs]
    heads: list[re.Match[str] | None] = [None] * len(paragraphs)
    shapes: set[tuple[int, str]] = set()
    for number, (paragraph, match) in enumerate(zip(paragraphs, matches)):
        if match is None or "\n" in paragraph or number + 1 == len(paragraphs):
            continue
        following = matches[number + 1]
        if following is None or len(following.group(1)) > len(match.group(1)):
            heads[number] = match
            shapes.add((len(match.group(1)), _shape(match.group(2))))
    for number, match in enumerate(matches):
        if heads[number] is None and match is not None and "\n" not in paragraphs[number] \
                and (len(match.group(1)), _shape(match.group(2))) in shapes:
            heads[number] = match
    return heads


def _indented(paragraph: str) -> bool:
    return all(line[:1] in (" ", "\t") for line in paragraph.split("\n") if line.strip())


_MARGIN_HEADING = re.compile(r"^[^\s*#=\-][^\n]*[^\s.,;:]$")


def _margin_heads(paragraphs: list[str]) -> list[bool]:
    """For each paragraph, whether it is a margin heading (see the module's docstring): none
    unless most paragraphs are indented and at least two such headings are found."""
    indented = [_indented(p) for p in paragraphs]
    heads = [i + 1 < len(paragraphs) and indented[i + 1] and "\n" not in p and len(p) <= TITLE_CHARS
             and bool(_MARGIN_HEADING.match(p)) and any(c.isalpha() for c in p)
             for i, p in enumerate(paragraphs)]
    if sum(heads) < 2 or 5 * sum(indented) < 3 * len(paragraphs):
        return [False] * len(paragraphs)
    return heads


def parse_plain(text: str) -> ParsedDocument:
    if is_commented_config(text):
        text = uncommented(text)
    builder = TextBuilder()
    styles = _Styles()
    paragraphs = split_paragraphs(text)
    outline = bool(paragraphs) and _outline(paragraphs, paragraphs[0].split("\n", 1)[0])
    heads = _outline_heads(paragraphs) if outline else [None] * len(paragraphs)
    margins = [False] * len(paragraphs) if outline else _margin_heads(paragraphs)
    for paragraph, head, margin in zip(paragraphs, heads, margins):
        match = _outline_line(paragraph) if outline else None
        if margin:
            builder.heading(1, paragraph)
        elif match is None:
            _paragraph(builder, paragraph.split("\n"), styles)
        elif head is not None:  # something under it, or shaped like the headings at its level
            builder.heading(len(head.group(1)), head.group(2))
        else:  # "** Fix a double free in FTP" among its like: an entry of the release above
            builder.block(BlockKind.LIST_ITEM, paragraph[len(match.group(1)) + 1 :])
    title = builder.first_heading if builder.opens_with_heading and not margins[0] else None
    return builder.build(MIME[Kind.TEXT], title=choose(title))


def _paragraph(builder: TextBuilder, lines: list[str], styles: _Styles) -> None:
    """One paragraph's lines: a heading where its first lines are an (over)underlined title,
    the rest as text (the author's line breaks kept)."""
    while lines:
        overlined = len(lines) >= 3 and bool(_RULE.match(lines[0])) and _underlines(lines[1], lines[0]) \
            and lines[2].strip() == lines[0].strip()
        if overlined:
            builder.heading(styles.level(lines[0].strip()[0], True), lines[1])
            lines = lines[3:]
            continue
        if len(lines) >= 2 and _RULE.match(lines[1]) and _underlines(lines[0], lines[1]):
            builder.heading(styles.level(lines[1].strip()[0], False), lines[0])
            lines = lines[2:]
            continue
        if all(_RULE.match(line) for line in lines):
            return  # a rule between parts of the file: layout
        builder.block(BlockKind.CODE, "\n".join(lines))  # keep the author's line breaks
        return
