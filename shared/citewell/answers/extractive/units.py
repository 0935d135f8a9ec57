"""What an extractive answer is made of: the units of an evidence passage, and the sentence or heading each needs beside it.

Parsers separate blocks (paragraphs, list items, table rows, records, code) with a blank line.
A record or a table row (``field: value; field: value``) is one unit and is quoted whole; a
paragraph is cut into sentences, a line break inside it being a wrap, not a sentence end; a
run of short blocks under one heading (the steps of a procedure, the items of a list) can be
quoted as the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from citewell.answers.extractive.kinds import CURRENCY_FIELD, ECHOED, FILLABLE, PATTERNS, Wants, echoes
from citewell.answers.extractive.question import stems
from citewell.chunking import sentence_spans
from citewell.models.evidence import EvidenceItem
from citewell.parsers.records import NAME_CHARS

_BLOCK_GAP = re.compile(r"\n[ \t]*\n")
_FIELD = rf"[^:;\n]{{1,{NAME_CHARS}}}: [^;\n]*"  # a record's field, as parsers.records writes it
RECORD = re.compile(rf"{_FIELD}(?:; {_FIELD})+")


@dataclass(frozen=True)
class Unit:
    """A quotable piece of one evidence item: a record, a sentence, or a one-sentence block."""

    item: EvidenceItem
    start: int
    end: int
    block: int  # which block of the item it is in
    record: bool = False
    whole_block: bool = False  # the block is this one unit: a run of them may be a list
    heading: bool = False  # names a section; it answers "when was 5.4 released?" at most
    asked: str = ""  # the question the source asks just before it (a FAQ): context, not an answer

    @property
    def text(self) -> str:
        return " ".join(self.item.text[self.start : self.end].split())

    def holds(self, kind: Wants, asked: str = "") -> bool:
        """Whether the unit holds the kind; with ``asked`` (the question), one the question does not
        already name: "Fix cookie injection (CVE-2018-0494)" holds no number for "Which release
        fixed CVE-2018-0494?", "Enforce 53-bit limit" none for "the option enforcing the 53-bit limit"."""
        if kind is Wants.MONEY and self.record and CURRENCY_FIELD.search(self.text):
            return True  # a spreadsheet's amounts carry their currency in the column's name
        pattern = PATTERNS.get(kind)
        if pattern is None:
            return False
        text = _NUMBERING.sub("", self.text) if self.heading else self.text  # "2.3.1 Primitive Types" holds no number
        if not asked or kind not in ECHOED:
            return pattern.search(text) is not None
        return any(not echoes(m.group(0), asked) for m in pattern.finditer(text))


_NUMBERING = re.compile(r"^\s*(?:\d+\.)*\d+\.?\s+(?=\D)")
_ITEM = re.compile(r"[ \t]*(?:\d{1,2}[.)]|[-*•])[ \t]+\S", re.MULTILINE)


