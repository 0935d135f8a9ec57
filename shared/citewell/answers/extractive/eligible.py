"""Which units an answer may be built on: a unit that can stand alone, never a heading alone, a
bare term, a cut-off sentence, a lead-in without its list, or a table row that lacks the column
asked for or says the opposite of what is asked. The others still serve as context and companions."""

from __future__ import annotations

import re
from dataclasses import dataclass

from citewell.answers.extractive.kinds import FILLABLE, Wants
from citewell.answers.extractive.question import negates, stems
from citewell.answers.extractive.quoting import led_by, list_at
from citewell.answers.extractive.units import Unit, field_names, run_around
from citewell.terms import FUNCTION_WORDS

_CLOSED = re.compile(r"[.!?:;)\]\"'`»”]$")


def answers_alone(unit: Unit, units: list[Unit], wanted: frozenset[Wants], asked: frozenset[str] = frozenset(),
                  columns: dict[int, _Columns] | None = None, question: str = "") -> bool:
    """Whether an answer may be built on ``unit``: never a heading alone (unless it heads a list,
    or holds the kind asked for, as a release's date), a bare term, a sentence cut off before
    its end ("... can be specified to tests as"), a lead-in without the list or block it introduces, or a
    table row without the column the question asks for (``asked``: the question's stems) when
    other rows have it (``columns``: ``record_columns(units)``, computed once for all of them).
    Such units still serve as context and companions. A sentence that ends on a colon but names
    what was asked (``question``) is an answer before its example ("... use path.win32:")."""
    if unit.record:
        return not (asked and _lacks_asked_field(unit, units, asked, record_columns(units) if columns is None else columns)
                    or asked and _reverses(unit, units, asked, question))
    named = not unit.heading and any(unit.holds(k, question) for k in wanted & FILLABLE - {Wants.DEFAULT})
    if unit.heading or (unit.text.endswith(":") and not named):
        intro, run = list_at(units, unit)
        if unit.heading:
            return intro is unit or any(unit.holds(k) for k in wanted & FILLABLE)
        return intro is unit or bool(led_by(units, unit))  # quoted with the list or the block it introduces
    words = unit.text.split()
    if len(words) < 3 and len(run_around(units, unit)) < 2:
        return False
    last = words[-1].lower() if words else ""
    return bool(_CLOSED.search(unit.text)) or last not in FUNCTION_WORDS


# A record whose value opens by denying ("--no-ignore-case: Do not ignore case distinctions"),
# and the words of a question that may be asking for such a one ("turns off", "cancel", "without").
_DENIES = re.compile(r"^(?:do not|don't|does not|doesn't|never|not)\b", re.I)
_UNDOES = re.compile(r"\b(?:off|disabl\w*|cancel\w*|stop\w*|prevent\w*|undo\w*|"
                     r"without|overrid\w*|revers\w*|opposite|default)\b", re.I)


def _reverses(unit: Unit, units: list[Unit], asked: frozenset[str], question: str) -> bool:
    """A record that says the opposite of what is asked, beside one that says it: "Which grep
    option ignores case distinctions?" is answered by ``-i, --ignore-case``, never by
    ``--no-ignore-case`` ("Do not ignore case distinctions"), which shares every word of it."""
    if not _denies(unit) or negates(question) or _UNDOES.search(question):
        return False
    mine = len(stems(unit.text) & asked)
    return any(u.record and u.item is unit.item and u is not unit and len(stems(u.text) & asked) >= mine
               and not _denies(u) for u in units)


def _denies(record: Unit) -> bool:
    return any(_DENIES.match(field.partition(": ")[2].strip()) for field in record.text.split("; "))


@dataclass(frozen=True)
class _Columns:
    names: frozenset[str]  # a record's field names
    stems: frozenset[str]  # their stems
    section: tuple[str, ...]  # the section it is in (a sheet is one)


def record_columns(units: list[Unit]) -> dict[int, _Columns]:
    """Each record's columns, by ``id`` of its unit: what ``_lacks_asked_field`` compares rows by."""
    columns = {}
    for unit in units:
        if unit.record:
            names = frozenset(field_names(unit))
            columns[id(unit)] = _Columns(names, frozenset(s for name in names for s in stems(name)),
                                         tuple(unit.item.span_at(unit.start).section_path))
    return columns


def _lacks_asked_field(unit: Unit, units: list[Unit], asked: frozenset[str], columns: dict[int, _Columns]) -> bool:
    """A row of a table whose other rows have a column the question names, and it has not
    ("When was Debian 15 released?": its row has no release date yet). Other rows are those of
    the same table: the same section (a sheet is one), sharing most of this row's columns."""
    mine = columns[id(unit)]
    others = {stem for u in units if u.record and u.item is unit.item and u is not unit
              and (theirs := columns[id(u)]).section == mine.section and 2 * len(mine.names & theirs.names) >= len(mine.names)
              for stem in theirs.stems}
    return bool((others - mine.stems) & asked)
