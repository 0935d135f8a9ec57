"""A verifier's discrimination alone, cheaply:
``python -m benchmarks.verifier_auc --work DIR --verifier FILE [--squad-questions N]``.

Reads the observations ``calibrate_refusal`` (or ``verifier_pairs``) saved in ``--work``, fits
the unit model on the fitting questions as ``calibrate_refusal`` does, and on the held-out
questions (SQuAD's other articles, the first ``--squad-questions`` of them in a seeded order;
the answer set's held_out split; realdocs, every question: pass a verifier that never read
them, ``train_verifier --without-realdocs``) reports the ROC AUC of the unit model and of the
verifier's logit over the same units: the first ``VERIFIED`` of each question by the unit
model. No rerank is fitted, so only the held-out units are scored: a look at whether a
verifier can help before the full ``calibrate_refusal --verifier`` run.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
from pathlib import Path

import numpy as np

from benchmarks.calibrate_refusal import Observed, Scores, fit
from citewell.answers.extractive.refusal import VERIFIED


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path(".eval/calibrate"))
    parser.add_argument("--verifier", type=Path, required=True)
    parser.add_argument("--squad-questions", type=int, default=300, help="held-out SQuAD questions scored")
    args = parser.parse_args()
    from sklearn.metrics import roc_auc_score

    observed: list[Observed] = []
    for source in ("squad", "answerset", "realdocs"):
        saved = args.work / f"observed-{source}.pickle"
        if saved.exists():
            observed += pickle.loads(saved.read_bytes())
    model = fit([o for o in observed if o.question.source != "realdocs"])  # realdocs is measured: not fitted on
    scores = Scores(args.verifier)
    report = {}
    for source in ("squad", "answerset", "realdocs"):
        held = [o for o in observed
                if o.question.source == source and (source == "realdocs" or not o.question.fit) and o.unit_rows]
        if source == "squad":
            random.Random(13).shuffle(held)
            held = held[: args.squad_questions]
        labels, unit, verifier = [], [], []
        for o in held:
            p = np.array([model.unit.probability(r) for r in o.unit_rows])
            top = np.argsort(-p, kind="stable")[:VERIFIED]
            labels += [o.unit_labels[int(i)] for i in top]
            unit += [float(p[i]) for i in top]
            verifier += list(scores.of(o.question.text, [o.passages[int(i)] for i in top]))
        if held and 0 < sum(labels) < len(labels):
            report[source] = {"questions": len(held), "units": len(labels), "holding": int(sum(labels)),
                              "auc_unit_model": round(float(roc_auc_score(labels, unit)), 4),
                              "auc_verifier": round(float(roc_auc_score(labels, verifier)), 4),
                              "verifier_logit_spread": round(float(np.std(verifier)), 4)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
