"""Hybrid search: both lanes under the caller's identity, fused by RRF, then read back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from citewell.errors import CitewellError, EmbedderSwitched, RerankerUnavailable, RetrievalUnavailable
from citewell.filters import Scope, SearchFilter
from citewell.fusion import reciprocal_rank_fusion
from citewell.models import Document, Identity, LaneRanks, SearchHit, SearchResult
from citewell.ports import LaneHit, Reranker, StagedIndex
from citewell.rerankers import rerank_depth, reranker_from_env
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
AUTHORITY_WEIGHT = 1.1  # an authoritative document's fused score, as corpus-engine weighs primary sources
AUTHORITY_MARGIN = 10  # hits read back past k that authority may lift into it


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
    filters: SearchFilter | None = None,
) -> SearchResult:
    """The caller's best ``k`` hits; with ``filters``, among the documents they admit, ranked so
    inside each lane (see :mod:`citewell.filters`)."""
    if identity.is_empty or not question.strip() or k <= 0:
        return SearchResult(hits=[])
    scope = resolve_scope(services, identity, filters)
    if scope is not None and not scope:
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
    try:
        results = _lanes(lambda: services.index.lanes(text, wanted, services.embedder.identity, identity, depth, scope))
    except EmbedderSwitched as error:  # a migration moved the index on before this service was redeployed
        degraded.append(f"vector lane unavailable ({error.code}): lexical results only until this service is redeployed "
                        "with the index's embedder")
        results = _lanes(lambda: services.index.lanes(text, None, services.embedder.identity, identity, depth, scope))
    if failed:
        raise failed[0]
    by_key = {(h.chunk_id, h.revision): h for lane in results.values() for h in lane}
    similarity = {(h.chunk_id, h.revision): h.score for h in results.get("vector", [])}  # cosine
    fused = reciprocal_rank_fusion({lane: [(h.chunk_id, h.revision) for h in hits] for lane, hits in results.items()})
    reranker = services.reranker if services.reranker is not None else reranker_from_env()
    # Read back a pool: the rerank depth, or k and a margin, so an authoritative candidate just past
    # the k-th can still move up (1.1 times lifts a hit about seven places near rank 10).
    pool = max(k, rerank_depth()) if reranker is not None else k + min(k, AUTHORITY_MARGIN)
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
            if filters is not None and not filters.admits(document):
                continue  # changed since the scope was resolved: the filter holds at read-back too
            hits.append(
                SearchHit(
                    rank=len(hits) + 1, chunk_id=hit.chunk_id, document_id=hit.document_id, revision=hit.revision,
                    title=document.title, section_path=hit.section_path, text=hit.text, locale=document.locale,
                    score=score * (AUTHORITY_WEIGHT if document.authority else 1.0),
                    lanes=LaneRanks(**ranks), similarity=similarity.get(key), weak=_weak(ranks, similarity.get(key)),
                )
            )
            if len(hits) == pool:
                break
        if len(hits) == pool:
            break
    hits.sort(key=lambda h: -h.score)  # stable: the fused order among equals
    if reranker is not None and len(hits) > 1:
        hits = _reranked(reranker, question, hits, k, degraded)
    hits = [h.model_copy(update={"rank": rank}) for rank, h in enumerate(hits[:k], start=1)]
    if "vector" in lanes and isinstance(services.index, StagedIndex):
        waiting = services.index.vectorless_documents(identity)
        if waiting:  # published by words first: their vectors are still being made
            degraded.append(f"vector index not ready: lexical results only for {waiting} "
                            f"document{'s' if waiting != 1 else ''} still being embedded")
    result = SearchResult(hits=hits, degraded=degraded)
    result._query_vector = embedded[0] if embedded else None
    return result


def _reranked(reranker: Reranker, question: str, hits: list[SearchHit], k: int, degraded: list[str]) -> list[SearchHit]:
    """The reranker's order of the caller's read-back hits, each with its rerank score; the fused
    order, said so in ``degraded``, when it fails."""
    try:
        order = reranker.rerank(question, hits, k)
    except RerankerUnavailable as error:
        degraded.append(f"reranker unavailable ({error.message}): fused order")
        return hits
    return [hits[r.index].model_copy(update={"rerank": r.score}) for r in order]


def resolve_scope(services: Services, identity: Identity, filters: SearchFilter | None) -> Scope:
    """The document ids the lanes rank inside: None without a filter."""
    if filters is None or filters.is_empty:
        return None
    return services.metadata.find_documents(identity, filters)


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
