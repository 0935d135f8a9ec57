"""Hybrid search: both lanes under the caller's identity, fused by RRF, then read back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from citewell.errors import CitewellError, RetrievalUnavailable
from citewell.fusion import reciprocal_rank_fusion
from citewell.models import Document, Identity, LaneRanks, SearchHit, SearchResult
from citewell.ports import LaneHit, StagedIndex
from citewell.services import Services

if TYPE_CHECKING:
    import numpy as np

LANES = ("bm25", "vector")
LANE_CHOICES = {"bm25": ("bm25",), "vector": ("vector",), "hybrid": LANES}  # what a user names: hybrid is both, fused
MIN_DEPTH = 50
# Below this cosine a hit that only the vector lane found is marked weak: one relevant hit in
# twenty on SciFact and Cranfield falls below it, and every made-up word's nearest passage does
# (docs/measurements.md, `python -m benchmarks.vector_support`). For all-MiniLM-L6-v2;
# another embedding model needs it measured again.
WEAK_SIMILARITY = 0.43


def lane_depth(k: int) -> int:
    """How many candidates each lane contributes to fusion: enough for read-back to drop some."""
    return max(MIN_DEPTH, 3 * k)


def search(
    services: Services,
    identity: Identity,
    question: str,
    k: int = 10,
    lanes: Sequence[str] = LANES,
    depth: int | None = None,
) -> SearchResult:
    if identity.is_empty or not question.strip() or k <= 0:
        return SearchResult(hits=[])
    depth = depth or lane_depth(k)
    degraded: list[str] = []
    embedded: list[np.ndarray] = []
    failed: list[Exception] = []

    def vector() -> np.ndarray | None:
        """Computed by the index while its lexical lane runs."""
        try:
            embedded.append(services.embedder.embed([question])[0])
        except CitewellError as error:
            degraded.append(f"vector lane unavailable ({error.code}): lexical results only")
            return None
        except Exception as error:  # the embedder's (a missing package, say), not the index's: raised as it is
            failed.append(error)
            return None
        return embedded[0]

    text = question if "bm25" in lanes else None
    wanted = vector if "vector" in lanes else None
    results = _lanes(lambda: services.index.lanes(text, wanted, services.embedder.identity, identity, depth))
    if failed:
        raise failed[0]
    by_key = {(h.chunk_id, h.revision): h for lane in results.values() for h in lane}
    similarity = {(h.chunk_id, h.revision): h.score for h in results.get("vector", [])}  # cosine
    fused = reciprocal_rank_fusion({lane: [(h.chunk_id, h.revision) for h in hits] for lane, hits in results.items()})
    documents: dict[str, Document | None] = {}
    hits: list[SearchHit] = []
    for start in range(0, len(fused), 2 * k):
        # Records are read for the next candidates only: most of the first k serve, and reading
        # every candidate's record (up to two lanes' depth) cost more than the fusion.
        batch = fused[start : start + 2 * k]
        wanted = {by_key[key].document_id for key, _, _ in batch} - documents.keys()
        found = services.metadata.get_documents(identity.tenant, wanted) if wanted else {}
        documents.update({document_id: found.get(document_id) for document_id in wanted})
        for key, score, ranks in batch:
            hit = by_key[key]
            document = documents[hit.document_id]
            # Read back: the index is a copy; the record decides what is current and who may see it.
            if document is None or not document.serves(hit.revision, identity):
                continue
            hits.append(
                SearchHit(
                    rank=len(hits) + 1, chunk_id=hit.chunk_id, document_id=hit.document_id, revision=hit.revision,
                    title=document.title, section_path=hit.section_path, text=hit.text, score=score,
                    lanes=LaneRanks(**ranks), similarity=similarity.get(key), weak=_weak(ranks, similarity.get(key)),
                )
            )
            if len(hits) == k:
                break
        if len(hits) == k:
            break
    if "vector" in lanes and isinstance(services.index, StagedIndex):
        waiting = services.index.vectorless_documents(identity)
        if waiting:  # published by words first: their vectors are still being made
            degraded.append(f"vector index not ready: lexical results only for {waiting} "
                            f"document{'s' if waiting != 1 else ''} still being embedded")
    result = SearchResult(hits=hits, degraded=degraded)
    result._query_vector = embedded[0] if embedded else None
    return result


def _weak(ranks: dict[str, int | None], similarity: float | None) -> bool:
    """Found by meaning alone, and not by much: the lexical lane did not rank it (or did not run)."""
    return ranks.get("bm25") is None and similarity is not None and similarity < WEAK_SIMILARITY


def _lanes(run: Callable[[], dict[str, list[LaneHit]]]) -> dict[str, list[LaneHit]]:
    try:
        return run()
    except (CitewellError, ModuleNotFoundError):
        raise  # a missing package is the install's to name (the embedder's or the engine's), not an outage
    except Exception as exc:  # the engine itself failed: never report that as "nothing found"
        raise RetrievalUnavailable(f"retrieval is unavailable: {type(exc).__name__}: {exc}") from exc
