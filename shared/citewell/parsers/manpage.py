"""Manual pages: rendered to text (``man foo | col -b``) or as roff source, in the man macros
(``.TH``, ``.SH``: ``citewell.parsers.roff``) or BSD's mdoc (``.Dd``, ``.Sh``: ``citewell.parsers.mdoc``).

No library reads rendered pages, and groff may not be installed, so all are read here into
one shape: all-caps headings at column 0 (NAME, SYNOPSIS, OPTIONS) are sections, lines
indented less than the body are sub-headings, and a tag (an option, a command, a setting)
with its description indented further, or on its line after a gap (``-4      Forces ssh to
use IPv4``), is one record, ``option: -n, --dry-run; description: ...``. A bullet (``•``,
``○``) is a list item of the text after it, unless that text names an option first
(``○ --rm: remove source files``): then it is the option's record. The running header and
footer (``GIT-STASH(1)  Git Manual  GIT-STASH(1)``, mdoc's ``BSD  January 13, 2023  BSD``)
are dropped; the title is the NAME line ("git-stash - Stash the changes ...").

A record holds its description up to about a chunk's worth of words (``RECORD_WORDS``): a
record cut across two chunks would no longer read as one. What is longer follows it as
paragraphs in the same section.
"""

from __future__ import annotations

import re
from collections import Counter

from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder
from citewell.parsers.man_events import HEADER, OVERSTRIKE, Code, Event, Heading, Item, Paragraph, Part, roff_first
from citewell.parsers.mdoc import is_mdoc, mdoc_events
from citewell.parsers.records import record, record_text
from citewell.parsers.roff import roff_events
from citewell.parsers.sniff import MIME, Kind
from citewell.parsers.titles import choose

RECORD_WORDS = 110  # the chunker's budget is 200 tokens; man text runs about 1.4 tokens a word

# "Git 2.39.5    10/07/2025    GIT-STASH(1)", "systemd 252    JOURNALD.CONF(5)"
_FOOTER = re.compile(r"^\S.*\S\s{3,}(?:.*\s{2,})?[^\s()]+\([0-9][\w]*\)\s*$")
_MDOC_FOOTER = re.compile(r"^(?P<system>\S(?:.*\S)?)\s{3,}\S.*\S\s{3,}(?P=system)$")  # "BSD   January 13, 2023   BSD"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")

# The field that names a tag is what its section lists: "OPTIONS" lists options, "EXIT VALUES"
# exit values. These sections list something their name does not say.
_TAG_FIELD = {"DESCRIPTION": "term", "ENVIRONMENT": "variable", "CONFIGURATION": "setting"}
_SINGULAR = re.compile(r"(?<![su])s$")  # "OPTIONS" -> "option"; "EXIT STATUS" stays


def parse_manpage(text: str) -> ParsedDocument:
    text = OVERSTRIKE.sub("", text)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    body = [line for line in lines if line.strip()]
    if body and roff_first(body):
        events = mdoc_events(lines) if is_mdoc(lines) else roff_events(lines)
    else:
        events = rendered_events(lines)
    return _build(events)


# -- rendered text --------------------------------------------------------------------------


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _join(lines: list[str]) -> str:
    """Wrapped lines as one: a hyphenation break (U+2010 at the end) is undone, a hyphen that
    ends a line ("git-" / "switch(1)") is kept without a space."""
    out = ""
    for line in (line.strip() for line in lines):
        if not line:
            continue
        if out.endswith("\u2010") and line[:1].isalpha():
            out = out[:-1] + line
        elif out.endswith("-") and not out.endswith(" -") and line[:1].isalpha():
            out += line
        else:
            out = f"{out} {line}" if out else line
    return out


def _drop_running_lines(lines: list[str]) -> list[str]:
    """Without the header (and its repeats at page breaks) and the footer: classic ("Git 2.39.5
    10/07/2025  GIT-STASH(1)", or the page's name alone), or mdoc's ("BSD  January 13, 2023  BSD")."""
    lines = [line.expandtabs().rstrip() for line in lines]
    first = next((line.strip() for line in lines if line.strip()), "")
    header = HEADER.match(first)
    page = header.group("page") if header else None
    kept = []
    for line in lines:
        stripped = line.strip()
        if header and stripped in (first, page):
            continue
        if line[:1] not in ("", " ") and (_FOOTER.match(line) and (page is None or stripped.endswith(page))
                                          or header and _MDOC_FOOTER.match(line)):
            continue
        kept.append(line)
    return kept


