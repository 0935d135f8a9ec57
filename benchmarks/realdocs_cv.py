"""Answers on real documents, cross-validated by document through ``ask``:
``python -m benchmarks.realdocs_cv --work DIR --realdocs DIR [DIR ...] [--folds K]``.

``calibrate_refusal`` fits the answer models on every realdocs question and reports figures of
its own approximation of the answer path. This asks the questions for real: for each fold of
the documents (the same folds as ``calibrate_refusal --folds K``), the models are fitted on the
observations saved in ``--work`` without that fold's questions, and the fold's questions are
asked through ``ask`` with those models, on the folders ``calibrate_refusal`` ingested there.
No document's questions are both fitted on and measured. The figures are those of
``benchmarks.realdocs``, for each folder and for all together.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path

from benchmarks.calibrate_refusal import Observed, Scores, case_fold, fold_models
from benchmarks.realdocs import TARGETS, breakdown, meets, replay
from citewell.answers.extractive.cross_encoder import AnswerVerifier
from citewell.answers.extractive.generator import ExtractiveGenerator
from citewell.answers.extractive.unit_encoder import UnitEncoder
from citewell.answers.service import ask
from citewell.deployments import open_local
from citewell.evaluation.answers import AnswerCase, evaluate, load_cases
from citewell.models.answers import Answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path(".eval/calibrate"), help="calibrate_refusal's --work")
    parser.add_argument("--realdocs", type=Path, nargs="+", required=True, help="the realdocs folders calibrate_refusal observed")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--squad-weight", type=float, default=1.0)
    parser.add_argument("--answerset-weight", type=float, default=3.0)
    parser.add_argument("--realdocs-weight", type=float, default=1.0)
    parser.add_argument("--runner-up", type=float, default=0.5)
    parser.add_argument("--answer-threshold", type=float, default=0.70)
    parser.add_argument("--unconfirmed-recall", type=float, default=0.99)
    parser.add_argument("--choose-threshold", type=float, nargs=2, metavar=("MAX_WRONG", "MAX_ANSWERED_REFUSALS"),
                        help="as calibrate_refusal's: each fold's operating point chosen on its fitting realdocs questions")
    parser.add_argument("--unit-encoder", type=Path, help="calibrate_refusal's --unit-encoder, if it had one")
    parser.add_argument("--verifier", type=Path, help="an answer verifier (benchmarks/train_verifier) trained on no realdocs "
                        "question: each fold's rerank model is fitted on its logits, and the answers read with it")
    parser.add_argument("--verifier-without-fold", type=Path, nargs="+", metavar="FOLD",
                        help="verifiers trained without each fold in turn (train_verifier --without-fold): each fold's "
                             "questions are read with the one that never saw them")
    parser.add_argument("--show", action="store_true", help="print every question with its answer (stderr)")
    args = parser.parse_args()

    observed: list[Observed] = []
    for saved in sorted(args.work.glob("observed-*.pickle")):
        observed += pickle.loads(saved.read_bytes())
    if not any(o.question.source == "realdocs" for o in observed):
        raise SystemExit(f"{args.work} holds no realdocs observations: run calibrate_refusal --realdocs first")
    weights = {"squad": args.squad_weight, "answerset": args.answerset_weight, "realdocs": args.realdocs_weight}
    if args.verifier_without_fold and len(args.verifier_without_fold) != args.folds:
        raise SystemExit(f"--verifier-without-fold takes one verifier a fold ({args.folds})")
    paths = args.verifier_without_fold or [args.verifier] * args.folds
    scores = {fold: Scores(path) if path else None for fold, path in enumerate(paths)}
    models = fold_models(observed, weights, scores, args.folds, args.runner_up,
                         args.answer_threshold, args.unconfirmed_recall,
                         (args.choose_threshold[0], args.choose_threshold[1]) if args.choose_threshold else None)
    encoder = UnitEncoder(args.unit_encoder) if args.unit_encoder else None
    verifiers = {fold: AnswerVerifier(path) if path else None for fold, path in enumerate(paths)}
    figures: dict[str, object] = {}
    every: list[tuple[AnswerCase, Answer]] = []
    for folder in args.realdocs:
        services = open_local(args.work / f"realdocs-{folder.name}")
        cases = load_cases(folder / "questions.jsonl")
        generators = {fold: ExtractiveGenerator(services.embedder, services.embeddings, model=model, encoder=encoder,
                                                verifier=verifiers[fold])
                      for fold, (_, model) in models.items()}
        answers: list[Answer] = []
        for case in cases:
            fold = case_fold(folder, case, args.folds)
            answers.append(ask(services, case.identity, case.question, generator=generators[fold]))
            if args.show:
                shown = answers[-1].answer or ""
                print(f"--- {folder.name} {case.id} fold {fold}: {answers[-1].outcome} {' '.join(shown.split())[:300]}",
                      file=sys.stderr)
        figures[folder.name] = breakdown(cases, answers, evaluate(cases, replay(cases, answers)))
        every += zip(cases, answers)
    cases = [c for c, _ in every]
    report = evaluate(cases, replay(cases, [a for _, a in every]))
    together = breakdown(cases, [a for _, a in every], report)
    together["targets_met"] = {key: meets(together, key, op, bound) for key, op, bound in TARGETS}
    figures["together"] = together
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
