"""The extractive path's two fitted decisions: which unit answers, and whether to answer at all.

Both are logistic models over named features, fitted on labelled data in a clone of the
repository (``python -m benchmarks.calibrate_refusal``, not installed) and shipped in
``refusal_model.json``. The answer model has two operating points on its probability: at
``answer.threshold`` it answers; below it, down to ``unconfirmed_threshold``, it quotes the
best unit as not confirmed; below that it found nothing. The fit chooses both
(``--unconfirmed-recall``).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources

import numpy as np
from pydantic import BaseModel

# A unit (sentence, record, list item) against the question.
UNIT_FEATURES = ("cosine", "coverage", "context_coverage", "joint_coverage", "item_rank", "identifiers_found",
                 "missing_specific", "type_match", "type_mismatch", "record", "heading", "direct", "negation_missing",
                 "names_field", "names_sibling", "code_match", "ask_gap")
# The best unit against the rest of the evidence, and how much of the question the answer built
# on it quotes (``answer_coverage``): is there an answer at all?
ANSWER_FEATURES = ("best_unit", "margin", "best_cosine", "best_coverage", "best_context_coverage", "best_joint_coverage",
                   "evidence_coverage", "absent_terms", "identifiers_found", "missing_specific", "type_mismatch",
                   "top_lane_agreement", "direct", "answer_coverage", "negation_missing", "best_verifier",
                   # The kind asked for (a number, a default, a code...): whether the question asks for one, whether
                   # the best unit holds it, and how much of the question a unit lacking it covers. On real documents
                   # a near miss states the subject without the value ("Per-CPU stats are disabled by default").
                   "asks_kind", "type_match", "mismatch_coverage", "record",
                   # the best unit is the row the question names ("error number 111" and ``Number: 111``)
                   "names_field",
                   # the best unit names a sibling of what was asked instead of it ("full-time" for "part-time")
                   "names_sibling",
                   # a "which option ...?" answered by a flag, variable or setting the question does not name
                   "code_match",
                   # how much more of the situation a question sets out the best unit covers than of its final ask
                   "ask_gap")
# The first ``VERIFIED`` units by the unit model, read again by the answer verifier
# (``verifier.py``): what the rerank model scores them by.
RERANK_FEATURES = ("unit_logit", "verifier")
VERIFIED = 4


def term_weights(question_terms: set[str], sentences: list[set[str]]) -> dict[str, float]:
    """Inverse sentence frequency over the evidence: a code found in one sentence outweighs a word
    found in all of them, and a question term found nowhere weighs most of all."""
    n = len(sentences)
    return {t: math.log(1 + n / (1 + sum(t in s for s in sentences))) for t in question_terms}


def coverage(weights: dict[str, float], terms: set[str]) -> float:
    """The weighted share of the question's terms that ``terms`` contains."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in terms) / total if total else 0.0


class LogisticModel(BaseModel):
    features: tuple[str, ...]
    weights: list[float]
    bias: float
    threshold: float = 0.5

    def logit(self, values: dict[str, float]) -> float:
        return self.bias + sum(w * values[name] for w, name in zip(self.weights, self.features))

    def probability(self, values: dict[str, float]) -> float:
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, self.logit(values)))))

    def accepts(self, values: dict[str, float]) -> bool:
        return self.probability(values) >= self.threshold


# A file fitted before the second operating point existed gets this one: low, because a wrong
# refusal costs as much as a wrong answer and an unconfirmed quote claims nothing.
DEFAULT_UNCONFIRMED_THRESHOLD = 0.05


class RefusalModel(BaseModel):
    """The models and where they were fitted, with their held-out figures. With ``rerank``, the
    first ``VERIFIED`` units by ``unit`` are ranked again by it, over their unit logit and the
    answer verifier's logit; ``answer`` then reads the verifier's logit of the best."""

    unit: LogisticModel
    answer: LogisticModel
    rerank: LogisticModel | None = None
    # Declined answers at or above this probability quote their best unit, labelled not confirmed.
    unconfirmed_threshold: float = DEFAULT_UNCONFIRMED_THRESHOLD
    # An answer quotes the runner-up (the best unit its best unit's answer does not quote) beside
    # the best when the runner-up's probability is at least this share of the best's: a close call
    # between two statements shows both, each cited. None: the best alone (a model fitted before).
    runner_up: float | None = None
    fitted_on: str = ""
    metrics: dict[str, float] = {}

    def answers(self, values: dict[str, float]) -> bool:
        return self.answer.accepts(values)

    def quotes_runner_up(self, best: float, runner_up: float, best_holds_kind: bool) -> bool:
        """Whether an answer quotes the runner-up, of probability ``runner_up``, beside the best:
        only when the best's quote lacks the kind asked for. One that holds it is the answer; a
        runner-up then adds noise (a stated default of 16 followed by an example's 256), and two
        values of what was asked are conditions, answered per condition or asked back."""
        return self.runner_up is not None and not best_holds_kind and runner_up >= self.runner_up * best

    def relates(self, values: dict[str, float]) -> bool:
        """Whether a declined answer's best unit is near enough to quote as not confirmed."""
        return self.answer.probability(values) >= self.unconfirmed_threshold


def reranked(base: np.ndarray, logits: np.ndarray, top: np.ndarray, verified: np.ndarray, rerank: LogisticModel) -> np.ndarray:
    """The units' probabilities once the ``top`` ones (indexes into ``base``, the unit model's
    probabilities; ``logits`` its logits) are scored again with their verifier logits
    (``verified``): the rest stay below every verified unit, in their order."""
    again = np.array([rerank.probability({"unit_logit": float(logits[i]), "verifier": float(v)}) for i, v in zip(top, verified)])
    out = base.astype(float)
    rest = np.ones(len(base), dtype=bool)
    rest[top] = False
    cap = (again.min() if len(again) else 1.0) * 0.999
    if rest.any() and out[rest].max() > cap:  # scaled down, not cut: their order stays
        out[rest] *= cap / out[rest].max()
    out[top] = again
    return out


MODEL_FILE = "refusal_model.json"


@lru_cache(maxsize=1)
def shipped_model() -> RefusalModel:
    return RefusalModel.model_validate(json.loads((resources.files("citewell.answers.extractive") / MODEL_FILE).read_text()))
