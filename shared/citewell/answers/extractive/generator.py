"""The local default: quote the units that answer the question, or refuse.

It needs no model service. Evidence is cut into units (records, sentences, list items); each
unit is scored against the question by a fitted model over its meaning (the same embedding
model as the index), its weighted term coverage, the codes and numbers the question names,
and whether it holds the kind of answer the question asks for (a number, a date, a name, a
code, a list of steps). A second fitted model decides whether the best unit answers at all.
The answer states the direct answer first when one can be read off the unit (a record's
field, the one number or date it holds), then quotes the unit (or the whole list) with its
``[Sn]``. A unit is scored and quoted with its companion, the sentence or heading that holds
the kind of answer it lacks; a "who" answer that names a team is followed to the person the
evidence names for it. A declined answer whose best unit is near enough (the model's second
operating point) and shares a word of the question quotes that unit alone, as not confirmed.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from citewell.answers import conditions
from citewell.answers.extractive.cross_encoder import AnswerVerifier
from citewell.answers.extractive.direct import direct_answer
from citewell.answers.extractive.features import Support
from citewell.answers.extractive.kinds import PERSON, Wants
from citewell.answers.extractive.question import parts, stems, wants
from citewell.answers.extractive.quoting import (
    lead_in,
    list_of,
    neighbour,
    quoted_around,
    quotes_of,
    runner_up_of,
    runner_up_quote,
)
from citewell.answers.extractive.refusal import RefusalModel, shipped_model
from citewell.answers.extractive.scoring import score_support
from citewell.answers.extractive.units import Unit, completion
from citewell.answers.extractive.vectors import UnitEmbeddings
from citewell.errors import EmbedderUnavailable, GeneratorUnavailable
from citewell.models.answers import Draft, Outcome
from citewell.models.evidence import EvidenceItem
from citewell.models.values import sha256_text
from citewell.ports import Embedder, EmbeddingCache

MAX_UNITS = 2  # a question of several asks quotes the best unit of this many of them
_ORDINAL = re.compile(r"^\d+[.)]\s+")  # a list item's own number: the answer numbers the items again


def best_of_each(
    embed: UnitEmbeddings, asks: list[str], evidence: Sequence[EvidenceItem], model: RefusalModel,
) -> tuple[list[Unit], bool]:
    """The best unit for each ask of a question, in the order asked, each once; and whether the
    answer model would answer every ask on its own."""
    chosen: list[Unit] = []
    every = True
    for ask in asks:
        support = score_support(embed, ask, evidence, model, leading=len(chosen) + 1)
        if support is None:
            return chosen, False
        every = every and model.answers(support.features)
        fresh = [u for u in support.units[: len(chosen) + 1] if all(u.text != c.text for c in chosen)]
        if not fresh and not support.complete:  # the first units repeat what is chosen: rank them all
            support = score_support(embed, ask, evidence, model, every_unit=True) or support
            fresh = [u for u in support.units if all(u.text != c.text for c in chosen)]
        chosen.extend(fresh[:1])
    return chosen, every


ANSWERS_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def answering_code(package: Path = ANSWERS_PACKAGE) -> str:
    """A digest of the answering package's source: an upgrade that changes how answers are made
    must not serve answers cached before it, even with the same fitted model."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


