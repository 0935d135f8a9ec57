"""Each unit of the evidence scored against the question by the unit model, ranked, and read by the answer model.

A unit's features are its meaning (the cosine of its vector to the question's, ``vectors``), its
weighted term coverage, the codes and numbers the question names, and whether it holds the kind
of answer asked for; a unit is scored with its companion, the sentence or heading its answer would
quote beside it, and only units that can stand alone (``eligible``) are ranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from citewell.answers.extractive.cross_encoder import AnswerVerifier, unit_passage
from citewell.answers.extractive.direct import direct_answer, names_a_field
from citewell.answers.extractive.eligible import answers_alone, record_columns
from citewell.answers.extractive.features import EvidenceCoverage, Support, UnitFeatures, answer_features
from citewell.answers.extractive.kinds import SERIES, Wants
from citewell.answers.extractive.question import (
    asks_what_is_not,
    final_ask,
    identifiers,
    missing_share,
    names_a_sibling,
    negates,
    specific_terms,
    stems,
    wants,
)
from citewell.answers.extractive.quoting import quoted_units
from citewell.answers.extractive.refusal import VERIFIED, RefusalModel, coverage, reranked, shipped_model, term_weights
from citewell.answers.extractive.units import Unit, companions, run_around, units_of
from citewell.answers.extractive.vectors import UnitEmbeddings, unit_cosines
from citewell.models.evidence import EvidenceItem

# A typeset manual writes an option's dash as a minus sign or a hyphen of its own ("−−priority",
# "‐l", as groff sets them in a PDF): the question's "--priority" names the same option.
DASHES = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2212": "-"})


def _holds_wanted(unit: Unit, wanted: set[Wants], units: list[Unit], question: str = "") -> bool:
    for kind in wanted:
        if kind in (Wants.STEPS, Wants.LIST):
            if len(run_around(units, unit)) > 1:
                return True
            if kind is Wants.LIST and not unit.record and SERIES.search(unit.text):  # the list is in the sentence
                return True
        elif unit.holds(kind, question):
            return True
    return False


def score_support(
    embed: UnitEmbeddings, question: str, evidence: Sequence[EvidenceItem], model: RefusalModel | None = None,
    *, leading: int = 1, every_unit: bool = False,
) -> Support | None:
    """The evidence's units scored against the question. Unless ``every_unit``, only the
    ``CANDIDATES`` that could rank among the first ``leading``, or be the best rival of the
    first, are embedded (see ``unit_cosines``); the others are left out of ``Support.units``, which
    is then ranked exactly as far as the answer reads it."""
    model = model or shipped_model()
    units = [u for item in evidence for u in units_of(item)]
    if not units:
        return None
    texts = [u.text for u in units]
    terms = [stems(t) for t in texts]
    weights = term_weights(stems(question), terms)
    ask = final_ask(question)
    ask_weights = term_weights(stems(ask), terms) if ask else None
    named = identifiers(question)
    named = {n for n in named if not any(n != other and n in other for other in named)}  # "4031" of "tf-4031" is that code
    wanted = wants(question)
    contexts: dict[tuple[tuple[int, str], str, int], tuple[set[str], str]] = {}  # (chunk, asked, companion)
    specific = specific_terms(question)
    negated = asks_what_is_not(question)
    rows: list[UnitFeatures] = []
    arounds = []
    # A unit is scored with the sentence or heading its answer would quote beside it.
    beside = companions(units, wanted, question)
    for unit, companion, unit_terms, text in zip(units, beside, terms, texts):
        lowered = text.lower().translate(DASHES)
        matches = companion is not None or _holds_wanted(unit, wanted, units, question)
        span = unit.item.span_at(unit.start)
        where = (id(unit.item), span.chunk_id)
        around = (where, unit.asked, companion.start if companion else -1)
        if around not in contexts:  # the title and headings it sits under, the question it follows
            heading = " ".join([unit.item.title, *span.section_path, unit.asked, companion.text if companion else ""])
            contexts[around] = (stems(heading), heading.lower().translate(DASHES))
        context_terms, context_text = contexts[around]
        arounds.append(around)
        around_terms = unit_terms | context_terms
        joint = coverage(weights, around_terms)
        rows.append(UnitFeatures(
            cosine=0.0,  # set by unit_cosines
            coverage=coverage(weights, unit_terms),
            context_coverage=coverage(weights, context_terms),
            joint_coverage=joint,
            ask_gap=max(0.0, joint - coverage(ask_weights, around_terms)) if ask_weights else 0.0,
            item_rank=1.0 / unit.item.rank,
            identifiers_found=1.0 - missing_share(named, f"{lowered} {context_text}"),
            missing_specific=missing_share(specific, f"{lowered} {context_text}"),
            type_match=1.0 if wanted and matches else 0.0,
            type_mismatch=1.0 if wanted and not matches else 0.0,
            code_match=1.0 if Wants.CODE in wanted and any(
                u.holds(Wants.CODE, question) for u in (unit, companion) if u is not None) else 0.0,
            record=1.0 if unit.record else 0.0,
            names_field=1.0 if unit.record and names_a_field(question, text) else 0.0,
            names_sibling=1.0 if names_a_sibling(named, lowered) else 0.0,
            heading=1.0 if unit.heading else 0.0,
            direct=1.0 if direct_answer(question, companion or unit, frozenset(wanted)) else 0.0,
            negation_missing=1.0 if negated and not negates(f"{text} {companion.text if companion else ''}") else 0.0,
        ))
    # What an answer built on each unit quotes (its list, companion or neighbouring sentence),
    # and how much of the question that covers.
    position = {id(u): i for i, u in enumerate(units)}
    quoting: list[frozenset[int]] = []
    quoted_rows: list[UnitFeatures] = []
    for unit, companion, row, (context_terms, _) in zip(units, beside, rows, (contexts[a] for a in arounds)):
        quoted = [position[id(u)] for u in quoted_units(question, unit, row, frozenset(wanted), units, companion)]
        quoted_rows.append(replace(row, answer_coverage=coverage(weights, context_terms.union(*(terms[i] for i in quoted)))))
        quoting.append(frozenset(quoted))
    rows = quoted_rows
    asked_stems = frozenset(stems(question))
    columns = record_columns(units) if asked_stems else {}
    alone = [answers_alone(unit, units, frozenset(wanted), asked_stems, columns, question) for unit in units]
    if not any(alone):
        return None
    # The verifier reads the first VERIFIED units again: those must be ranked exactly.
    leading = max(leading, VERIFIED) if model.rerank is not None else leading
    cosines = unit_cosines(embed, question, units, rows, quoting, model.unit, leading, every_unit, alone)
    scored = [i for i in range(len(units)) if alone[i] and not np.isnan(cosines[i])]
    for i in scored:
        rows[i] = replace(rows[i], cosine=float(cosines[i]))
    probabilities = np.array([model.unit.probability(rows[i]) for i in scored])
    if model.rerank is not None:
        verified, probabilities = _verify(question, [units[i] for i in scored], [rows[i] for i in scored], probabilities, model,
                                          embed.verifier)
        for i, row in zip(scored, verified):
            rows[i] = row
    ranking = np.argsort(-probabilities, kind="stable")
    order = [scored[int(j)] for j in ranking]
    rank_of = {i: r for r, i in enumerate(order)}
    quoted_ranks = [frozenset(rank_of[j] for j in quoting[i] if j in rank_of) for i in order]
    everything = set().union(*terms, *(t for t, _ in contexts.values()))
    covered = EvidenceCoverage(evidence_coverage=coverage(weights, set().union(*terms)),
                               absent_terms=1.0 - coverage(weights, everything))
    ranked_rows = [rows[i] for i in order]
    ranked_probabilities = probabilities[ranking]
    features = answer_features(ranked_rows, ranked_probabilities, covered, quoted_ranks)
    return Support(
        in_order=units, units=[units[i] for i in order], probabilities=ranked_probabilities,
        unit_features=ranked_rows, features=features, wanted=frozenset(wanted), quoted=quoted_ranks,
        complete=len(scored) == sum(alone),
    )


def _verify(question: str, units: list[Unit], rows: list[UnitFeatures], probabilities: np.ndarray,
            model: RefusalModel, verifier: AnswerVerifier) -> tuple[list[UnitFeatures], np.ndarray]:
    """The rows, each verified one with its ``verifier`` logit, and the units' probabilities once
    the answer verifier has read the first ``VERIFIED`` of them with the question (``reranked``)."""
    assert model.rerank is not None
    top = np.argsort(-probabilities, kind="stable")[:VERIFIED]
    verified = verifier.score(question, [unit_passage(units[int(i)]) for i in top])
    rows = list(rows)
    for i, v in zip(top, verified):
        rows[int(i)] = replace(rows[int(i)], verifier=float(v))
    logits = np.array([model.unit.logit(row) for row in rows])
    return rows, reranked(probabilities, logits, top, verified, model.rerank)