class _RenderedReader:
    """A page rendered to text, block by block: each reader takes the block at a line if it is
    its kind (a heading, a bullet, a tagged item ...) and says where the block ends."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = _drop_running_lines(lines)
        self.base = _body_indent(self.lines)
        self.events: list[Event] = []
        self.section = ""

    def read(self) -> list[Event]:
        i = 0
        while i < len(self.lines):
            i = self._block(i)
        return self.events

    def _block(self, i: int) -> int:
        line = self.lines[i]
        if not line.strip():
            return i + 1
        indent = _indent(line)
        if indent < self.base:
            return self._heading(i, indent)
        run_end = i
        while run_end < len(self.lines) and self.lines[run_end].strip() and _indent(self.lines[run_end]) == indent:
            run_end += 1
        for reader in (self._synopsis, self._bullet, self._two_columns, self._tagged, self._indented):
            end = reader(i, run_end, indent)
            if end is not None:
                return end
        self.events.append(Paragraph(_join(self.lines[i:run_end])))
        return run_end

    def _deeper(self, run_end: int, indent: int) -> int | None:
        """The indent of the line after a run when it is deeper than the run."""
        if run_end < len(self.lines) and self.lines[run_end].strip() and _indent(self.lines[run_end]) > indent:
            return _indent(self.lines[run_end])
        return None

    def _heading(self, i: int, indent: int) -> int:
        if indent == 0:
            self.section = self.lines[i].strip()
            self.events.append(Heading(1, self.section))
        else:
            self.events.append(Heading(2, self.lines[i].strip()))
        return i + 1

    def _synopsis(self, i: int, _: int, __: int) -> int | None:
        if self.section.upper() != "SYNOPSIS":
            return None
        end = _block_end(self.lines, i, self.base - 1, stop_at_blank=True)  # lines as written, up to a blank line
        self.events.append(Code(_dedent(self.lines[i:end])))
        return end

    def _bullet(self, i: int, _: int, indent: int) -> int | None:
        """``•   text`` (``○``, ``·``; ``o`` or ``*`` in a list of them): a list item, the text after
        the bullet and the lines under it."""
        column = _bullet_column(self.lines, i)
        if column is None:
            return None
        end = next_line = i + 1
        while next_line < len(self.lines):  # its lines, and the paragraphs and examples under it
            line = self.lines[next_line]
            if line.strip() and (_indent(line) <= indent or _bullet_column(self.lines, next_line) is not None):
                break
            next_line += 1
            end = next_line if line.strip() else end
        described = [" " * column + self.lines[i][column:], *self.lines[i + 1 : end]]
        self.events.append(Item("•", _description(described, column), bullet=True))
        return end

    def _two_columns(self, i: int, run_end: int, indent: int) -> int | None:
        """Tags with their description on the same line, at one column: ``-4      Forces ssh to use
        IPv4 addresses only.``, or a compact list of them (``C-b    Send the prefix key``); the
        last one's description may go on in the lines under it, at that column."""
        entries = [_TWO_COLUMNS.match(line) for line in self.lines[i:run_end]]
        found = [entry for entry in entries if entry]
        columns = {entry.start("text") for entry in found}
        texts = [entry["text"] for entry in found]
        if len(found) < len(entries) or len(columns) != 1 or not _listed_tags([entry["tag"] for entry in found]) \
                or not _described(texts, example=indent > self.base):
            return None
        column = columns.pop()
        deeper = self._deeper(run_end, indent)
        if deeper is not None and deeper != column:
            return None
        end = _block_end(self.lines, run_end - 1, indent, stop_at_blank=False) if deeper else run_end
        for entry in found[:-1]:  # a tag of its own ("-", "o" keys), bullets having been read before
            self.events.append(Item(entry["tag"], [Paragraph(entry["text"])], bullet=False))
        last = [" " * column + found[-1]["text"], *self.lines[run_end:end]]
        self.events.append(Item(found[-1]["tag"], _description(last, column), bullet=False))
        return end

    def _tagged(self, i: int, run_end: int, indent: int) -> int | None:
        """A tag (a line or a few) over its description, indented deeper."""
        run = self.lines[i:run_end]
        described = self._deeper(run_end, indent)
        if described is None or not (len(run) <= 3 or _tag_like(run)):
            return None
        tag_lines, first = _split_inline_tag(run, described)
        end = _block_end(self.lines, run_end, indent, stop_at_blank=False)
        described_lines = ([" " * described + first] if first else []) + self.lines[run_end:end]
        self.events.append(Item(_tag(tag_lines), _description(described_lines, described)))
        return end

    def _indented(self, i: int, _: int, indent: int) -> int | None:
        """Text indented deeper than the body's, up to a blank line: an example."""
        if indent <= self.base:
            return None
        end = _block_end(self.lines, i, self.base, stop_at_blank=True)
        self.events.append(Code(_dedent(self.lines[i:end])))
        return end


