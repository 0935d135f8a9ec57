"""The features the extractive answerer's fitted models read, as typed rows, and ``Support``, a scored ranking.

Each row is a frozen dataclass with one field per feature. Its fields are in the order the fit
(``benchmarks.calibrate_refusal``) writes a model's features (``UNIT_FEATURES``,
``ANSWER_FEATURES``, ``RERANK_FEATURES``); a model reads a row by the names its file gives
(``FeatureRow.read``), in the file's order, so a shipped ``refusal_model.json`` reads the same
values as it did from the dictionaries these rows replace, and a file naming a feature no row has
fails to load (``refusal.RefusalModel``). The fit computes its rows with these functions too,
so the shipped models read at run time what they were fitted on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

from citewell.answers.extractive.kinds import Wants
from citewell.answers.extractive.units import Unit


@dataclass(frozen=True)
class FeatureRow:
    """A row of named features: what a fitted logistic model reads."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The features, in the row's order."""
        return tuple(f.name for f in fields(cls))

    def read(self, names: Sequence[str]) -> list[float]:
        """The input vector of a model whose features are ``names``, in that order."""
        return [getattr(self, name) for name in names]


@dataclass(frozen=True)
class UnitFeatures(FeatureRow):
    """A unit (sentence, record, list item) against the question. The unit model reads every field
    but the last two (``UNIT_FEATURES``); the answer model reads the best unit's."""

    cosine: float  # of the unit's vector to the question's; 0 until it is embedded (``vectors.unit_cosines``)
    coverage: float  # the weighted share of the question's terms the unit holds
    context_coverage: float  # ... that its title, headings, FAQ question and companion hold
    joint_coverage: float  # ... that the two together hold
    item_rank: float  # 1 / the rank of its evidence item
    # the share of the codes and numbers the question names that the unit or its context holds ("14"
    # is not in "2009-02-14"; a release's items hold its number in their heading, "Nettle 3.8")
    identifiers_found: float
    missing_specific: float  # the share of the question's names and numbers (``specific_terms``) it lacks
    type_match: float  # 1 when the question asks for a kind of answer and the unit or its companion holds one
    type_mismatch: float  # 1 when it asks for one and they hold none
    record: float  # 1 for a record or a table row
    heading: float  # 1 for a heading
    direct: float  # 1 when a direct answer can be read off it (or off its companion)
    # "Which city did the treaty not name?" is not answered by the sentence naming the cities it did.
    negation_missing: float
    names_field: float  # 1 for a record one of whose values the question writes whole
    names_sibling: float  # 1 when it lacks a term the question names and holds a sibling of it
    # a flag, a variable or a setting the question does not name, for "which option ...?"
    code_match: float
    # how much more of a question's set-out situation than of its final ask the unit covers: the
    # situation often holds the referent ("xsltproc returned 4."), the ask little ("What does that
    # code mean?"); the fit weighs it for a unit, not against it
    ask_gap: float
    # Not the unit model's: how much of the question what an answer built on the unit quotes covers
    # (set once every unit's quote is known), and the answer verifier's logit (0 unless a rerank
    # model read the unit).
    answer_coverage: float = 0.0
    verifier: float = 0.0


class EvidenceCoverage(NamedTuple):
    """How much of the question the evidence as a whole covers: its units' terms
    (``evidence_coverage``), and its units with their titles and headings (1 - ``absent_terms``)."""

    evidence_coverage: float
    absent_terms: float


