"""``python -m citewell.lambdas.migrate``: move the index to a new embedding model, with the new
embedder's ``CITEWELL_*`` settings (see :func:`migrate`). An entry of its own, so the index
adapter never imports the settings that build it, nor the stages that embed."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from citewell.index.opensearch import OpenSearchIndex, migrate_index
from citewell.ingest.stages import embed_stage
from citewell.models.chunks import Chunk
from citewell.ports import Embedder
from citewell.services import Services


def migrate(services: Services, embedder: Embedder, batch: int = 256) -> dict[str, Any]:
    """Move the index to ``embedder``: build the index for its identity beside the served one,
    fill it with every served revision's chunks (embedded through the cache, so an interrupted
    run resumes cheaply), switch the alias in one ``_aliases`` call, then drop the old index
    (:func:`citewell.index.opensearch.migrate_index`).

    Search keeps using the old index until the switch. Run it before deploying the new embedder
    configuration; a revision published meanwhile is indexed under the old model only and the
    next audit re-publishes it (``missing_revision``). Old cached embeddings are the audit's
    ``foreign_embeddings``."""
    index = services.index
    if not isinstance(index, OpenSearchIndex):
        raise TypeError("migrate moves an OpenSearch index")
    staged = replace(services, embedder=embedder)

    def batches() -> Iterator[tuple[Sequence[Chunk], np.ndarray]]:
        for document in services.documents.all_documents():
            if document.active_revision is None or document.status.value == "deleting":
                continue
            chunks = services.chunks.get_chunks(document.tenant, document.document_id, document.active_revision)
            for start in range(0, len(chunks), batch):
                part = chunks[start:start + batch]
                embed_stage(staged, part)
                cached = services.embeddings.get_embeddings(embedder.identity, [c.content_hash for c in part])
                yield part, np.stack([cached[c.content_hash] for c in part])

    return migrate_index(index, embedder.identity, batches())


def main(argv: list[str]) -> int:
    if argv:
        raise SystemExit("usage: python -m citewell.lambdas.migrate")
    from citewell.lambdas.settings import services_from_env

    _, found = services_from_env()
    print(json.dumps(migrate(found, found.embedder)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
