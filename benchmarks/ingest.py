"""Ingestion throughput by stage on an empty vector cache, beside the embedder alone.

``python -m benchmarks.ingest DATASET_DIR --home DIR [--documents N]`` ingests a
fixed sample of the corpus (every k-th document) into a fresh home with no cached vectors,
so every chunk goes through the model, and reports seconds and chunks per second of each
stage. Then the same chunks' texts go through the embedder alone, in the same process with
the model already loaded: the ratio of the two rates is what the pipeline costs on top of
the model.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.homes import fresh_home, published
from benchmarks.measure import emit
from citewell.evaluation.retrieval import ingest_corpus, load_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=500)
    args = parser.parse_args()
    ids = [row["_id"] for row in load_corpus(args.dataset)]
    step = max(1, len(ids) // args.documents)
    only = set(ids[::step][: args.documents])
    services = fresh_home(args.home)
    services.embedder.embed(["load the model before the clock starts"])
    stats = ingest_corpus(services, args.dataset, only=only)
    pairs, _ = published(services)
    texts = [c.embedding_text for _, chunks in pairs for c in chunks]
    started = time.perf_counter()
    services.embedder.embed(texts)
    raw_seconds = time.perf_counter() - started
    pipeline_rate = stats.chunks / stats.seconds
    raw_rate = len(texts) / raw_seconds
    emit({
        "dataset": args.dataset.name, "documents": stats.documents, "failed": stats.failed, "chunks": stats.chunks,
        "seconds": stats.seconds, "chunks_per_second": round(pipeline_rate, 2),
        "stages": {stage: {"seconds": s, "chunks_per_second": round(stats.chunks / s, 1) if s else None}
                   for stage, s in stats.stage_seconds.items()},
        "embedder_alone": {"chunks": len(texts), "seconds": round(raw_seconds, 2), "chunks_per_second": round(raw_rate, 2),
                           "identity": services.embedder.identity},
        "pipeline_share_of_embedder": round(pipeline_rate / raw_rate, 3),
    })


if __name__ == "__main__":
    main()
