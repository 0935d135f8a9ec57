"""Retrieval quality of each lane on a BEIR-layout dataset, citewell beside the Haystack peer.

``python -m benchmarks.quality DATASET_DIR --home DIR --cache FILE [--queries N]``
ingests the corpus into a fresh home through the real pipeline (vectors from the cache when
a text was embedded before), runs every judged query through citewell's BM25, vector and
hybrid search, then through the peer over the very same chunks and vectors. With
``--queries N`` only the first N judged queries are kept, and the corpus is cut to their
judged documents plus every tenth other document: a smaller sample, not comparable with
published figures.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks import peer
from benchmarks.homes import fresh_home
from benchmarks.measure import emit, percentiles
from citewell.evaluation.retrieval import (
    EVAL_IDENTITY,
    RUN_DEPTH,
    DocumentRun,
    best_chunk_ranking,
    document_run,
    ingest_corpus,
    load_corpus,
    load_qrels,
    load_queries,
    score,
)
from citewell.search import LANE_CHOICES


def sample(folder: Path, queries: dict[str, str], qrels: dict[str, dict[str, int]], keep: int) -> tuple[dict[str, str], set[str]]:
    """The first ``keep`` judged queries, their judged documents and every tenth other document."""
    chosen = dict(sorted(queries.items())[:keep])
    judged = {doc for qid in chosen for doc in qrels[qid]}
    others = [row["_id"] for row in load_corpus(folder) if row["_id"] not in judged]
    return chosen, judged | set(others[::10])


def peer_runs(services, queries: dict[str, str]) -> tuple[dict[str, DocumentRun], dict[str, object]]:  # type: ignore[no-untyped-def]
    """The peer over the home's chunks: a document run per lane and what indexing cost."""
    haystack, index_seconds = peer.HaystackPeer.over_home(services, EVAL_IDENTITY)
    pipe = haystack.pipeline(depth=3 * RUN_DEPTH)
    rankings: dict[str, dict[str, dict[str, float]]] = {lane: {} for lane in LANE_CHOICES}
    milliseconds: list[float] = []
    for qid, text in queries.items():
        started = time.perf_counter()
        lanes = haystack.run(pipe, text)
        milliseconds.append((time.perf_counter() - started) * 1000)
        for lane, document_ids in lanes.items():
            rankings[lane][qid] = best_chunk_ranking(document_ids)
    runs = {lane: DocumentRun(ranking=ranking, milliseconds=[]) for lane, ranking in rankings.items()}
    return runs, {"version": peer.version(), "index_seconds": round(index_seconds, 2), "all_lanes_ms": percentiles(milliseconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=0, help="keep the first N judged queries (a quick sample)")
    args = parser.parse_args()
    qrels = load_qrels(args.dataset, args.split)
    queries = load_queries(args.dataset, qrels)
    only = None
    if args.queries:
        queries, only = sample(args.dataset, queries, qrels, args.queries)
    qrels = {qid: judged for qid, judged in qrels.items() if qid in queries}
    services = fresh_home(args.home, args.cache)
    stats = ingest_corpus(services, args.dataset, only=only)
    report: dict[str, object] = {
        "dataset": args.dataset.name, "sample": bool(args.queries), "queries": len(queries),
        "ingest": stats.model_dump(), "embedded_by_model": services.embedder.model_texts,
    }
    report["citewell"] = {lane: score(qrels, document_run(services, queries, lanes), lane).model_dump()
                          for lane, lanes in LANE_CHOICES.items()}
    runs, report["peer"] = peer_runs(services, queries)
    report["peer_lanes"] = {lane: score(qrels, run, lane).model_dump() for lane, run in runs.items()}
    emit(report)


if __name__ == "__main__":
    main()
