"""Grow an evaluated home to a target chunk count by copying its real documents under new ids.

``python -m citewell.benchmarks.grow SOURCE_HOME TARGET_HOME --chunks 50000`` copies every
published document of SOURCE_HOME (records, chunk records, cached vectors, index rows) as
``copy-N/ID`` until TARGET_HOME holds at least that many chunks. No text is invented and
nothing is re-embedded: the copies share their content hashes with the originals. For
latency at scale, not for quality (the copies are duplicates).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from citewell.evaluation import EVAL_TENANT
from citewell.services import open_local

BATCH = 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--chunks", type=int, required=True)
    args = parser.parse_args()
    source, target = open_local(args.source), open_local(args.target)
    identity = source.embedder.identity
    documents = [d for d in source.metadata.list_documents(EVAL_TENANT) if d.active_revision]
    originals = [(d, source.metadata.get_chunks(EVAL_TENANT, d.document_id, d.active_revision or "")) for d in documents]
    vectors = source.metadata.get_embeddings(identity, {c.content_hash for _, chunks in originals for c in chunks})
    written, copy = 0, 0
    while written < args.chunks:
        pending = []
        for document, chunks in originals:
            new_id = f"copy-{copy}/{document.document_id}"
            renamed = [c.model_copy(update={"document_id": new_id, "chunk_id": c.chunk_id.replace(document.document_id, new_id, 1)})
                       for c in chunks]
            target.metadata.put_document(document.model_copy(update={"document_id": new_id}))
            target.metadata.put_chunks(renamed)
            pending += renamed
            if len(pending) >= BATCH:
                target.index.upsert(pending, np.stack([vectors[c.content_hash] for c in pending]), identity)
                written += len(pending)
                pending = []
        if pending:
            target.index.upsert(pending, np.stack([vectors[c.content_hash] for c in pending]), identity)
            written += len(pending)
        copy += 1
    print(json.dumps({"documents": copy * len(documents), "chunks": written}))


if __name__ == "__main__":
    main()
