"""What every benchmark phase reports the same way: percentiles, peak memory, one JSON line; and
the judged-query runs the cost benchmarks (reranker, expansion, authority) share."""

from __future__ import annotations

import argparse
import json
import resource
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def percentiles(milliseconds: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(milliseconds, 50)), 1),
        "p95_ms": round(float(np.percentile(milliseconds, 95)), 1),
        "n": len(milliseconds),
    }


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def emit(report: dict[str, object]) -> None:
    """The phase's result, with its peak memory, as the last line of standard output."""
    report["peak_rss_mb"] = peak_rss_mb()
    sys.stdout.write(json.dumps(report) + "\n")


def judged_arguments(description: str) -> argparse.ArgumentParser:
    """A cost benchmark's arguments: a judged dataset, the home ``benchmarks.quality`` built for it,
    the embedding cache, the split of judged queries; the caller adds its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--split", default="test")
    return parser


def hybrid_figures(services: Any, qrels: dict[str, dict[str, int]], queries: dict[str, str]) -> dict[str, object]:
    """Hybrid search over the judged queries after a five-query warm-up, scored as
    ``benchmarks.quality`` scores it: nDCG@10, Recall@100 and the searches' latency."""
    from citewell.evaluation.retrieval import document_run, score

    document_run(services, dict(list(queries.items())[:5]), ("bm25", "vector"))
    run = document_run(services, queries, ("bm25", "vector"))
    scores = score(qrels, run, "hybrid").model_dump()
    return {"ndcg_at_10": scores["ndcg_at_10"], "recall_at_100": scores["recall_at_100"],
            "search_ms": percentiles(run.milliseconds)}
