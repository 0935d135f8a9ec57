"""What an answer quotes beside its best unit: the list it belongs to (with the sentence that
introduces it), the neighbouring sentence that holds the rest of the question, the runner-up
the models call close; and each source's quote, as the source has it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from citewell.answers.extractive.features import Support, UnitFeatures, best_and_rival
from citewell.answers.extractive.kinds import FILLABLE, Wants
from citewell.answers.extractive.question import identifiers, stems
from citewell.answers.extractive.refusal import RefusalModel
from citewell.answers.extractive.units import Unit, completion, run_around

MAX_RUN = 12  # list items quoted at most


def list_of(question: str, support: Support, rank: int) -> tuple[Unit | None, list[Unit]]:
    """The list an answer built on the unit at ``rank`` quotes, with the unit that introduces it, if any."""
    return _list_for(question, support.units[rank], support.unit_features[rank], support.wanted, support.in_order)


def _list_for(
    question: str, unit: Unit, row: UnitFeatures, wanted: frozenset[Wants], in_order: list[Unit]
) -> tuple[Unit | None, list[Unit]]:
    """The list an answer built on ``unit`` quotes, with the unit that introduces it, if any; a
    run of one unit is no list. A question wants a list when it asks for steps or several
    things, when it is about the unit's section rather than the unit ("What was added in
    Tallyforge 5.4?": the section's headings hold more of it than the unit does), or when the
    unit is a heading (it answers no "what ...?" by itself, only by what it heads)."""
    single = bool(wanted & FILLABLE)
    listing = (bool(wanted & {Wants.STEPS, Wants.LIST})
               or (not single and not unit.asked and row.context_coverage > row.coverage)  # a FAQ's question is no section
               or (unit.heading and not single)
               or unit.text.rstrip().endswith(":"))  # a lead-in says nothing without what it leads in
    intro, run = list_at(in_order, unit) if listing else (None, [unit])
    if unit.record and (Wants.LIST not in wanted or _singles_out(question, unit, run)):
        return None, [unit]  # the rows of a table answer "what are the budgets?", not "what should I do for E1027?"
    return intro, run[:MAX_RUN]


def quoted_by(question: str, support: Support, rank: int) -> list[Unit]:
    """What an answer built on the unit at ``rank`` quotes before any second hop: its list, or
    the unit with the sentence or heading that holds what it lacks, or with the neighbouring
    sentence that holds the rest of the question. The answer model's fit labels an answer
    right when these hold a gold fact."""
    unit = support.units[rank]
    companion = completion(support.in_order, unit, set(support.wanted), question)
    return quoted_units(question, unit, support.unit_features[rank], support.wanted, support.in_order, companion)


def quoted_units(question: str, unit: Unit, row: UnitFeatures, wanted: frozenset[Wants], in_order: list[Unit],
                 companion: Unit | None) -> list[Unit]:
    """What an answer built on ``unit``, with its ``companion``, quotes: ``quoted_by`` for a ranked
    unit; the scorer reads it for every unit before any is ranked (``answer_coverage``)."""
    intro, run = _list_for(question, unit, row, wanted, in_order)
    if len(run) > 1:
        return [intro, *run] if intro else run
    beside = companion or lead_in(in_order, unit) or neighbour(question, in_order, unit)
    return quoted_around(in_order, unit, beside, plural=Wants.LIST in wanted)


def quoted_around(in_order: list[Unit], unit: Unit, beside: Unit | None, plural: bool) -> list[Unit]:
    """``unit`` with what its quote holds beside it, each once, in source order: ``beside`` (its
    companion, lead-in or neighbouring sentence), the block it introduces (``led_by``) and, for a
    plural ask, every sentence of its paragraph (``paragraph_of``). An answer, the fit's labels and
    a quote not confirmed all read it."""
    whole = paragraph_of(in_order, unit) if plural else []
    return sorted({id(u): u for u in [unit, *([beside] if beside else []), *led_by(in_order, unit), *whole]}.values(),
                  key=lambda u: u.start)


MAX_PARAGRAPH = 6  # sentences a plural ask quotes of the paragraph that holds its best one


def paragraph_of(units: list[Unit], unit: Unit) -> list[Unit]:
    """Every sentence of the paragraph ``unit`` is in, for a plural ask ("What are the
    requirements for ...?"): a list written as sentences is the paragraph, not one of them.
    None for a record, a heading or a paragraph longer than ``MAX_PARAGRAPH``."""
    if unit.record or unit.heading or unit.whole_block:
        return []
    same = [u for u in units if u.item is unit.item and u.block == unit.block and not u.heading]
    return same if len(same) <= MAX_PARAGRAPH else []


def led_by(units: list[Unit], unit: Unit) -> list[Unit]:
    """What a lead-in ending in a colon introduces, when it is no list: the block right after it
    in its passage when that is one unit ("... and use 60 seconds for all other commands:" then
    the configuration it means, a command line; not a table's first row). A lead-in quoted alone says nothing of what
    it leads to; a paragraph of sentences after it is prose of its own, not what it introduces."""
    if not unit.text.rstrip().endswith(":"):
        return []
    position = next(i for i, u in enumerate(units) if u is unit)
    after = units[position + 1] if position + 1 < len(units) else None
    if after is None or after.item is not unit.item or after.block != unit.block + 1 or after.heading \
            or not after.whole_block or after.text.rstrip().endswith(":"):  # another lead-in introduces what follows it
        return []
    if after.record:  # the first row of a table it introduces is one of many, not what it leads to
        return []
    return [after]


def lead_in(units: list[Unit], item: Unit) -> Unit | None:
    """The sentence ending in a colon that introduces the list ``item`` is one of ("... with the
    exception that the following are disallowed:"): an item quoted alone may say the opposite
    of what its list is for."""
    run = run_around(units, item)
    if len(run) < 2:
        return None
    intro, following = list_at(units, _before(units, run[0]) or run[0])
    return intro if intro is not None and intro.text.rstrip().endswith(":") and any(u is item for u in following) else None


def _before(units: list[Unit], unit: Unit) -> Unit | None:
    position = next(i for i, u in enumerate(units) if u is unit)
    return units[position - 1] if position > 0 and units[position - 1].item is unit.item else None


def list_at(units: list[Unit], best: Unit) -> tuple[Unit | None, list[Unit]]:
    """The list ``best`` belongs to; or, when ``best`` introduces the list that follows it
    (a section's heading, or "Customers in arrears can agree a payment plan." before the
    steps), ``best`` as its introduction and that list."""
    run = run_around(units, best)
    if len(run) > 1 or best.record:
        return None, run
    position = next(i for i, u in enumerate(units) if u is best)
    after = units[position + 1] if position + 1 < len(units) else None
    if after is not None and after.item is best.item and after.block == best.block + 1 and not after.record:
        following = run_around(units, after)
        if len(following) > 1 and following[0] is after:
            return best, following
    return None, run


def neighbour(question: str, units: list[Unit], unit: Unit) -> Unit | None:
    """The sentence next to ``unit`` in its paragraph (the one after it, else the one before)
    when it holds words of the question that the unit and its headings lack: an answer spread
    over two sentences ("Rail travel is standard class. First class needs the written approval
    of a director.")."""
    if unit.heading or unit.record or unit.whole_block:  # alone in its block
        return None
    position = next(i for i, u in enumerate(units) if u is unit)
    beside = [units[at] for at in (position + 1, position - 1) if 0 <= at < len(units)]
    beside = [u for u in beside if u.item is unit.item and u.block == unit.block and not u.heading and not u.record]
    if not beside:
        return None
    span = unit.item.span_at(unit.start)
    lacking = stems(question) - stems(" ".join([unit.text, unit.item.title, *span.section_path, unit.asked]))
    return next((u for u in beside if stems(u.text) & lacking), None)


def runner_up_of(rows: Sequence[UnitFeatures], probabilities: np.ndarray, quoted: Sequence[frozenset[int]],
                 model: RefusalModel) -> int | None:
    """The unit an answer quotes beside the best (its index), or None: the rival, which the
    ranking settles exactly, when the model calls the two close and the best's quote (the best
    unit with its companion) lacks the kind asked for (``RefusalModel.quotes_runner_up``). The
    fit (``calibrate_refusal``) labels answers with this function too."""
    best, rival = best_and_rival(probabilities, quoted)
    if rival is None or not model.quotes_runner_up(float(probabilities[best]), float(probabilities[rival]),
                                                   rows[best].type_match == 1.0):
        return None
    return rival


def runner_up_quote(question: str, support: Support, rank: int) -> list[Unit]:
    """What an answer quotes of its runner-up: the unit with the sentence or heading that holds
    what it lacks, in document order (never a whole list: the best's answer leads)."""
    unit = support.units[rank]
    companion = completion(support.in_order, unit, set(support.wanted), question)
    return sorted([unit, companion], key=lambda u: u.start) if companion else [unit]


def _singles_out(question: str, row: Unit, rows: list[Unit]) -> bool:
    """Whether the question names a code or number that this row holds and the others do not,
    or words that this row holds and at most one other does ("no exact equivalent of plain C
    char" is the one definition whose note says so, not the whole list of type descriptors)."""
    if any(n in row.text.lower() and not all(n in r.text.lower() for r in rows) for n in identifiers(question)):
        return True
    if len(rows) < 4:
        return False
    mine = stems(question) & stems(row.text)
    held = [stems(r.text) for r in rows] if mine else []
    return any(sum(word in words for words in held) <= 2 for word in mine)


def _stripped(text: str, unit: Unit) -> tuple[int, int]:
    """The unit's bounds without the whitespace at its edges (a sentence's span runs on to the next one)."""
    start, end = unit.start, unit.end
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def quotes_of(units: Sequence[Unit]) -> dict[str, str]:
    """Each source's quote: its units in source order as the source has them, with the whitespace
    between two that follow each other (it used to be dropped, "configuration.Each", a quote the
    source does not hold), and an ellipsis where text between them is left out."""
    quotes: dict[str, str] = {}
    for ref in dict.fromkeys(u.item.ref for u in units):
        mine = sorted((u for u in units if u.item.ref == ref), key=lambda u: u.start)
        text = mine[0].item.text
        bounds = [_stripped(text, u) for u in mine]
        quote = text[bounds[0][0] : bounds[0][1]]
        for (_, before), (start, end) in zip(bounds, bounds[1:]):
            gap = text[before:start]
            quote += (gap if not gap.strip() else " … ") + text[start:end]
        quotes[ref] = " ".join(quote.split()) if "…" in quote else quote
    return quotes
