"""Build a home of a given size from evaluated homes, by copying their real documents.

``python -m benchmarks.grow TARGET_HOME SOURCE_HOME [SOURCE_HOME ...] --chunks 50000``
copies the published documents of each source in turn (records, chunk records, cached
vectors, index rows), then copies of them as ``copy-N/...``, until TARGET_HOME holds at
least that many chunks. No text is invented and nothing is re-embedded. For latency at
scale, not for quality (the copies are duplicates).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.homes import fresh_home, published
from citewell.deployments import open_local

BATCH = 20_000  # chunks per index write: each is one commit of the lexical index


def grow(target: Path, sources: Sequence[Path], chunks: int) -> dict[str, int]:
    """Fill ``target``, emptied first, to at least ``chunks`` chunks; returns what was written."""
    services = fresh_home(target)
    identity = services.embedder.identity
    loaded = [(home.name, *published(open_local(home))) for home in sources]
    if not any(pairs for _, pairs, _ in loaded):
        raise ValueError("the source homes hold no published documents")
    for _, _, vectors in loaded:  # the cached vectors too, as the embed stage would have left them
        services.embeddings.put_embeddings(identity, vectors)
    written, documents, copy, pending = 0, 0, 0, []

    def flush() -> None:
        nonlocal pending, written
        if pending:
            services.index.upsert([c for c, _ in pending], np.stack([v for _, v in pending]), identity)
            written += len(pending)
            pending = []

    while written + len(pending) < chunks:
        for name, pairs, vectors in loaded:
            for document, originals in pairs:
                if written + len(pending) >= chunks:
                    break
                prefix = f"{name}/" if copy == 0 else f"copy-{copy}/{name}/"
                new_id = prefix + document.document_id
                renamed = [
                    c.model_copy(update={"document_id": new_id, "chunk_id": c.chunk_id.replace(document.document_id, new_id, 1)})
                    for c in originals
                ]
                services.documents.save_document(document.model_copy(update={"document_id": new_id, "version": 0}))
                services.chunks.put_chunks(renamed)
                pending += [(c, vectors[c.content_hash]) for c in renamed]
                documents += 1
                if len(pending) >= BATCH:
                    flush()
        copy += 1
    flush()
    return {"documents": documents, "chunks": written}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("sources", type=Path, nargs="+")
    parser.add_argument("--chunks", type=int, required=True)
    args = parser.parse_args()
    print(json.dumps(grow(args.target, args.sources, args.chunks)))


if __name__ == "__main__":
    main()
