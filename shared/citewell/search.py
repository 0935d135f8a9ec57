"""Hybrid search: both lanes under the caller's identity, fused by RRF, then read back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from citewell.errors import (
    CitewellError,
    EmbedderSwitched,
    ExpansionUnavailable,
    RerankerUnavailable,
    RetrievalTimedOut,
    RetrievalUnavailable,
)
from citewell.expansion import expand, expander_from_env
from citewell.filters import Scope, SearchFilter
from citewell.fusion import reciprocal_rank_fusion
from citewell.models.documents import Document
from citewell.models.identity import Identity
from citewell.models.search import LaneRanks, Probes, SearchHit, SearchResult
from citewell.ports import Completer, LaneHit, Reranker, StagedIndex
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
    results, query_vector = _question_lanes(services, identity, question, lanes, depth, scope, degraded)
    expander = services.expander if services.expander is not None else expander_from_env()
    probes = _expanded(expander, question, degraded) if expander is not None else None
    if probes is not None:
        results.update(_probe_lanes(services, identity, probes, lanes, depth, scope, degraded))
    reranker = services.reranker if services.reranker is not None else reranker_from_env()
    # Read back a pool: the rerank depth, or k and a margin, so an authoritative candidate just past
    # the k-th can still move up (1.1 times lifts a hit about seven places near rank 10).
    pool = max(k, rerank_depth()) if reranker is not None else k + min(k, AUTHORITY_MARGIN)
    hits = _read_back(services, identity, filters, results, k, pool)
    hits.sort(key=lambda h: -h.score)  # stable: the fused order among equals
    if reranker is not None and len(hits) > 1:
        hits = _reranked(reranker, question, hits, k, degraded)
    hits = [h.model_copy(update={"rank": rank}) for rank, h in enumerate(hits[:k], start=1)]
    if "vector" in lanes:
        _note_vectors_pending(services, identity, degraded)
    result = SearchResult(hits=hits, degraded=degraded, expansion=probes)
    result._query_vector = query_vector
    return result


def _question_lanes(
    services: Services, identity: Identity, question: str, lanes: Sequence[str], depth: int, scope: Scope,
    degraded: list[str],
) -> tuple[dict[str, list[LaneHit]], np.ndarray | None]:
    """The question's own ranked lists, and its vector (None when the vector lane did not run). An
    embedder that fails with a typed error leaves the lexical lane alone, said so in ``degraded``;
    any other failure of the embedder is raised as it is."""
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
    return results, embedded[0] if embedded else None


def _read_back(
    services: Services, identity: Identity, filters: SearchFilter | None, results: dict[str, list[LaneHit]], k: int,
    pool: int,
) -> list[SearchHit]:
    """The lanes' lists fused, then read back in fused order until ``pool`` hits serve: a candidate
    counts only if its record still serves its revision to the caller (and the filter still admits
    it); its score is the fused one, weighed for an authoritative document."""
    by_key = {(h.chunk_id, h.revision): h for lane in results.values() for h in lane}
    similarity = {(h.chunk_id, h.revision): h.score for h in results.get("vector", [])}  # cosine
    # A row published by words first is not in the vector lane yet: it stands there at its lexical rank.
    stand_ins = {(h.chunk_id, h.revision): {"vector": h.rank} for h in results.get("bm25", []) if h.vectorless}
    fused = reciprocal_rank_fusion({lane: [(h.chunk_id, h.revision) for h in hits] for lane, hits in results.items()},
                                   stand_ins=stand_ins)
    documents: dict[str, Document | None] = {}
    hits: list[SearchHit] = []
    for start in range(0, len(fused), 2 * k):
        # Records are read for the next candidates only: most of the first k serve, and reading
        # every candidate's record (up to two lanes' depth) cost more than the fusion.
        batch = fused[start : start + 2 * k]
        unread = {by_key[key].document_id for key, _, _ in batch} - documents.keys()
        found = services.documents.get_documents(identity.tenant, unread) if unread else {}
        documents.update({document_id: found.get(document_id) for document_id in unread})
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
                    lanes=_lane_ranks(ranks), similarity=similarity.get(key), weak=_weak(ranks, similarity.get(key)),
                )
            )
            if len(hits) == pool:
                return hits
    return hits


def _note_vectors_pending(services: Services, identity: Identity, degraded: list[str]) -> None:
    """Says in ``degraded`` how many of the caller's documents were published by words first and
    wait for their vectors (an index that stages them)."""
    if not isinstance(services.index, StagedIndex):
        return
    waiting = services.index.vectorless_documents(identity)
    if waiting:  # published by words first: their vectors are still being made
        degraded.append(f"vector index not ready: lexical results only for {waiting} "
                        f"document{'s' if waiting != 1 else ''} still being embedded")


def _reranked(reranker: Reranker, question: str, hits: list[SearchHit], k: int, degraded: list[str]) -> list[SearchHit]:
    """The reranker's order of the caller's read-back hits, each with its rerank score; the fused
    order, said so in ``degraded``, when it fails."""
    try:
        order = reranker.rerank(question, hits, k)
    except RerankerUnavailable as error:
        degraded.append(f"reranker unavailable ({error.message}): fused order")
        return hits
    return [hits[r.index].model_copy(update={"rerank": r.score}) for r in order]


def _expanded(expander: Completer, question: str, degraded: list[str]) -> Probes | None:
    try:
        return expand(expander, question)
    except ExpansionUnavailable as error:
        degraded.append(f"query expansion unavailable ({error.message}): the question alone")
        return None


def _probe_lanes(
    services: Services, identity: Identity, probes: Probes, lanes: Sequence[str], depth: int, scope: Scope,
    degraded: list[str],
) -> dict[str, list[LaneHit]]:
    """Each probe's ranked list, named ``bm25:N`` or ``vector:passage``: every one ranked by the
    index under the caller's identity and the filter's scope, exactly as the question is, so a
    probe finds only what the caller could find by typing it. Probes the request has no time left
    for are left out, said so: the question's own lanes have answered."""
    found: dict[str, list[LaneHit]] = {}
    embedder = services.embedder.identity
    try:
        if "bm25" in lanes:
            for n, probe in enumerate(probes.lexical, start=1):
                ranked = partial(services.index.lanes, probe, None, embedder, identity, depth, scope)
                found[f"bm25:{n}"] = _lanes(ranked).get("bm25", [])
        _passage_lane(services, identity, probes, lanes, depth, scope, degraded, found)
    except RetrievalTimedOut as error:
        degraded.append(f"the expansion's probes were not all searched ({error.message})")
    return found


