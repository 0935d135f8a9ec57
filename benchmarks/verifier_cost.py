"""What the answer verifier adds to an ask: ``python -m benchmarks.verifier_cost --realdocs DIR [--squad DIR]``.

The same questions asked side by side, warm, with the shipped models and with the same models
less their rerank (so without the verifier): realdocs-tune's questions as their callers and,
with ``--squad``, the held-out SQuAD 2.0 questions (``--limit`` of them). A first pass with a
third fingerprint fills the unit-vector cache, so both timed passes read the same cached
vectors; each timed ask is its generator's first of that question, so no answer comes from the
answer cache. Prints p50 / p95 ms of each and the difference of the p50s.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from citewell.answers.generators.extractive import ExtractiveGenerator
from citewell.answers.refusal import shipped_model
from citewell.answers.service import ask
from citewell.models import Identity
from citewell.services import Services


def side_by_side(services: Services, questions: list[tuple[Identity, str]]) -> dict[str, object]:
    shipped = shipped_model()
    without = shipped.model_copy(update={"rerank": None})
    warm = shipped.model_copy(update={"fitted_on": shipped.fitted_on + " (warm-up)"})
    generators = {name: ExtractiveGenerator(services.embedder, services.metadata, model)
                  for name, model in (("warm", warm), ("with verifier", shipped), ("without verifier", without))}
    times: dict[str, list[float]] = {"with verifier": [], "without verifier": []}
    for number, (identity, question) in enumerate(questions):
        ask(services, identity, question, generator=generators["warm"])
        # alternate which goes first, so neither always follows the other's cache writes
        for name in (("with verifier", "without verifier") if number % 2 else ("without verifier", "with verifier")):
            started = time.perf_counter()
            ask(services, identity, question, generator=generators[name])
            times[name].append((time.perf_counter() - started) * 1000)
    report: dict[str, object] = {"questions": len(questions)}
    for name, values in times.items():
        report[name] = {"p50": round(float(np.percentile(values, 50)), 1), "p95": round(float(np.percentile(values, 95)), 1)}
    report["added p50"] = round(report["with verifier"]["p50"] - report["without verifier"]["p50"], 1)  # type: ignore[index]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--realdocs", type=Path, required=True)
    parser.add_argument("--squad", type=Path)
    parser.add_argument("--limit", type=int, default=300, help="held-out SQuAD questions asked")
    parser.add_argument("--work", type=Path, default=Path(".eval/verifier-cost"))
    args = parser.parse_args()
    from benchmarks.realdocs import ingest_realdocs
    from citewell.answers.evaluation import load_cases
    from citewell.services import open_local

    out: dict[str, object] = {}
    services = open_local(args.work / "realdocs")
    ingest_realdocs(services, args.realdocs)
    cases = load_cases(args.realdocs / "questions.jsonl")
    out["realdocs"] = side_by_side(services, [(c.identity, c.question) for c in cases])
    if args.squad:
        from citewell.evaluation import EVAL_IDENTITY, ingest_corpus, load_squad_questions, squad_fitting_articles

        services = open_local(args.work / "squad")
        ingest_corpus(services, args.squad)
        rows = load_squad_questions(args.squad)
        fitting = squad_fitting_articles(rows)
        held = [r for r in rows if r["context_id"].split("p")[0] not in fitting][: args.limit]
        out["squad held-out"] = side_by_side(services, [(EVAL_IDENTITY, r["text"]) for r in held])
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
