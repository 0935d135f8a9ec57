"""What the answer model reads of a ranking (the best unit, its rival, the evidence as a whole), and ``Support``, a ranking.

The fit (``benchmarks.calibrate_refusal``) computes its rows with these functions too, so the
shipped models read at run time what they were fitted on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citewell.answers.extractive.kinds import Wants
from citewell.answers.extractive.units import Unit


@dataclass(frozen=True)
class Support:
    """Units ranked by the unit model, their features, and the features the answer model reads."""

    in_order: list[Unit]  # every unit of the evidence, in evidence order (lists are read off it)
    units: list[Unit]
    probabilities: np.ndarray
    unit_features: list[dict[str, float]]
    features: dict[str, float]
    wanted: frozenset[Wants]
    quoted: list[frozenset[int]]  # for each unit (ranked), the ranks of the units an answer built on it quotes
    complete: bool = True  # every unit was scored; else ``units`` holds those that could rank first or rival it


def answer_features(rows: Sequence[dict[str, float]], probabilities: np.ndarray, evidence: dict[str, float],
                    quoted: Sequence[frozenset[int]]) -> dict[str, float]:
    """What the answer model reads: the best unit by the unit model, its lead over the best unit
    its answer does not quote (the next sentence or list item it quotes beside it is no rival),
    and how much of the question the evidence as a whole covers (``evidence``:
    ``evidence_coverage``, ``absent_terms``). ``quoted`` holds, for each row, the rows an answer
    built on it quotes. The fit (``calibrate_refusal``) computes its rows with this function too."""
    first, rival = best_and_rival(probabilities, quoted)
    best = rows[first]
    top = float(probabilities[first])
    return {
        "best_unit": top,
        "margin": top - float(probabilities[rival]) if rival is not None else top,
        "best_cosine": best["cosine"],
        "best_coverage": best["coverage"],
        "best_context_coverage": best["context_coverage"],
        "best_joint_coverage": best["joint_coverage"],
        "evidence_coverage": evidence["evidence_coverage"],
        "absent_terms": evidence["absent_terms"],
        "identifiers_found": best["identifiers_found"],
        "missing_specific": best["missing_specific"],
        "type_mismatch": best["type_mismatch"],
        "top_lane_agreement": 1.0 if best["item_rank"] == 1.0 else 0.0,
        "direct": best["direct"],
        "answer_coverage": best["answer_coverage"],
        "negation_missing": best["negation_missing"],
        "best_verifier": best.get("verifier", 0.0),  # absent without a rerank model
        "asks_kind": best["type_match"] + best["type_mismatch"],  # one of them is 1 when the question asks for a kind
        "type_match": best["type_match"],
        "mismatch_coverage": best["type_mismatch"] * best["joint_coverage"],
        "record": best["record"],
        "names_field": best["names_field"],
        "names_sibling": best["names_sibling"],
        "code_match": best["code_match"],
        "ask_gap": best["ask_gap"],
    }


def best_and_rival(probabilities: np.ndarray, quoted: Sequence[frozenset[int]]) -> tuple[int, int | None]:
    """The best unit by ``probabilities`` and its rival, the best unit its answer does not quote
    (``quoted``: for each unit, the units an answer built on it quotes), as indexes."""
    order = np.argsort(-probabilities, kind="stable")
    best = int(order[0])
    return best, next((int(i) for i in order[1:] if int(i) not in quoted[best]), None)