def rendered_events(lines: list[str]) -> list[Event]:
    """The sections, paragraphs, code and tagged items of a page rendered to text."""
    return _RenderedReader(lines).read()


# A line of a list in two columns: the tag, a gap of two spaces or more, its description.
_TWO_COLUMNS = re.compile(r"^ *(?P<tag>\S+(?: \S+){0,3})  +(?P<text>\S.*)$")
_OPTION_TAG = re.compile(r"[-+]{1,2}[\w#?@\[]")
_UNICODE_BULLET = re.compile(r"^ *[•·○◦▪‣∙●■□⁃] +(?=\S)")
_ASCII_BULLET = re.compile(r"^( *)([-*+oO]) +(?=\S)")


def _listed_tags(tags: list[str]) -> bool:
    """Tags, not prose that happens to break at one column: an option alone, or a few short
    tags in a row none of which ends a sentence ("C-b", "0 to 9", ".")."""
    if len(tags) == 1:
        return bool(_OPTION_TAG.match(tags[0])) and len(tags[0]) <= 40
    return all(len(tag) <= 24 and (len(tag) == 1 or tag[-1] not in ".,;:") for tag in tags)


def _described(texts: list[str], *, example: bool) -> bool:
    """What follows the tags reads as descriptions: not a third column (a table), nor the
    right-hand sides of a grammar or a configuration (``pathname   = *( %x01-ff )``); indented as
    deep as an example, sentences (``C-b   Send the prefix key``, not ``auth   required pam_unix.so``)."""
    return not any("   " in text or text.startswith(("=", ":=", "|")) or example and not text[0].isupper()
                   for text in texts)


def _bullet_column(lines: list[str], i: int) -> int | None:
    """Where the text of a list item starts, when line ``i`` is one: a bullet drawn as a bullet
    (``•``, ``○``, ``·``), or an ASCII one (``o``, ``*``, ``-``) that another item of the list
    at the same indent shares."""
    found = _UNICODE_BULLET.match(lines[i])
    if found:
        return found.end()
    found = _ASCII_BULLET.match(lines[i])
    if not found:
        return None
    indent, mark = len(found.group(1)), found.group(2)
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > indent):
            j += step
        if 0 <= j < len(lines) and _indent(lines[j]) == indent and lines[j].lstrip().startswith(mark + " "):
            return found.end()
    return None


def _body_indent(lines: list[str]) -> int:
    """Where the body's text starts: the indent of the first line under the first heading
    (NAME's), else the smallest indent that many lines share."""
    for above, line in zip(lines, lines[1:]):
        if above.strip() and _indent(above) == 0 and line.strip() and _indent(line) > 0:
            return _indent(line)
    indents = Counter(_indent(line) for line in lines if line.strip() and _indent(line) > 0)
    common = [indent for indent, count in indents.items() if count * 10 >= sum(indents.values())]
    return min(common, default=7)


def _tag_like(run: list[str]) -> bool:
    """A tag wrapped over several lines (a command with its flags) has short lines; prose runs
    to the right margin."""
    return all(len(line.strip()) < 72 for line in run)


def _split_inline_tag(run: list[str], described: int) -> tuple[list[str], str]:
    """``-e expr     A qualifying ...``: a tag whose description starts on its own line, at the
    column the description's next lines are indented to, after a gap of two spaces or more."""
    last = run[-1]
    if len(last) > described and last[described] != " " and last[described - 2 : described] == "  " \
            and last[:described].strip():
        return [*run[:-1], last[:described]], last[described:]
    return run, ""


def _tag(lines: list[str]) -> str:
    parts = [line.strip() for line in lines if line.strip()]
    if all(part.startswith(("-", "+")) for part in parts):
        return ", ".join(parts)  # "-E var=val" over "--env=var=val": two spellings
    return _join(parts)


def _block_end(lines: list[str], start: int, indent: int, *, stop_at_blank: bool) -> int:
    """The end of what follows ``start`` indented deeper than ``indent`` (blank lines inside
    included unless ``stop_at_blank``)."""
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if not line.strip():
            if stop_at_blank:
                break
            end += 1
            continue
        if _indent(line) <= indent:
            break
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def _dedent(lines: list[str]) -> str:
    margin = min((_indent(line) for line in lines if line.strip()), default=0)
    return "\n".join(line[margin:] for line in lines)