@dataclass(frozen=True)
class AnswerFeatures(FeatureRow):
    """The best unit against the rest of the evidence, and how much of the question the answer built
    on it quotes (``answer_coverage``): is there an answer at all? Every field is the answer model's."""

    best_unit: float  # the best unit's probability by the unit model
    margin: float  # its lead over its rival, the best unit its answer does not quote
    best_cosine: float
    best_coverage: float
    best_context_coverage: float
    best_joint_coverage: float
    evidence_coverage: float
    absent_terms: float
    identifiers_found: float
    missing_specific: float
    type_mismatch: float
    top_lane_agreement: float  # 1 when the best unit is in the first evidence item
    direct: float
    answer_coverage: float
    negation_missing: float
    best_verifier: float  # the answer verifier's logit of the best unit; 0 without a rerank model
    # The kind asked for (a number, a default, a code...): whether the question asks for one, whether
    # the best unit holds it, and how much of the question a unit lacking it covers. On real documents
    # a near miss states the subject without the value ("Per-CPU stats are disabled by default").
    asks_kind: float
    type_match: float
    mismatch_coverage: float
    record: float
    names_field: float  # the best unit is the row the question names ("error number 111" and ``Number: 111``)
    names_sibling: float  # it names a sibling of what was asked instead of it ("full-time" for "part-time")
    code_match: float  # a "which option ...?" answered by a flag, variable or setting the question does not name
    ask_gap: float  # how much more of the situation a question sets out it covers than of its final ask


@dataclass(frozen=True)
class RerankFeatures(FeatureRow):
    """One of the first ``refusal.VERIFIED`` units by the unit model, read again by the answer
    verifier (``cross_encoder.py``): what the rerank model scores it by."""

    unit_logit: float
    verifier: float


# What the fit writes each model's features as, in this order.
UNIT_FEATURES = tuple(name for name in UnitFeatures.names() if name not in ("answer_coverage", "verifier"))
ANSWER_FEATURES = AnswerFeatures.names()
RERANK_FEATURES = RerankFeatures.names()


@dataclass(frozen=True)
class Support:
    """Units ranked by the unit model, their features, and the features the answer model reads."""

    in_order: list[Unit]  # every unit of the evidence, in evidence order (lists are read off it)
    units: list[Unit]
    probabilities: np.ndarray
    unit_features: list[UnitFeatures]
    features: AnswerFeatures
    wanted: frozenset[Wants]
    quoted: list[frozenset[int]]  # for each unit (ranked), the ranks of the units an answer built on it quotes
    complete: bool = True  # every unit was scored; else ``units`` holds those that could rank first or rival it


def answer_features(rows: Sequence[UnitFeatures], probabilities: np.ndarray, evidence: EvidenceCoverage,
                    quoted: Sequence[frozenset[int]]) -> AnswerFeatures:
    """What the answer model reads: the best unit by the unit model, its lead over the best unit
    its answer does not quote (the next sentence or list item it quotes beside it is no rival),
    and how much of the question the evidence as a whole covers (``evidence``). ``quoted`` holds,
    for each row, the rows an answer built on it quotes. The fit (``calibrate_refusal``) computes
    its rows with this function too."""
    first, rival = best_and_rival(probabilities, quoted)
    best = rows[first]
    top = float(probabilities[first])
    return AnswerFeatures(
        best_unit=top,
        margin=top - float(probabilities[rival]) if rival is not None else top,
        best_cosine=best.cosine,
        best_coverage=best.coverage,
        best_context_coverage=best.context_coverage,
        best_joint_coverage=best.joint_coverage,
        evidence_coverage=evidence.evidence_coverage,
        absent_terms=evidence.absent_terms,
        identifiers_found=best.identifiers_found,
        missing_specific=best.missing_specific,
        type_mismatch=best.type_mismatch,
        top_lane_agreement=1.0 if best.item_rank == 1.0 else 0.0,
        direct=best.direct,
        answer_coverage=best.answer_coverage,
        negation_missing=best.negation_missing,
        best_verifier=best.verifier,  # 0 without a rerank model
        asks_kind=best.type_match + best.type_mismatch,  # one of them is 1 when the question asks for a kind
        type_match=best.type_match,
        mismatch_coverage=best.type_mismatch * best.joint_coverage,
        record=best.record,
        names_field=best.names_field,
        names_sibling=best.names_sibling,
        code_match=best.code_match,
        ask_gap=best.ask_gap,
    )


def best_and_rival(probabilities: np.ndarray, quoted: Sequence[frozenset[int]]) -> tuple[int, int | None]:
    """The best unit by ``probabilities`` and its rival, the best unit its answer does not quote
    (``quoted``: for each unit, the units an answer built on it quotes), as indexes."""
    order = np.argsort(-probabilities, kind="stable")
    best = int(order[0])
    return best, next((int(i) for i in order[1:] if int(i) not in quoted[best]), None)
