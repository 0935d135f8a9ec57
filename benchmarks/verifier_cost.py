"""What the answer verifier, or the unit encoder, adds to an ask:
``python -m benchmarks.verifier_cost --realdocs DIR [--squad DIR] [--unit-encoder]``.

The same questions asked side by side, warm, with the shipped models and with the same models
less their rerank (so without the verifier), or with ``--unit-encoder`` with the packaged unit
encoder and with the index's embedder scoring the units instead: realdocs-tune's questions as
their callers and, with ``--squad``, the held-out SQuAD 2.0 questions (``--limit`` of them). A
first pass with other fingerprints fills the unit-vector cache, so both timed passes read cached
vectors; each timed ask is its generator's first of that question, so no answer comes from the
answer cache. Prints p50 / p95 ms of each and the difference of the p50s.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from citewell.answers.extractive.generator import ExtractiveGenerator
from citewell.answers.extractive.refusal import shipped_model
from citewell.answers.service import ask
from citewell.models.identity import Identity
from citewell.services import Services


def generators(services: Services, unit_encoder: bool) -> tuple[list[ExtractiveGenerator], dict[str, ExtractiveGenerator]]:
    """The warm-up generators, and the two timed ones, the shipped configuration first."""
    shipped = shipped_model()
    warm = shipped.model_copy(update={"fitted_on": shipped.fitted_on + " (warm-up)"})
    embedder, cache = services.embedder, services.embeddings
    if unit_encoder:
        return ([ExtractiveGenerator(embedder, cache, warm), ExtractiveGenerator(embedder, cache, warm, encoder=embedder)],
                {"with unit encoder": ExtractiveGenerator(embedder, cache, shipped),
                 "without unit encoder": ExtractiveGenerator(embedder, cache, shipped, encoder=embedder)})
    return ([ExtractiveGenerator(embedder, cache, warm)],
            {"with verifier": ExtractiveGenerator(embedder, cache, shipped),
             "without verifier": ExtractiveGenerator(embedder, cache, shipped.model_copy(update={"rerank": None}))})


def side_by_side(services: Services, questions: list[tuple[Identity, str]], unit_encoder: bool = False) -> dict[str, object]:
    warmups, timed = generators(services, unit_encoder)
    first, second = timed
    times: dict[str, list[float]] = {first: [], second: []}
    for number, (identity, question) in enumerate(questions):
        for warmup in warmups:
            ask(services, identity, question, generator=warmup)
        # alternate which goes first, so neither always follows the other's cache writes
        for name in ((first, second) if number % 2 else (second, first)):
            started = time.perf_counter()
            ask(services, identity, question, generator=timed[name])
            times[name].append((time.perf_counter() - started) * 1000)
    report: dict[str, object] = {"questions": len(questions)}
    for name, values in times.items():
        report[name] = {"p50": round(float(np.percentile(values, 50)), 1), "p95": round(float(np.percentile(values, 95)), 1)}
    report["added p50"] = round(report[first]["p50"] - report[second]["p50"], 1)  # type: ignore[index]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--realdocs", type=Path, required=True)
    parser.add_argument("--squad", type=Path)
    parser.add_argument("--limit", type=int, default=300, help="held-out SQuAD questions asked")
    parser.add_argument("--work", type=Path, default=Path(".eval/verifier-cost"))
    parser.add_argument("--unit-encoder", action="store_true", help="the unit encoder's cost instead of the verifier's")
    args = parser.parse_args()
    from benchmarks.realdocs import ingest_realdocs
    from citewell.deployments import open_local
    from citewell.evaluation.answers import load_cases

    out: dict[str, object] = {}
    services = open_local(args.work / "realdocs")
    ingest_realdocs(services, args.realdocs)
    cases = load_cases(args.realdocs / "questions.jsonl")
    out["realdocs"] = side_by_side(services, [(c.identity, c.question) for c in cases], args.unit_encoder)
    if args.squad:
        from citewell.evaluation.retrieval import EVAL_IDENTITY, ingest_corpus, load_squad_questions, squad_fitting_articles

        services = open_local(args.work / "squad")
        ingest_corpus(services, args.squad)
        rows = load_squad_questions(args.squad)
        fitting = squad_fitting_articles(rows)
        held = [r for r in rows if r["context_id"].split("p")[0] not in fitting][: args.limit]
        out["squad held-out"] = side_by_side(services, [(EVAL_IDENTITY, r["text"]) for r in held], args.unit_encoder)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
