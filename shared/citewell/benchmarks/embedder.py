"""The embedder's raw throughput on the chunks an ingest produced, to compare with the pipeline.

``python -m citewell.benchmarks.embedder HOME [--sample N]`` embeds the embedding texts of
N chunk records from HOME's metadata (as the embed stage would, without the cache) and
prints chunks per second.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import time
from pathlib import Path

from citewell.embedders.minilm import MiniLMEmbedder
from citewell.models import Chunk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--sample", type=int, default=2000)
    args = parser.parse_args()
    conn = sqlite3.connect(f"file:{args.home / 'metadata.db'}?mode=ro", uri=True)
    records = [row[0] for row in conn.execute("SELECT record FROM chunks")]
    random.Random(0).shuffle(records)
    texts = [Chunk.model_validate_json(r).embedding_text for r in records[: args.sample]]
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:16])  # load the session outside the timing
    started = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - started
    print(json.dumps({"chunks": len(texts), "seconds": round(seconds, 2), "chunks_per_second": round(len(texts) / seconds, 2),
                      "identity": embedder.identity, "threads": embedder.threads}))


if __name__ == "__main__":
    main()
