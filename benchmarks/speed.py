"""Warm query latency at a corpus size, for citewell or for the peer, in a process of its own.

``python -m benchmarks.speed HOME --queries DATASET_DIR [--build SOURCE_HOME ...
--chunks N] [--peer] [--limit N] [--ask N] --cache FILE``

With ``--build``, HOME is first filled from the source homes to N chunks (``grow``, in a child
process, so the peak memory reported is the search's, not the build's). Then
each judged query of the dataset runs once, one at a time, after a warm-up: the BM25 lane,
the vector lane and hybrid search, each with the query embedding computed by the model and
again with the query's vector taken from the cache (the search without the model), and
``ask``. ``--peer`` times the Haystack pipeline over the same chunks instead. Peak memory is
the process's, so run one size and one system per process.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from benchmarks.cache import CachedEmbedder
from benchmarks.measure import emit, percentiles
from citewell.deployments import open_local
from citewell.evaluation.retrieval import EVAL_IDENTITY, load_qrels, load_queries
from citewell.search import search
from citewell.services import Services


def timed(queries: list[str], call: Callable[[str], object], warm: str | None = None,
          after_warmup: Callable[[], object] = lambda: None) -> dict[str, float]:
    call(queries[0] if warm is None else warm)  # warm: model session, vector matrix, page cache
    after_warmup()
    samples = []
    for text in queries:
        started = time.perf_counter()
        call(text)
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def citewell_latency(services: Services, queries: list[str], cache: Path, asks: int) -> dict[str, object]:
    model = services.embedder
    report: dict[str, object] = {"embed_query": timed(queries, lambda q: model.embed([q]))}
    for name, lanes in (("bm25", ("bm25",)), ("vector", ("vector",)), ("hybrid", ("bm25", "vector"))):
        report[name] = timed(queries, lambda q, lanes=lanes: search(services, EVAL_IDENTITY, q, k=10, lanes=lanes))
    cached = CachedEmbedder(model, cache)
    vectors = cached.embed(queries)  # every query vector in memory: the timings below leave the model out
    services.embedder = cached
    for name, lanes in (("vector_no_embed", ("vector",)), ("hybrid_no_embed", ("bm25", "vector"))):
        report[name] = timed(queries, lambda q, lanes=lanes: search(services, EVAL_IDENTITY, q, k=10, lanes=lanes))
    services.embedder = model
    if asks:
        report.update(ask_latency(services, queries[:asks]))
    report["vector_recall"] = vector_recall(services, vectors)
    return report


# What the asks warm up on: not one of the timed questions, whose second ask would come from the cache.
WARM_ASK = "What do these documents say?"


def ask_latency(services: Services, queries: list[str]) -> dict[str, object]:
    """``ask`` on each query once after a warm-up on another question (no answer comes from the cache, and each
    question's units are embedded the first time they are read: what a cold ask costs), and how
    many texts the unit encoder embedded per timed ask (``ask_encoder_texts``: the question and
    the units it had not embedded before, which ``vectors.CANDIDATES`` bounds)."""
    from citewell.answers.extractive.vectors import UnitEmbeddings
    from citewell.answers.service import ask

    encoder = UnitEmbeddings(services.embedder).encoder  # the one every ask uses (cached), or the index's embedder
    embed, counted = encoder.embed, [0]

    def counting(texts: Sequence[str]) -> np.ndarray:
        counted[0] += len(texts)
        return embed(texts)

    encoder.embed = counting  # type: ignore[method-assign]
    try:
        asked = timed(queries, lambda q: ask(services, EVAL_IDENTITY, q), warm=WARM_ASK,
                      after_warmup=lambda: counted.__setitem__(0, 0))
    finally:
        del encoder.embed
    return {"ask": asked, "ask_encoder_texts": round(counted[0] / len(queries), 1)}


def vector_recall(services: Services, vectors: np.ndarray) -> dict[str, object]:
    """recall@10 of the vector lane against every row scored. A hit counts when its cosine
    reaches the exact tenth one: grown corpora hold copies with equal vectors, so which copy
    is listed is a tie, not a miss."""
    exact_lane = getattr(services.index, "exact_vector", None)
    if exact_lane is None:
        return {}
    identity, found, expected = services.embedder.identity, 0, 0
    for vector in vectors:
        exact = exact_lane(vector, identity, EVAL_IDENTITY, 10)
        if exact:
            lane = services.index.vector(vector, identity, EVAL_IDENTITY, 10)
            found += sum(1 for hit in lane if hit.score >= exact[-1].score - 1e-6)
            expected += len(exact)
    return {"recall_at_10": round(found / expected, 4) if expected else None, "queries": len(vectors)}


def peer_latency(services: Services, queries: list[str]) -> dict[str, object]:
    from benchmarks import peer

    haystack, index_seconds = peer.HaystackPeer.over_home(services, EVAL_IDENTITY)
    pipe = haystack.pipeline(depth=30)  # what citewell's k=10 search asks of each lane
    return {"version": peer.version(), "index_seconds": round(index_seconds, 2),
            "hybrid": timed(queries, lambda q: haystack.run(pipe, q))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--queries", type=Path, required=True, help="a BEIR-layout dataset whose judged queries to run")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--build", type=Path, nargs="*", default=[])
    parser.add_argument("--chunks", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries")
    parser.add_argument("--ask", type=int, default=0, help="also time ask on the first N queries")
    parser.add_argument("--peer", action="store_true")
    args = parser.parse_args()
    report: dict[str, object] = {}
    if args.build:
        started = time.perf_counter()
        built = subprocess.run(
            [sys.executable, "-m", "benchmarks.grow", args.home, *args.build, "--chunks", str(args.chunks)],
            check=True, stdout=subprocess.PIPE, text=True)
        report["built"] = json.loads(built.stdout.strip().splitlines()[-1])
        report["build_seconds"] = round(time.perf_counter() - started, 1)
        report["build_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    queries = list(load_queries(args.queries, load_qrels(args.queries, "test")).values())
    queries = queries[: args.limit] if args.limit else queries
    services = open_local(args.home)
    report["chunks"] = sum(n for *_, n in services.index.inventory())
    report["system"] = "peer" if args.peer else "citewell"
    report.update(peer_latency(services, queries) if args.peer else citewell_latency(services, queries, args.cache, args.ask))
    emit(report)


if __name__ == "__main__":
    main()