def _description(lines: list[str], indent: int) -> list[Part]:
    """Paragraphs at the description's indent; runs indented deeper (examples) as code."""
    parts: list[Part] = []
    run: list[str] = []
    code = False

    def flush() -> None:
        if any(line.strip() for line in run):
            parts.append(Code(_dedent(run)) if code else Paragraph(_join(run)))
        run.clear()

    for line in lines:
        if not line.strip():
            flush()
            continue
        deeper = _indent(line) > indent
        if run and deeper != code:
            flush()
        code = deeper
        run.append(line)
    flush()
    return parts


# -- one shape for both ---------------------------------------------------------------------


def _tag_field(section: str, tag: str) -> str:
    """``option`` for ``-x``; else what the section lists ("COMMANDS": ``command``), or ``term``
    under a heading of more than two words."""
    if tag.startswith(("-", "+")) and tag[1:2].strip():  # "-n", "+o"; not a "-" key of its own
        return "option"
    words = section.lower().split()
    if section.upper() in _TAG_FIELD or not 0 < len(words) <= 2 or not all(w.isalpha() for w in words):
        return _TAG_FIELD.get(section.upper(), "term")
    return " ".join([*words[:-1], _SINGULAR.sub("", words[-1])])


def _record_part(parts: list[Part]) -> tuple[str, list[Part]]:
    """The description a record holds (its paragraphs up to the first example or table, or the
    size of a record), and what follows it."""
    held: list[str] = []
    words = 0
    for number, part in enumerate(parts):
        if not isinstance(part, Paragraph):
            return " ".join(held), parts[number:]
        paragraph = part.text
        size = len(paragraph.split())
        if words + size <= RECORD_WORDS:
            held.append(paragraph)
            words += size
            continue
        if not held:  # a first paragraph longer than a record: as many sentences as fit
            sentences = _SENTENCE_END.split(paragraph)
            taken: list[str] = []
            for sentence in sentences:
                if taken and words + len(sentence.split()) > RECORD_WORDS:
                    break
                taken.append(sentence)
                words += len(sentence.split())
            rest = " ".join(sentences[len(taken) :])
            return " ".join(taken), ([Paragraph(rest)] if rest else []) + parts[number + 1 :]
        return " ".join(held), parts[number:]
    return " ".join(held), []


_BULLET = re.compile(r"[•·○◦▪‣∙*o+-]|\d{1,2}[.)]")
# A list item that names an option before a colon: "-T#, --threads=#: Compress using # working threads".
_OPTION_FIRST = re.compile(r"(?P<tag>[-+]{1,2}[\w#?@\[][^\s:]*(?:,? [-+]{0,2}[^\s:(][^\s:]*){0,2}(?: \([^)]*\))?)"
                           r":\s+(?P<text>\S.*)", re.DOTALL)


def _item(builder: TextBuilder, section: str, item: Item) -> None:
    """A list item (a bullet's text), or a record of the tag and the description it holds, then
    what the record does not hold."""
    held, rest = _record_part(item.parts)
    bullet = item.bullet if item.bullet is not None else bool(_BULLET.fullmatch(item.tag.strip()))
    option = _OPTION_FIRST.match(held) if bullet else None
    if option:  # "• --rm: Automatically remove ...": an option described, bullet or not
        builder.block(BlockKind.RECORD, record([("option", option["tag"]), ("description", option["text"])]))
    elif held and bullet:  # a bulleted list item: its text is all it says
        builder.block(BlockKind.LIST_ITEM, held)
    elif held:
        builder.block(BlockKind.RECORD, record([(_tag_field(section, item.tag), item.tag), ("description", held)]))
    elif not bullet:  # a tag described by nothing: a line of its own (a bullet alone is nothing)
        builder.block(BlockKind.PARAGRAPH, item.tag)
    for part in rest:
        _event(builder, part)


def _event(builder: TextBuilder, part: Part) -> None:
    if isinstance(part, Paragraph):
        builder.block(BlockKind.PARAGRAPH, part.text)
    elif isinstance(part, Code):
        builder.block(BlockKind.CODE, part.text)
    else:
        builder.block(BlockKind.TABLE_ROW, record_text(part.header, part.cells))


def _build(events: list[Event]) -> ParsedDocument:
    builder = TextBuilder()
    section = ""
    name_line: str | None = None
    for event in events:
        if isinstance(event, Heading):
            if event.level == 1:
                section = event.text
            builder.heading(event.level, event.text)
        elif isinstance(event, Item):
            _item(builder, section, event)
        else:
            if isinstance(event, Paragraph) and section.upper() == "NAME" and name_line is None:
                name_line = event.text
            _event(builder, event)
    return builder.build(MIME[Kind.MANPAGE], title=choose(name_line))
