"""Manual pages: rendered to text (``man foo | col -b``) or as roff source (``.TH``, ``.SH``).

No library reads rendered pages, and groff may not be installed, so both are read here into
one shape: all-caps headings at column 0 (NAME, SYNOPSIS, OPTIONS) are sections, lines
indented less than the body are sub-headings, and a tag (an option, a command, a setting)
with its description indented further is one record, ``option: -n, --dry-run; description:
...``. The running header and footer (``GIT-STASH(1)  Git Manual  GIT-STASH(1)``) are dropped;
the title is the NAME line ("git-stash - Stash the changes ...").

A record holds its description up to about a chunk's worth of words (``RECORD_WORDS``): a
record cut across two chunks would no longer read as one. What is longer follows it as
paragraphs in the same section.
"""

from __future__ import annotations

import re
from collections import Counter

from citewell.models import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder
from citewell.parsers.man_events import HEADER, OVERSTRIKE, Code, Event, Heading, Item, Paragraph, roff_first
from citewell.parsers.records import record
from citewell.parsers.roff import roff_events
from citewell.parsers.sniff import MIME, Kind
from citewell.parsers.titles import choose

RECORD_WORDS = 110  # the chunker's budget is 200 tokens; man text runs about 1.4 tokens a word

# "Git 2.39.5    10/07/2025    GIT-STASH(1)", "systemd 252    JOURNALD.CONF(5)"
_FOOTER = re.compile(r"^\S.*\S\s{3,}(?:.*\s{2,})?[^\s()]+\([0-9][\w]*\)\s*$")
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
        events = roff_events(lines)
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
    """Without the header (and its repeats at page breaks) and the footer."""
    lines = [line.expandtabs().rstrip() for line in lines]
    first = next((line.strip() for line in lines if line.strip()), "")
    header = HEADER.match(first)
    page = header.group("page") if header else None
    kept = []
    for line in lines:
        stripped = line.strip()
        if header and stripped == first:
            continue
        if line[:1] not in ("", " ") and _FOOTER.match(line) and (page is None or stripped.endswith(page)):
            continue
        kept.append(line)
    return kept


def rendered_events(lines: list[str]) -> list[Event]:
    """The sections, paragraphs, code and tagged items of a page rendered to text."""
    lines = _drop_running_lines(lines)
    base = _body_indent(lines)
    events: list[Event] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent == 0:
            section = line.strip()
            events.append(Heading(1, section))
            i += 1
            continue
        if indent < base:
            events.append(Heading(2, line.strip()))
            i += 1
            continue
        run_end = i
        while run_end < len(lines) and lines[run_end].strip() and _indent(lines[run_end]) == indent:
            run_end += 1
        run = lines[i:run_end]
        deeper = run_end < len(lines) and lines[run_end].strip() and _indent(lines[run_end]) > indent
        if section.upper() == "SYNOPSIS":  # lines as written, up to a blank line
            end = _block_end(lines, i, base - 1, stop_at_blank=True)
            events.append(Code(_dedent(lines[i:end])))
            i = end
            continue
        if deeper and (len(run) <= 3 or _tag_like(run)):
            described = _indent(lines[run_end])
            tag_lines, first = _split_inline_tag(run, described)
            end = _block_end(lines, run_end, indent, stop_at_blank=False)
            described_lines = ([" " * described + first] if first else []) + lines[run_end:end]
            events.append(Item(_tag(tag_lines), _description(described_lines, described)))
            i = end
            continue
        if indent > base:
            end = _block_end(lines, i, base, stop_at_blank=True)
            events.append(Code(_dedent(lines[i:end])))
            i = end
            continue
        events.append(Paragraph(_join(run)))
        i = run_end
    return events


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


def _description(lines: list[str], indent: int) -> list[Paragraph | Code]:
    """Paragraphs at the description's indent; runs indented deeper (examples) as code."""
    parts: list[Paragraph | Code] = []
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
    if tag.startswith(("-", "+")):
        return "option"
    words = section.lower().split()
    if section.upper() in _TAG_FIELD or not 0 < len(words) <= 2 or not all(w.isalpha() for w in words):
        return _TAG_FIELD.get(section.upper(), "term")
    return " ".join([*words[:-1], _SINGULAR.sub("", words[-1])])


def _record_part(parts: list[Paragraph | Code]) -> tuple[str, list[Paragraph | Code]]:
    """The description a record holds (its paragraphs up to the first example or the size of
    a record), and what follows it."""
    held: list[str] = []
    words = 0
    for number, part in enumerate(parts):
        if isinstance(part, Code):
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


_BULLET = re.compile(r"[•·*o+-]|\d{1,2}[.)]")


def _build(events: list[Event]) -> ParsedDocument:
    builder = TextBuilder()
    section = ""
    name_line: str | None = None
    for event in events:
        if isinstance(event, Heading):
            if event.level == 1:
                section = event.text
            builder.heading(event.level, event.text)
        elif isinstance(event, Paragraph):
            if section.upper() == "NAME" and name_line is None:
                name_line = event.text
            builder.block(BlockKind.PARAGRAPH, event.text)
        elif isinstance(event, Code):
            builder.block(BlockKind.CODE, event.text)
        else:
            held, rest = _record_part(event.parts)
            if held and _BULLET.fullmatch(event.tag.strip()):  # a bulleted list item: its text is all it says
                builder.block(BlockKind.LIST_ITEM, held)
            elif held:
                builder.block(BlockKind.RECORD, record([(_tag_field(section, event.tag), event.tag), ("description", held)]))
            else:
                builder.block(BlockKind.PARAGRAPH, event.tag)
            for part in rest:
                builder.block(BlockKind.CODE if isinstance(part, Code) else BlockKind.PARAGRAPH, part.text)
    return builder.build(MIME[Kind.MANPAGE], title=choose(name_line))
