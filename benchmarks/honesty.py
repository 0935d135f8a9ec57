"""Honesty of the extractive answer path on SQuAD 2.0, with the answer models as shipped.

``python -m benchmarks.honesty SQUAD_DIR --home DIR --cache FILE [--questions N]``
ingests the paragraphs into a fresh home and asks the questions of the held-out articles (the
half the models were not fitted on; or the first N of them) through ``ask``, as a user would.
Unanswerable questions were written to look answerable from their paragraph, so refusing them
is the test; on answerable ones the answer should cite the question's own paragraph and
contain one of its gold answers.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.homes import fresh_home
from benchmarks.measure import emit, percentiles
from citewell.answers.service import ask
from citewell.evaluation.retrieval import EVAL_IDENTITY, ingest_corpus, load_squad_questions, squad_fitting_articles
from citewell.models.answers import Answer


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def judge(question: dict, answer: Answer) -> dict[str, bool]:
    answered = not answer.refused and answer.answer is not None
    text = (answer.answer or "").lower()
    return {
        "answerable": not question["is_impossible"],
        "answered": answered,
        "cites_paragraph": answered and any(c.document_id == question["context_id"] for c in answer.citations),
        "contains_gold": answered and any(g.lower() in text for g in question["answers"]),
    }


def summarise(rows: list[dict[str, bool]]) -> dict[str, float | int]:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    answered = [r for r in answerable if r["answered"]]
    correct = sum(r["answered"] and r["contains_gold"] for r in answerable) + sum(not r["answered"] for r in unanswerable)
    return {
        "questions": len(rows),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "refusal_rate_unanswerable": _rate(sum(not r["answered"] for r in unanswerable), len(unanswerable)),
        "answer_rate_answerable": _rate(len(answered), len(answerable)),
        "citation_hit_rate": _rate(sum(r["cites_paragraph"] for r in answered), len(answered)),
        "answer_contains_gold_rate": _rate(sum(r["contains_gold"] for r in answered), len(answered)),
        # Of every answer given, how many hold the gold answer: an answer to a question with none is wrong.
        "answer_precision": _rate(sum(r["contains_gold"] for r in answered),
                                  len(answered) + sum(r["answered"] for r in unanswerable)),
        "accuracy": _rate(correct, len(rows)),
        "always_refuse_accuracy": _rate(len(unanswerable), len(rows)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("squad", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=0, help="only the first N questions (a quick sample)")
    args = parser.parse_args()
    services = fresh_home(args.home, args.cache)
    stats = ingest_corpus(services, args.squad)
    questions = load_squad_questions(args.squad)
    fitting = squad_fitting_articles(questions)
    questions = [q for q in questions if q["context_id"].split("p")[0] not in fitting]
    if args.questions:
        questions = questions[: args.questions]
    rows, milliseconds = [], []
    for question in questions:
        started = time.perf_counter()
        answer = ask(services, EVAL_IDENTITY, question["text"])
        milliseconds.append((time.perf_counter() - started) * 1000)
        rows.append(judge(question, answer))
    emit({"dataset": args.squad.name, "chunks": stats.chunks, **summarise(rows),
          "ask_cached_embeddings": percentiles(milliseconds)})


if __name__ == "__main__":
    main()