def _items(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A block whose lines are list items ("1. Check ...", "- Check ...", as a plain text file
    writes a list without blank lines): the lines before the first item, then each item with
    the lines that wrap it."""
    starts = [m.start() for m in _ITEM.finditer(text, start, end) if m.start() == start or text[m.start() - 1] == "\n"]
    if len(starts) < 2:
        return [(start, end)]
    bounds = [start, *starts, end] if starts[0] > start else [*starts, end]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if text[a:b].strip()]


def _blocks(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for gap in _BLOCK_GAP.finditer(text):
        spans.append((start, gap.start()))
        start = gap.end()
    spans.append((start, len(text)))
    return [piece for s, e in spans if text[s:e].strip() for piece in _items(text, s, e)]


@lru_cache(maxsize=8192)
def _sentences(block: str) -> tuple[tuple[int, int], ...]:
    """A paragraph's sentence spans. Segmenting is most of what cutting evidence into units
    costs, and the same paragraphs come back for many questions (and for each ask of one)."""
    spans = list(sentence_spans(block))
    # No sentence ends at a period with a word right after it: "loading .env files", "a .o file"
    # were cut in two at the dot of a file name.
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and block[merged[-1][1] - 1 : merged[-1][1]] == "." and block[start : start + 1].isalnum():
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return tuple(merged)


def units_of(item: EvidenceItem) -> list[Unit]:
    """The item's headings, records and sentences, in order. A heading is a unit of its own (it
    may hold a release's date) but never part of a list. A question the source asks (a FAQ's
    "What is the leak allowance?") is no answer: it is kept as the context of what follows, up to
    the next heading or question."""
    headings = {" ".join(h.split()) for span in item.spans for h in span.section_path} | {" ".join(item.title.split())}
    found: list[Unit] = []
    asked = ""
    for number, (start, end) in enumerate(_blocks(item.text)):
        block = item.text[start:end]
        if " ".join(block.split()) in headings:
            found.append(Unit(item, start, end, number, whole_block=True, heading=True))
            asked = ""
            continue
        if RECORD.fullmatch(block.strip()):
            found.append(Unit(item, start, end, number, record=True, whole_block=True, asked=asked))
            continue
        unwrapped = block.replace("\n", " ")  # same length: offsets still hold
        sentences = [(s, e, " ".join(unwrapped[s:e].split())) for s, e in _sentences(unwrapped) if unwrapped[s:e].strip()]
        if sentences and sentences[-1][2].endswith("?"):  # a FAQ's question, with the lines that set it up
            asked = " ".join(sentence for _, _, sentence in sentences)
            continue
        answers = sum(not sentence.endswith("?") for _, _, sentence in sentences)
        for s, e, sentence in sentences:
            if sentence.endswith("?"):
                asked = sentence
                continue
            found.append(Unit(item, start + s, start + e, number, whole_block=answers == 1, asked=asked))
    return found


AHEAD = 3  # sentences after a unit that may complete it
# "Which release added ...?", "In what Node.js version ...?": asked of a changelog, whose entries
# sit under their release's heading ("v5.2.0 (2025-10-30)"), not beside the next entry.
RELEASE = re.compile(r"\b(?:which|what) (?:\w[\w.+#-]* )?(?:release|version)\b", re.I)


def companions(units: list[Unit], wanted: set[Wants], question: str = "") -> list[Unit | None]:
    """For each unit (in evidence order), the unit that holds what the question wants when it
    does not (and, with ``question``, one the question does not already name): the nearest
    earlier sentence of its block that holds it ("Rafael Moutinho, Head of Support." before
    "Approves refunds."), else one of the next ``AHEAD`` sentences of its section that does and holds a word of the
    question it lacks (a manual states the case, then the flag: "... depends on uninitialised
    value(s)." then "Try using the --track-origins=yes to get extra information."; or, for a default,
    the very next sentence of its block that states one), else the heading of its section when that holds it
    ("Tallyforge 5.3, released 20 January 2026", the option a description is under). One pass
    each way, so every unit can be scored with what its answer would quote."""
    kinds = wanted & FILLABLE
    found: list[Unit | None] = [None] * len(units)
    if not kinds:
        return found
    holding = [any(unit.holds(k, question) for k in kinds) for unit in units]
    asked = stems(question)
    by_release = RELEASE.search(question) is not None
    headed: list[Unit | None] = [None] * len(units)
    item, block, holder, heading = None, -1, None, None
    for position, unit in enumerate(units):
        if unit.item is not item:
            item, block, holder, heading = unit.item, -1, None, None
        if unit.block != block:
            block, holder = unit.block, None
        if not holding[position] and not unit.heading:
            found[position], headed[position] = holder, heading
        if unit.heading:
            heading = unit if holding[position] else None
        elif holding[position]:
            holder = unit
    for position, unit in enumerate(units):
        if found[position] is not None or holding[position] or unit.heading:
            continue
        if by_release and headed[position] is not None:  # a changelog's entry answers "which release" by its heading
            found[position] = headed[position]
            continue
        section = unit.item.span_at(unit.start).section_path
        lacking = asked - stems(" ".join([unit.text, unit.item.title, *section, unit.asked]))
        for at in range(position + 1, min(position + 1 + AHEAD, len(units))):
            after = units[at]
            if after.item is not unit.item or after.heading or after.item.span_at(after.start).section_path != section:
                break
            # a description's stated default follows it ("The permissions mode for home directories."
            # then "Default: DIR_MODE=0700"), sharing no word of the question
            states_default = Wants.DEFAULT in kinds and at == position + 1 and after.block == unit.block \
                and after.holds(Wants.DEFAULT)
            if holding[at] and not after.record and (states_default or stems(after.text) & lacking):
                found[position] = after
                break
        found[position] = found[position] or headed[position]
    return found


def completion(units: list[Unit], best: Unit, wanted: set[Wants], question: str = "") -> Unit | None:
    """The companion (see ``companions``) of ``best``, which is one of ``units``."""
    position = next(i for i, u in enumerate(units) if u is best)
    return companions(units, wanted, question)[position]


def field_names(unit: Unit) -> tuple[str, ...]:
    return tuple(field.partition(": ")[0] for field in unit.text.split("; "))


def run_around(units: list[Unit], best: Unit) -> list[Unit]:
    """The run of one-unit blocks ``best`` belongs to, in order: the items of a list, the steps
    of a procedure, or the rows of a table (records with the same fields)."""
    if not best.whole_block or best.heading:
        return [best]

    def kin(unit: Unit) -> bool:
        return (unit.whole_block and not unit.heading and unit.record == best.record
                and (not best.record or field_names(unit) == field_names(best)))

    same = [u for u in units if u.item is best.item]
    position = same.index(best)
    first = position
    while first > 0 and kin(same[first - 1]) and same[first - 1].block == same[first].block - 1:
        first -= 1
    last = position
    while last + 1 < len(same) and kin(same[last + 1]) and same[last + 1].block == same[last].block + 1:
        last += 1
    return same[first : last + 1]
