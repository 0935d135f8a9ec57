"""Answer quality on citewell's own answer set, both splits, as ``citewell eval-answers`` measures it.

``python -m benchmarks.answer_quality --home DIR [--cache FILE] [--no-models] [--split tune]`` builds
the answer set's knowledge base (every supported format, two tenants, restricted documents, a
revised document ingested twice) into a fresh home and asks every question as its caller. The
``held_out`` split was never used to fit or tune anything. Then the model generators
(OpenAI-compatible and Bedrock) answer the held-out split through the local model server
(``model_generators``), with and without faults.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from benchmarks.homes import fresh_home
from benchmarks.measure import emit, percentiles
from citewell.answers.evidence import DEFAULT_BUDGET_CHARS
from citewell.answers.extractive.generator import ExtractiveGenerator
from citewell.evaluation.answers import AnswerCase, asker, evaluate
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.answers import Answer
from citewell.services import Services


def ingest_answerset(services: Services, folder: Path) -> None:
    """Write the answer set's files under ``folder`` and ingest them, stage by stage (a revised
    document's second version replaces its first)."""
    from benchmarks.answerset import build as answerset

    manifest = answerset.build(folder)
    stages: defaultdict[int, list[IngestRequest]] = defaultdict(list)
    for entry in manifest:
        path = folder / entry["path"]
        stages[int(entry.get("stage", 1))].append(IngestRequest(
            document_id=entry["document_id"], tenant=entry["tenant"], allowed_roles=frozenset(entry["roles"]),
            data=path.read_bytes(), filename=path.name, title=entry.get("title"), source=entry["path"],
        ))
    for stage in sorted(stages):
        failed = [o for o in ingest(services, stages[stage]) if o.status not in ("published", "unchanged")]
        if failed:
            raise SystemExit(f"answer set documents did not publish: {[(o.document_id, o.error) for o in failed]}")


def main() -> None:
    from benchmarks.answerset import build as answerset

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--no-models", action="store_true", help="the extractive generator only")
    parser.add_argument("--split", choices=("tune", "held_out"), action="append",
                        help="only this split (repeatable; default both): tune while choosing, held_out to report")
    args = parser.parse_args()
    services = fresh_home(args.home, args.cache)
    with tempfile.TemporaryDirectory() as folder:
        ingest_answerset(services, Path(folder))
    cases = [AnswerCase.model_validate(q) for q in answerset.questions()]
    milliseconds: list[float] = []

    extractive = ExtractiveGenerator(services.embedder, services.embeddings)
    reports = {}
    for split in args.split or ("tune", "held_out"):
        chosen = [c for c in cases if c.split == split]
        asked = asker(services, chosen, extractive, DEFAULT_BUDGET_CHARS)

        def timed(case: AnswerCase, asked: Callable[[AnswerCase], Answer] = asked) -> Answer:
            started = time.perf_counter()
            answer = asked(case)
            if case.follows is None:  # a follow-up's time holds the question it follows too
                milliseconds.append((time.perf_counter() - started) * 1000)
            return answer

        report = evaluate(chosen, timed)
        reports[split] = json.loads(report.model_dump_json(exclude={"judgements"}))
        reports[split]["wrong"] = [j.model_dump() for j in report.judgements if not j.correct][:40]
    result: dict[str, object] = {"splits": reports, "ask": percentiles(milliseconds)}
    if not args.no_models and "held_out" in (args.split or ("held_out",)):
        from benchmarks import model_generators

        result["models"] = model_generators.run(args.home, answerset.QUESTIONS, answerset.questions(), "held_out",
                                                args.home.parent)
    emit(result)


if __name__ == "__main__":
    main()