class ExtractiveGenerator:
    name = "extractive"

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None, model: RefusalModel | None = None,
                 encoder: Embedder | None = None, verifier: AnswerVerifier | None = None) -> None:
        self.embed = UnitEmbeddings(embedder, cache, encoder, verifier)
        self.model = model or shipped_model()
        # Cached answers are keyed by it: neither a refitted model, nor changed code, nor another
        # encoder or verifier serves old answers.
        self.fingerprint = f"{sha256_text(self.model.model_dump_json())[:12]}:{answering_code()}:{self.embed.encoder.identity}"
        if self.model.rerank is not None:
            self.fingerprint += f":{self.embed.verifier.identity}"

    def generate(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        try:  # the second hop of a "who" answer (``_who_is``) reads the whole ranking
            support = score_support(self.embed, question, evidence, self.model, every_unit=Wants.PERSON in wants(question))
        except EmbedderUnavailable as error:
            raise GeneratorUnavailable(f"sentences cannot be scored: {error.message}") from error
        if support is None:
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        asks = parts(question)
        each, every = best_of_each(self.embed, asks, evidence, self.model) if len(asks) > 1 else ([], False)
        if not (self.model.answers(support.features) or every):  # the whole question, or each of its asks
            return self._nearest(question, evidence, support)
        if len(asks) == 1 and (by_condition := conditions.answer(question, support)) is not None:
            return by_condition  # one answer per condition the question leaves open, or the one it names
        best = support.units[0]
        intro, run = list_of(question, support, 0)
        if len(run) > 1:
            quote = best.item.text[(intro or run[0]).start : run[-1].end]
            listed = "\n".join(f"{n}. {_ORDINAL.sub('', u.text)}" for n, u in enumerate(run, start=1))
            opening = f"{intro.text}\n" if intro else ""
            return Draft(text=f"{opening}{listed} [{best.item.ref}]", refused=False, outcome=Outcome.ANSWERED,
                         quotes={best.item.ref: quote})
        companion = completion(support.in_order, best, set(support.wanted), question)
        if len(asks) > 1 and not companion:  # two asks: the best unit of each, quoted in the order asked
            chosen, direct = each[:MAX_UNITS] or [best], None
        else:  # one ask, or two that the best unit and the sentence or heading it needs answer together
            lead = None if companion else lead_in(support.in_order, best)
            near = None if companion or lead else neighbour(question, support.in_order, best)
            beside = companion or lead or near
            chosen = quoted_around(support.in_order, best, beside, plural=Wants.LIST in support.wanted)
            direct = None if near else direct_answer(question, companion or best, support.wanted)
            if direct and Wants.PERSON in support.wanted and not best.record:
                hop = _who_is(direct, chosen, support.units)
                if hop is not None:  # "People Operations" approves it; the directory says who that is
                    direct, chosen = hop[0], [*chosen, hop[1]]
        rank = runner_up_of(support.unit_features, support.probabilities, support.quoted, self.model) if len(asks) == 1 else None
        runner_up = runner_up_quote(question, support, rank) if rank is not None else []
        second = [u for u in runner_up if all(u is not c for c in chosen)]
        if direct and (_completes(question, best, second) if companion is None else _completes(question, companion, [best])):
            direct = None  # the value's sentence lacks what the question asks of, and another quoted holds it
        if direct and best.record and chosen == [best] and not second:  # the row is the quote beneath: its field once
            return Draft(text=f"{direct} [{best.item.ref}]", refused=False, outcome=Outcome.ANSWERED, quotes=quotes_of(chosen))
        pieces = [direct if direct.endswith((".", "!", "?")) else f"{direct}."] if direct else []
        pieces += [f"{unit.text} [{unit.item.ref}]" for unit in [*chosen, *second]]
        return Draft(text=" ".join(pieces), refused=False, outcome=Outcome.ANSWERED, quotes=quotes_of([*chosen, *second]))

    def nearest(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        """What came nearest, never an answer: the draft a declined answer gives (``unconfirmed``
        or ``not_found``), for a model generator that refused. Raises GeneratorUnavailable."""
        try:
            support = score_support(self.embed, question, evidence, self.model)
        except EmbedderUnavailable as error:
            raise GeneratorUnavailable(f"sentences cannot be scored: {error.message}") from error
        if support is None:
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        return self._nearest(question, evidence, support)

    def _nearest(self, question: str, evidence: Sequence[EvidenceItem], support: Support) -> Draft:
        """The best unit that is not a heading, with the companion its answer would quote,
        quoted verbatim as not confirmed; ``not_found`` when the model puts it below its second
        operating point or it holds none of the question's words but its document's name, whatever
        the model says."""
        if not self.model.relates(support.features):
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        if support.units[0].heading and not support.complete:  # the ranking below the first is settled only in part
            support = score_support(self.embed, question, evidence, self.model, every_unit=True) or support
        rank = next((r for r, u in enumerate(support.units) if not u.heading), None)
        if rank is None:
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        best = support.units[rank]
        companion = completion(support.in_order, best, set(support.wanted), question) or lead_in(support.in_order, best)
        chosen = quoted_around(support.in_order, best, companion, plural=False)
        # A word shared only through the document's name ("Northpier" in Northpier's handbook) says
        # the passage is about the document, not about what was asked.
        named = stems(" ".join(u.item.title for u in chosen))
        if not (stems(question) & stems(" ".join(u.text for u in chosen))) - named:
            return Draft(text=None, refused=True, outcome=Outcome.NOT_FOUND)
        text = " ".join(f"{unit.text} [{unit.item.ref}]" for unit in chosen)
        return Draft(text=text, refused=True, outcome=Outcome.UNCONFIRMED, quotes=quotes_of(chosen))


def _completes(question: str, valued: Unit, others: list[Unit]) -> bool:
    """Whether a sentence quoted beside ``valued`` holds words of the question that ``valued``, its
    title and headings lack: then a value read off ``valued`` may be a sibling's ("27 days" is
    full-time staff's, and "Part-time staff receive leave pro rata" is what was asked), and the
    sentences are the answer, not the value."""
    span = valued.item.span_at(valued.start)
    lacking = stems(question) - stems(" ".join([valued.text, valued.item.title, *span.section_path, valued.asked]))
    return any(stems(u.text) & lacking for u in others)


def _who_is(named: str, chosen: list[Unit], ranked: list[Unit]) -> tuple[str, Unit] | None:
    """Who the team or role an answer names is, when another unit of the evidence says so with
    the person first ("Solene Marchetti, People Operations Manager.", "Name: Nadia Okonkwo-Hart;
    Role: Records Manager"): the second hop of a "who" question."""
    for unit in ranked:
        if any(unit is c for c in chosen):
            continue
        at = unit.text.find(named)
        if at <= 0:
            continue
        before = [m.group(0) for m in PERSON.finditer(unit.text[:at]) if m.group(0) != named]
        if before:
            return before[0], unit
    return None
