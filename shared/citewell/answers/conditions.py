"""Answers that depend on a condition the question does not name: given per condition, or asked back, never guessed.

The evidence may give one answer per city, contract type or plan: the rows of a table with the
column the question asks for ("depot: Doveridge; field allowance per shift: 14 euros"), the
items of a list that each start with what they apply to ("- Permanent contract: 2 months."),
or one sentence, or the sentences of one paragraph, stating a value under each condition ("9
pounds for a trip of more than 5 hours and 22 pounds for a trip of more than 10 hours"; "After
five years of continuous service the allowance rises to 29 days."). A question that names one
of the conditions gets that one's answer. One that names none gets each condition's answer
with its citation, up to ``MAX_LISTED`` of them; beyond that it is asked which one it means
(``Outcome.CLARIFY``), the conditions listed with their citations. A follow-up that names the
condition ("and for Leeds?") is made standalone by the conversation's rewrite and gets the one
answer.

The draft carries the conditions with its own ``[Sn]``; verification checks each condition's
words and value against the sources it cites, then :func:`compose` writes the answer's text
from what passed (:mod:`citewell.answers.verify`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citewell.answers.extractive.features import Support
from citewell.answers.extractive.kinds import MONEY, NUMBER, Wants
from citewell.answers.extractive.question import identifiers, stems
from citewell.answers.extractive.quoting import quotes_of
from citewell.answers.extractive.units import Unit, field_names, run_around
from citewell.models.answers import ConditionAnswer, Draft, Outcome

MAX_LISTED = 6  # conditions answered one by one (here and in the model's prompt); more, and the question is asked back
OTHERWISE = "otherwise"  # how the case no condition names is shown
_PREPOSITIONS = r"in|for|at|after|before|outside|inside|under|over|above|below|with|without|during|on|beyond"
_OPENS_WITH_CONDITION = re.compile(rf"^\s*(?:{_PREPOSITIONS})\b", re.I)
_PER = re.compile(r"\s+per\s+[a-z]+\b", re.I)  # "95 pounds per night": the rate is the value
_LABELLED = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])?\s*(?P<label>[^:;\n]{1,60}?)\s*[:–—]\s+(?P<rest>\S.*)$", re.S)
# "outside London", "except in Lyon": the question names the case that London is not.
_OTHER_THAN = re.compile(r"\b(?:outside|except|other than|not in|apart from|elsewhere than)"
                         r"\s+(?:of\s+)?(?:the\s+)?(?P<what>[\w'’-]+)", re.I)


@dataclass(frozen=True)
class Case:
    """One condition: what names it (``label``, empty for the case no condition names), its
    answer there, and the units that state it."""

    label: str
    value: str
    units: tuple[Unit, ...]


@dataclass(frozen=True)
class Varying:
    """The answer the evidence gives under each condition, and what the conditions are of
    (a table's column, when it names it)."""

    cases: list[Case]
    dimension: str = ""
    listed: bool = False  # rows or list items: a question that names one is answered by the unit model


def answer(question: str, support: Support) -> Draft | None:
    """The draft for a question whose answer the evidence gives per condition; None when the
    best unit gives one answer (or the question names something no condition holds: its
    refusal is the answer model's to make)."""
    row = support.unit_features[0]
    if row.missing_specific > 0 or row.identifiers_found < 1:
        return None
    found = varying(question, support)
    if found is None:
        return None
    chosen = named(question, found)
    if chosen is None:
        return None
    if len(chosen) == 1:
        if found.listed:  # a named row or item is what the unit model ranks first: its answer stands
            return None
        case = chosen[0]
        text = " ".join(f"{u.text} [{u.item.ref}]" for u in case.units)
        return Draft(text=f"{case.value}. {text}", refused=False, outcome=Outcome.ANSWERED, quotes=quotes_of(case.units))
    return per_condition(found, chosen)


def per_condition(found: Varying, cases: Sequence[Case]) -> Draft:
    """Each case's answer with its citation; or, beyond ``MAX_LISTED`` cases, the question asked back."""
    units = sorted({id(u): u for c in cases for u in c.units}.values(), key=lambda u: (u.item.rank, u.start))
    text = " ".join(f"{u.text} [{u.item.ref}]" for u in units)
    clarify = len(cases) > MAX_LISTED
    conditions = [ConditionAnswer(condition=c.label, answer=None if clarify else c.value,
                                  refs=list(dict.fromkeys(u.item.ref for u in c.units))) for c in cases]
    return Draft(text=text, refused=clarify, outcome=Outcome.CLARIFY if clarify else Outcome.ANSWERED,
                 quotes=quotes_of(units), conditions=conditions, dimension=found.dimension)


def varying(question: str, support: Support) -> Varying | None:
    """The cases around the best unit, when the evidence answers the question differently in each."""
    best = support.units[0]
    wanted = set(support.wanted)
    if wanted & {Wants.LIST, Wants.STEPS}:  # "what are the allowances?" asks for every row anyway
        return None
    if best.record:
        return _rows(question, best, support.in_order)
    if best.heading:
        return None
    numeric = wanted & {Wants.NUMBER, Wants.MONEY}
    if not numeric:
        return None
    pattern = MONEY if Wants.MONEY in numeric else NUMBER
    return _items(best, support.in_order, pattern) or _sentences(question, best, support.in_order, pattern)


def named(question: str, found: Varying) -> list[Case] | None:
    """The cases the question names (every one, when it names none); None when it names a case
    other than one of them ("outside London" where only London has one, and no case is the rest)."""
    asked = stems(question)
    codes = identifiers(question)
    everywhere = set.intersection(*(stems(c.label) for c in found.cases)) if found.cases else set()
    other_than = {m.group("what").lower() for m in _OTHER_THAN.finditer(question)}
    chosen = []
    for case in found.cases:
        own = stems(case.label) - everywhere
        label = case.label.lower()
        if own & asked or any(code in label for code in codes if len(code) > 1):
            if other_than and any(w in label for w in other_than):
                continue  # "outside London" names the case London is not
            chosen.append(case)
    if other_than and not chosen:
        rest = [c for c in found.cases if not c.label]
        return rest or None
    return chosen or list(found.cases)


def _rows(question: str, best: Unit, in_order: list[Unit]) -> Varying | None:
    """The rows of ``best``'s table, keyed by their first column other than the one asked for."""
    fields = field_names(best)
    asked = stems(question)
    overlap = sorted(((len(stems(f) & asked), i) for i, f in enumerate(fields)), reverse=True)
    if not overlap or overlap[0][0] == 0 or (len(overlap) > 1 and overlap[1][0] == overlap[0][0]):
        return None  # no column, or no one column, is the one asked for
    column = overlap[0][1]
    key = next(i for i in range(len(fields)) if i != column)
    section = best.item.span_at(best.start).section_path
    rows: dict[str, Unit] = {}
    for unit in in_order:
        if (unit.record and unit.item.document_id == best.item.document_id and field_names(unit) == fields
                and unit.item.span_at(unit.start).section_path == section):
            rows.setdefault(unit.text, unit)
    values = [[v.strip() for _, _, v in (f.partition(": ") for f in u.text.split("; "))] for u in rows.values()]
    if len(rows) < 2 or len({v[column] for v in values}) < 2 or any(not v[column] or not v[key] for v in values):
        return None
    if _names_one(question, [" ".join(v) for v in values]):
        return None  # the question names its row, in any column: the unit model ranks it first
    cases = [Case(label=v[key], value=v[column], units=(u,)) for v, u in zip(values, rows.values())]
    return Varying(cases, dimension=fields[key].strip(), listed=True)


def _names_one(question: str, texts: list[str]) -> bool:
    """Whether the question holds a word or code that one of ``texts`` has and not all of them."""
    asked, codes = stems(question), identifiers(question)
    held = [stems(t) for t in texts]
    common = set.intersection(*held) if held else set()
    return any((h - common) & asked for h in held) or any(
        code in t.lower() and not all(code in o.lower() for o in texts) for code in codes for t in texts)


def _items(best: Unit, in_order: list[Unit], pattern: re.Pattern[str]) -> Varying | None:
    """The items of ``best``'s list (or of the list it introduces), when each names what it
    applies to before a colon and holds a value."""
    run = run_around(in_order, best)
    if len(run) < 2 or best.record:
        return None
    labels = [_LABELLED.match(u.text) for u in run]
    at = run.index(best)
    if labels[at] is None:  # the sentence that introduces the list: the items after it
        at += 1
    if at >= len(run) or labels[at] is None:
        return None
    first, last = at, at
    while first > 0 and labels[first - 1] is not None:
        first -= 1
    while last + 1 < len(run) and labels[last + 1] is not None:
        last += 1
    cases = []
    for unit, labelled in zip(run[first:last + 1], labels[first:last + 1]):
        assert labelled is not None
        if not pattern.search(labelled.group("rest")):
            return None
        cases.append(Case(label=labelled.group("label").strip(), value=labelled.group("rest").strip().rstrip("."),
                          units=(unit,)))
    if len(cases) < 2:
        return None
    if len({c.value for c in cases}) < 2:
        return None
    return Varying(cases, listed=True)


def _sentences(question: str, best: Unit, in_order: list[Unit], pattern: re.Pattern[str]) -> Varying | None:
    """The values ``best`` states under conditions, with those of the sentences of its paragraph
    that open with a condition and state a value of the same unit ("After five years of service
    the allowance rises to 29 days.")."""
    asked_numbers = set(re.findall(r"\d[\d,.]*", question))
    cases = _in_sentence(best, pattern, asked_numbers, alone=True)
    if not cases:
        return None
    unit_word = {_unit_word(c.value) for c in cases}
    siblings = [u for u in in_order if u.item is best.item and u.block == best.block and u is not best
                and not u.heading and not u.record and _OPENS_WITH_CONDITION.match(u.text)]
    for sibling in siblings:
        theirs = _in_sentence(sibling, pattern, asked_numbers, alone=True)
        if len(theirs) == 1 and _unit_word(theirs[0].value) in unit_word and theirs[0].label:
            cases.append(theirs[0])
    cases = sorted(cases, key=lambda c: c.units[0].start)
    if len(cases) < 2 or len({c.value for c in cases}) < 2 or sum(not c.label for c in cases) > 1:
        return None
    return Varying(cases)


def _in_sentence(unit: Unit, pattern: re.Pattern[str], asked_numbers: set[str], alone: bool = False) -> list[Case]:
    """Each value the sentence states, clause by clause ("9 pounds for a trip of more than 5
    hours and 22 pounds for a trip of more than 10 hours"), with the condition of its clause
    (none: the case no condition names). A number inside a condition ("more than 5 hours") is
    part of it, not a value. A clause with two values is no case. Unless ``alone``, one value is
    no variation."""
    text = unit.text
    conditions = _conditions(text)
    cases = []
    for start, end in _clauses(text):
        mine = [c for c in conditions if start <= c[0] < end]
        values = [m for m in pattern.finditer(text, start, end) if not any(s <= m.start() < e for s, e in mine)
                  and not any(n in m.group(0) for n in asked_numbers)]
        if len(values) > 1:
            return []
        if not values:
            continue
        value = values[0]
        rate = _PER.match(text, value.end())
        amount = text[value.start(): rate.end() if rate else value.end()].strip()
        label = text[mine[0][0]:mine[0][1]].strip() if mine else ""
        cases.append(Case(label=label, value=amount, units=(unit,)))
    return cases if alone or len(cases) > 1 else []


_CLAUSE = re.compile(r";\s*|,\s+(?:and|or|but|while|whereas)\s+|\s+(?:and|or|but|while|whereas)\s+(?=[€$£]?\d)", re.I)
_STOP = frozenset("and or but is are was were be been can may must will shall should has have had get gets receive "
                  "receives rises rise falls fall costs cost pays pay paid allows allow takes take applies apply".split())
_INNER = frozenset(f"{_PREPOSITIONS}|of|than|to|from|per".split("|"))
_ARTICLES = frozenset({"the", "a", "an"})
_PREPOSITION = re.compile(rf"\b(?:{_PREPOSITIONS})\b", re.I)
_TOKEN = re.compile(r"\S+")


def _clauses(text: str) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for gap in _CLAUSE.finditer(text):
        bounds.append((start, gap.start()))
        start = gap.end()
    return [*bounds, (start, len(text))]


def _conditions(text: str) -> list[tuple[int, int]]:
    """Where each condition stands: a preposition and the words it governs, up to its clause's
    end, a verb, or an article that opens the next phrase ("In London | the allowance is ...")."""
    found: list[tuple[int, int]] = []
    for prep in _PREPOSITION.finditer(text):
        if found and prep.start() < found[-1][1]:
            continue  # "in a tax year" inside "for the first 10,000 miles in a tax year"
        previous, end = prep.group(0).lower(), None
        for token in _TOKEN.finditer(text, prep.end()):
            word = token.group(0)
            bare = word.rstrip(",.;:!?)").lower()
            if not bare or bare in _STOP or (bare in _ARTICLES and previous not in _INNER):
                break
            end, previous = token.start() + len(word.rstrip(",.;:!?)")), bare
            if word != word.rstrip(",.;:!?)"):
                break  # the clause ends with it
        if end is not None and previous not in _INNER:
            found.append((prep.start(), end))
    return found


def _unit_word(value: str) -> str:
    words = re.findall(r"[A-Za-z€$£]+", value)
    return words[0].lower().rstrip("s") if words else ""


def compose(conditions: Sequence[ConditionAnswer], dimension: str, outcome: Outcome) -> str:
    """The answer's text for verified conditions (refs as shown): each condition's answer on a
    line of its own, or the question that asks which condition is meant."""
    conditions = sorted(conditions, key=lambda c: not c.condition)  # the case no condition names comes last
    if outcome is Outcome.CLARIFY:
        refs = " ".join(f"[{r}]" for r in dict.fromkeys(r for c in conditions for r in c.refs))
        names = ", ".join(c.condition or OTHERWISE for c in conditions)
        return f"Which {dimension or 'case'} do you mean? The documents give a different answer for each: {names}. {refs}"
    lines = [f"- {c.condition or OTHERWISE}: {c.answer} {' '.join(f'[{r}]' for r in c.refs)}" for c in conditions]
    return "\n".join([f"It depends on the {dimension}:" if dimension else "It depends:", *lines])
