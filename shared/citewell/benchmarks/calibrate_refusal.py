"""Fit the extractive path's refusal model on SQuAD 2.0 questions and report how honest it is.

``python -m citewell.benchmarks.calibrate_refusal SQUAD_DIR [--home DIR] [--write]``

The paragraphs are ingested as documents; every question goes through the real search and
evidence path. A question is labelled *answer* when it is answerable and the best evidence
sentence contains one of its gold answers, *refuse* otherwise. A logistic regression over
the support features is fitted on half of the articles and measured on the other half, so
the reported figures are on questions the model never saw. ``--write`` replaces the shipped
``refusal_model.json`` with the fitted model.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from importlib import resources
from pathlib import Path

import numpy as np

from citewell.answers.evidence import gather_evidence
from citewell.answers.generators.extractive import SentenceEmbeddings, score_support
from citewell.answers.refusal import FEATURES, MODEL_FILE, RefusalModel
from citewell.evaluation import EVAL_IDENTITY, ingest_corpus, load_squad_questions
from citewell.search import search
from citewell.services import open_local


def _article(context_id: str) -> str:
    return context_id.split("p")[0]


def collect(squad: Path, home: Path) -> list[dict]:
    services = open_local(home)
    stats = ingest_corpus(services, squad)
    print(f"ingest: {stats.model_dump_json()}")
    embed = SentenceEmbeddings(services.embedder, services.metadata)
    rows = []
    questions = load_squad_questions(squad)
    for number, question in enumerate(questions, start=1):
        hits = search(services, EVAL_IDENTITY, question["text"], k=16).hits
        evidence = gather_evidence(services, EVAL_IDENTITY, hits)
        support = score_support(embed, question["text"], evidence) if evidence else None
        best = support.sentences[0] if support else None
        gold = [a.lower() for a in question["answers"]]
        rows.append({
            "features": support.features if support else None,
            "answerable": not question["is_impossible"],
            "sentence_has_answer": bool(best and any(g in best.text.lower() for g in gold)),
            "cited_context": bool(best and best.item.document_id == question["context_id"]),
            "article": _article(question["context_id"]),
        })
        if number % 250 == 0:
            print(f"{number}/{len(questions)} questions")
    return rows


def measure(rows: list[dict], decide) -> dict[str, float]:  # type: ignore[no-untyped-def]
    answered = [r for r in rows if r["features"] is not None and decide(r["features"])]
    refused = [r for r in rows if r not in answered]
    correct_answers = [r for r in answered if r["answerable"] and r["sentence_has_answer"]]
    correct_refusals = [r for r in refused if not r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    answerable = [r for r in rows if r["answerable"]]
    answered_answerable = [r for r in answered if r["answerable"]]
    return {
        "questions": len(rows),
        "accuracy": (len(correct_answers) + len(correct_refusals)) / len(rows),
        "answer_precision": len(correct_answers) / len(answered) if answered else 0.0,
        "refusal_rate_unanswerable": len(correct_refusals) / len(unanswerable) if unanswerable else 0.0,
        "answer_rate_answerable": len(answered_answerable) / len(answerable) if answerable else 0.0,
        "citation_hit_rate": (
            sum(r["cited_context"] for r in answered_answerable) / len(answered_answerable) if answered_answerable else 0.0
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("squad", type=Path)
    parser.add_argument("--home", type=Path, default=Path(".eval/squad2"))
    parser.add_argument("--write", action="store_true", help="replace the shipped refusal_model.json")
    args = parser.parse_args()

    from sklearn.linear_model import LogisticRegression

    rows = collect(args.squad, args.home)
    articles = sorted({r["article"] for r in rows})
    train_articles = set(articles[::2])
    train = [r for r in rows if r["article"] in train_articles]
    test = [r for r in rows if r["article"] not in train_articles]
    usable = [r for r in train if r["features"] is not None]
    x = np.array([[r["features"][f] for f in FEATURES] for r in usable])
    y = np.array([r["answerable"] and r["sentence_has_answer"] for r in usable], dtype=int)
    fitted = LogisticRegression(max_iter=1000).fit(x, y)
    model = RefusalModel(
        weights=[round(float(w), 6) for w in fitted.coef_[0]],
        bias=round(float(fitted.intercept_[0]), 6),
        fitted_on=f"SQuAD 2.0 dev, articles {', '.join(sorted(train_articles))} ({len(train)} questions)",
    )
    held_out = measure(test, model.answers)
    baselines = {
        "always answer": measure(test, lambda f: True),
        "always refuse": measure(test, lambda f: False),
    }
    model.metrics = {k: round(v, 4) for k, v in held_out.items()}
    report = {"model": model.model_dump(), "held_out": held_out, "baselines": baselines}
    print(json.dumps(report, indent=2))
    if args.write:
        target = Path(str(resources.files("citewell.answers") / MODEL_FILE))
        target.write_text(model.model_dump_json(indent=2) + "\n")
        print(f"wrote {target}")
    by_label: defaultdict[tuple[bool, bool], int] = defaultdict(int)
    for r in rows:
        by_label[(r["answerable"], r["sentence_has_answer"])] += 1
    print({f"answerable={a} sentence_has_answer={s}": n for (a, s), n in sorted(by_label.items())})


if __name__ == "__main__":
    main()
