"""Query-time filters at a corpus size: warm hybrid latency unfiltered and under a selective
filter, and the filtered vector lane's recall against exact filtered search.

``python -m benchmarks.filter_speed HOME --queries DATASET_DIR --cache FILE [--build SOURCE_HOME ...
--chunks N] [--share 0.01] [--limit N]``

With ``--build``, HOME is first filled from the source homes to N chunks (``benchmarks.grow``).
Then every document whose position in id order is a multiple of 1/share gets the tag
``sample`` in its record (a 1% filter by default: about that share of chunks), and each judged
query runs once, one at a time, after a warm-up: hybrid search unfiltered, and filtered by
``tags=["sample"]`` (the filter resolved against the records on each search, then ranked
inside both lanes). Query vectors come from the cache, so the model is not timed.
Recall@10 compares the filtered vector lane with the exact one over every row of the filter.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from benchmarks.cache import CachedEmbedder
from benchmarks.measure import emit
from benchmarks.speed import timed
from citewell.deployments import open_local
from citewell.evaluation.retrieval import EVAL_IDENTITY, EVAL_TENANT, load_qrels, load_queries
from citewell.filters import SearchFilter
from citewell.search import resolve_scope, search

SAMPLE = SearchFilter(tags=frozenset({"sample"}))


def tag_share(services, share: float) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Tag every (1/share)-th document ``sample``; returns the documents and chunks tagged."""
    documents = sorted(services.documents.list_documents(EVAL_TENANT), key=lambda d: d.document_id)
    step = max(1, round(1 / share))
    tagged = chunks = 0
    for n, document in enumerate(documents):
        wanted = frozenset({"sample"}) if n % step == 0 else frozenset()
        if document.tags != wanted or wanted:  # written again: the record's tags and the store's tag rows
            services.documents.save_document(document.model_copy(update={"tags": wanted}))
        if wanted:
            tagged += 1
            chunks += document.chunk_count
    return {"documents": len(documents), "tagged_documents": tagged, "tagged_chunks": chunks}


def filtered_recall(services, vectors) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """recall@10 of the filtered vector lane against every row of the filter scored (ties count)."""
    scope = resolve_scope(services, EVAL_IDENTITY, SAMPLE)
    identity, found, expected = services.embedder.identity, 0, 0
    for vector in vectors:
        exact = services.index.exact_vector(vector, identity, EVAL_IDENTITY, 10, scope)
        if exact:
            lane = services.index.vector(vector, identity, EVAL_IDENTITY, 10, scope)
            assert all(hit.document_id in scope for hit in lane)
            found += sum(1 for hit in lane if hit.score >= exact[-1].score - 1e-6)
            expected += len(exact)
    return {"recall_at_10": round(found / expected, 4) if expected else None, "queries": len(vectors)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--build", type=Path, nargs="*", default=[])
    parser.add_argument("--chunks", type=int, default=0)
    parser.add_argument("--share", type=float, default=0.01)
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    report: dict[str, object] = {}
    if args.build:
        built = subprocess.run([sys.executable, "-m", "benchmarks.grow", str(args.home), *map(str, args.build),
                                "--chunks", str(args.chunks)], check=True, capture_output=True, text=True)
        report["build"] = built.stdout.strip().splitlines()[-1]
    services = open_local(args.home, existing=True)
    report["tagged"] = tag_share(services, args.share)
    queries = list(load_queries(args.queries, load_qrels(args.queries, "test")).values())
    if args.limit:
        queries = queries[: args.limit]
    services.embedder = CachedEmbedder(services.embedder, args.cache)
    vectors = services.embedder.embed(queries)
    report["chunks"] = sum(n for *_, n in services.index.inventory())
    report["hybrid"] = timed(queries, lambda q: search(services, EVAL_IDENTITY, q, k=10))
    report["hybrid_filtered"] = timed(queries, lambda q: search(services, EVAL_IDENTITY, q, k=10, filters=SAMPLE))
    report["resolve_filter"] = timed(queries, lambda q: resolve_scope(services, EVAL_IDENTITY, SAMPLE))
    report["filtered_vector_recall"] = filtered_recall(services, vectors)
    emit(report)


if __name__ == "__main__":
    main()