def _passage_lane(
    services: Services, identity: Identity, probes: Probes, lanes: Sequence[str], depth: int, scope: Scope,
    degraded: list[str], found: dict[str, list[LaneHit]],
) -> None:
    """The expansion's passage ranked by meaning, into ``found`` as ``vector:passage``."""
    embedder = services.embedder.identity
    if "vector" in lanes and probes.passage:
        try:
            passage = services.embedder.embed([probes.passage])[0]
        except CitewellError as error:
            degraded.append(f"the expansion's passage was not searched ({error.code})")
            return
        try:
            ranked = partial(services.index.lanes, None, passage, embedder, identity, depth, scope)
            found["vector:passage"] = _lanes(ranked).get("vector", [])
        except EmbedderSwitched:
            pass  # the question's vector lane was refused alike, and degraded says so


def _lane_ranks(ranks: dict[str, int]) -> LaneRanks:
    """The question's own lanes' ranks, and the best rank a probe gave."""
    by_probes = [rank for lane, rank in ranks.items() if ":" in lane]
    return LaneRanks(bm25=ranks.get("bm25"), vector=ranks.get("vector"), expansion=min(by_probes, default=None))


def resolve_scope(services: Services, identity: Identity, filters: SearchFilter | None) -> Scope:
    """The document ids the lanes rank inside: None without a filter."""
    if filters is None or filters.is_empty:
        return None
    return services.documents.find_documents(identity, filters)


def _weak(ranks: dict[str, int], similarity: float | None) -> bool:
    """Found by meaning alone, and not by much: no lexical list (the question's or a paraphrase's)
    ranked it, or the lexical lane did not run."""
    lexical = any(lane == "bm25" or lane.startswith("bm25:") for lane in ranks)
    return not lexical and similarity is not None and similarity < WEAK_SIMILARITY


def _lanes(run: Callable[[], dict[str, list[LaneHit]]]) -> dict[str, list[LaneHit]]:
    try:
        return run()
    except (CitewellError, ModuleNotFoundError):
        raise  # a missing package is the install's to name (the embedder's or the engine's), not an outage
    except Exception as exc:  # the engine itself failed: never report that as "nothing found"
        raise RetrievalUnavailable(f"retrieval is unavailable: {type(exc).__name__}: {exc}") from exc
