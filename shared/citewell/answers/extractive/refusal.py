"""The extractive path's two fitted decisions: which unit answers, and whether to answer at all.

Both are logistic models over named features (the typed rows of ``features``), fitted on labelled data in a clone of the
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
from pydantic import BaseModel, model_validator

from citewell.answers.extractive.features import AnswerFeatures, FeatureRow, RerankFeatures, UnitFeatures

# The first ``VERIFIED`` units by the unit model are read again by the answer verifier (``cross_encoder.py``).
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

    def logit(self, values: FeatureRow) -> float:
        """The bias plus each weight times the feature it is for, read off ``values`` by the names
        this model was fitted with, in their order."""
        return self.bias + sum(w * value for w, value in zip(self.weights, values.read(self.features)))

    def probability(self, values: FeatureRow) -> float:
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, self.logit(values)))))

    def accepts(self, values: FeatureRow) -> bool:
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

    @model_validator(mode="after")
    def _reads_known_features(self) -> RefusalModel:
        """A file that names a feature its row does not hold (one fitted by other code) is refused
        when it loads, not when the first question reaches it."""
        for name, model, row in (("unit", self.unit, UnitFeatures), ("answer", self.answer, AnswerFeatures),
                                 ("rerank", self.rerank, RerankFeatures)):
            unknown = set(model.features) - set(row.names()) if model is not None else set()
            if unknown:
                raise ValueError(f"the {name} model reads features no {row.__name__} holds: {sorted(unknown)}")
        return self

    def answers(self, values: AnswerFeatures) -> bool:
        return self.answer.accepts(values)

    def quotes_runner_up(self, best: float, runner_up: float, best_holds_kind: bool) -> bool:
        """Whether an answer quotes the runner-up, of probability ``runner_up``, beside the best:
        only when the best's quote lacks the kind asked for. One that holds it is the answer; a
        runner-up then adds noise (a stated default of 16 followed by an example's 256), and two
        values of what was asked are conditions, answered per condition or asked back."""
        return self.runner_up is not None and not best_holds_kind and runner_up >= self.runner_up * best

    def relates(self, values: AnswerFeatures) -> bool:
        """Whether a declined answer's best unit is near enough to quote as not confirmed."""
        return self.answer.probability(values) >= self.unconfirmed_threshold


def reranked(base: np.ndarray, logits: np.ndarray, top: np.ndarray, verified: np.ndarray, rerank: LogisticModel) -> np.ndarray:
    """The units' probabilities once the ``top`` ones (indexes into ``base``, the unit model's
    probabilities; ``logits`` its logits) are scored again with their verifier logits
    (``verified``): the rest stay below every verified unit, in their order."""
    again = np.array([rerank.probability(RerankFeatures(unit_logit=float(logits[i]), verifier=float(v)))
                      for i, v in zip(top, verified)])
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
