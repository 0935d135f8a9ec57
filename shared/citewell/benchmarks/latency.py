"""Warm search and ask latency on an evaluated home, one query at a time.

``python -m citewell.benchmarks.latency HOME DATASET_DIR [--split test] [--k 10]`` runs every
judged query of the dataset through ``search`` (and, with ``--ask``, through ``ask``) as
the eval identity, after one warm-up query, and prints p50 and p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from citewell.evaluation import EVAL_ROLE, EVAL_TENANT, load_qrels, load_queries
from citewell.models import Identity
from citewell.search import search
from citewell.services import open_local


def _percentiles(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(samples, 50)), 1), "p95_ms": round(float(np.percentile(samples, 95)), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--ask", action="store_true")
    args = parser.parse_args()
    services = open_local(args.home)
    identity = Identity(tenant=EVAL_TENANT, roles=frozenset({EVAL_ROLE}))
    queries = list(load_queries(args.dataset, load_qrels(args.dataset, args.split)).values())
    search(services, identity, queries[0], k=args.k)  # load the model and the vector matrix
    report: dict[str, object] = {"queries": len(queries), "k": args.k}
    for lanes, name in ((("bm25",), "bm25"), (("vector",), "vector"), (("bm25", "vector"), "hybrid")):
        samples = []
        for text in queries:
            started = time.perf_counter()
            search(services, identity, text, k=args.k, lanes=lanes)
            samples.append((time.perf_counter() - started) * 1000)
        report[f"search_{name}"] = _percentiles(samples)
    if args.ask:
        from citewell.answers.service import ask

        samples = []
        for text in queries:
            started = time.perf_counter()
            ask(services, identity, text)  # each query once: no answer comes from the cache
            samples.append((time.perf_counter() - started) * 1000)
        report["ask"] = _percentiles(samples)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
