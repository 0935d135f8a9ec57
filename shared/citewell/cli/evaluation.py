"""``citewell eval-answers``: answer quality on a labelled question set; ``citewell eval``: retrieval
quality on a BEIR-layout folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from citewell.cli.common import EXIT_OK, LANE_NAMES, LANES_HELP, AddCommand, _lanes


def add_eval_answers(command: AddCommand) -> None:
    """The arguments of ``citewell eval-answers``."""
    p = command("eval-answers", help="answer quality on a labelled question set (JSONL)")
    p.add_argument("questions", type=Path, help="JSONL: id, question, tenant, roles, refuse, category, split, "
                   "expected_documents, must_contain, must_not_contain")
    p.add_argument("--split", help="only the questions of this split (default: all)")


def cmd_eval_answers(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.answers.config import evidence_budget, generator_from_env
    from citewell.deployments import open_local
    from citewell.evaluation.answers import asker, evaluate, load_cases

    cases = load_cases(args.questions, args.split)
    services = open_local(args.home, existing=True)
    generator = generator_from_env(services)
    report = evaluate(cases, asker(services, cases, generator, evidence_budget()), generator=generator.name)
    return report.model_dump(mode="json"), EXIT_OK


def add_eval(command: AddCommand) -> None:
    """The arguments of ``citewell eval``."""
    p = command("eval", help="retrieval quality on a BEIR-layout folder")
    p.add_argument("dataset", type=Path, help="a folder with corpus.jsonl[.gz], queries.jsonl and qrels/SPLIT.tsv")
    p.add_argument("--split", default="test", help="which qrels/SPLIT.tsv judges the run (default: test)")
    p.add_argument("--lanes", type=_lanes, default=LANE_NAMES,
                   help=f"{LANES_HELP}; each is scored on its own (default: all three)")


def cmd_eval(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deployments import default_home, open_local
    from citewell.evaluation.retrieval import document_run, ingest_corpus, load_qrels, load_queries, score
    from citewell.progress import IngestDisplay
    from citewell.search import LANE_CHOICES

    lanes = args.lanes
    qrels = load_qrels(args.dataset, args.split)
    queries = load_queries(args.dataset, qrels)
    home = args.home or default_home() / "eval" / args.dataset.resolve().name
    services = open_local(home)
    with IngestDisplay(None, enabled=not args.json) as display:
        stats = ingest_corpus(services, args.dataset, progress=display)
    results = [score(qrels, document_run(services, queries, LANE_CHOICES[lane]), lane) for lane in lanes]
    payload = {
        "dataset": str(args.dataset), "split": args.split, "home": str(home),
        "ingest": stats.model_dump(), "lanes": [r.model_dump() for r in results],
    }
    return payload, EXIT_OK
