"""Where the BM25 lane's time goes, stage by stage, on a built home.

``python -m benchmarks.lexical_cost HOME --queries DATASET_DIR [--limit N] [--depth 50] [--hybrid CACHE]``

Each judged query runs the lane's own steps one after another, each timed on its own: the
checks before a search (rows waiting, the index current), the question's terms, the searcher
(stat and reload), tantivy's ranked query (the words with the access clauses), the candidates'
rowids and lengths (fast fields), their rows read back from SQLite, the exact re-scoring, the
hits built; then the whole lane as ``SqliteSearchIndex.lexical`` runs it, and (where this code
prunes) the whole lane again with the access terms always required in the ranked query. Beside them, tantivy's
query alone in other forms, on the same searcher: the words only (no access clause, which tantivy
ranks with block-max WAND) and the words with each access clause as a filter. Percentiles of each
over the queries, after a warm-up, in one process. With ``--hybrid``, instead: k=10 searches
(the BM25 lane, hybrid, hybrid with the query's vector from that cache) with the lane pruning
and with the access terms always required, alternating query by query, and the vector lane.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tantivy

from benchmarks.measure import emit, percentiles
from citewell.deployments import open_local
from citewell.evaluation.retrieval import EVAL_IDENTITY, load_qrels, load_queries
from citewell.index import lexical


def _timed(samples: dict[str, list[float]], name: str, call: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    value = call()
    samples.setdefault(name, []).append((time.perf_counter() - started) * 1000)
    return value


def _queries(lexicon: lexical.TantivyLexicon, terms: list[str]) -> dict[str, tantivy.Query]:
    """tantivy's query for ``terms`` in the forms compared: the words alone, and with the access clauses."""
    schema, Occur, Query = lexicon.schema, tantivy.Occur, tantivy.Query
    tenant, roles = EVAL_IDENTITY.tenant, sorted(EVAL_IDENTITY.roles)
    words = Query.boolean_query([(Occur.Should, Query.term_query(schema, "words", t)) for t in terms])
    allowed = [
        Query.term_query(schema, "tenant", tenant),
        Query.boolean_query([(Occur.Should, Query.term_query(schema, "role", r)) for r in roles]),
        Query.term_query(schema, "status", "live"),
    ]
    return {
        "words_only": words,
        "words_and_access": Query.boolean_query(
            [(Occur.Must, words)] + [(Occur.Must, Query.const_score_query(q, 0.0)) for q in allowed]),
        "words_flat_and_access": Query.boolean_query(
            [(Occur.Should, Query.term_query(schema, "words", t)) for t in terms]
            + [(Occur.Must, Query.const_score_query(q, 0.0)) for q in allowed]),
    }


def profile(home: Path, queries: list[str], depth: int) -> dict[str, object]:
    services = open_local(home)
    index = services.index
    lexicon: lexical.TantivyLexicon = index._lexicon()  # the lane's own engine, as the lane opens it
    identity = EVAL_IDENTITY
    samples: dict[str, list[float]] = {}
    hits_seen: dict[str, list[int]] = {}

    def ranked(searcher: tantivy.Searcher, terms: list[str], forms: dict[str, tantivy.Query]) -> list[Any]:
        """The lane's choice of rows: its own method where this code has one, else the filtered query."""
        chosen = getattr(lexicon, "_ranked", None)
        if chosen is not None:
            return list(chosen(searcher, terms, identity.tenant, sorted(identity.roles), depth, None))
        return [a for _, a in searcher.search(forms["words_and_access"], limit=depth, count=False).hits]

    def one(text: str, keep: bool) -> None:
        local: dict[str, list[float]] = {}
        _timed(local, "checks", lambda: (index._pending_rows(), index._lexicon_current()))
        terms = _timed(local, "terms", lambda: lexicon.terms(text))
        searcher, statistics = _timed(local, "searcher", lexicon._searcher)
        forms = _queries(lexicon, terms)
        for name, query in forms.items():
            found = _timed(local, f"tantivy:{name}", lambda q=query: searcher.search(q, limit=depth, count=False).hits)
            if keep:
                hits_seen.setdefault(name, []).append(len(found))
        addresses = _timed(local, "ranked", lambda: ranked(searcher, terms, forms))
        rowids = _timed(local, "fast_fields", lambda: (lexical._whole_numbers(searcher, "rowid", addresses),
                                                        lexical._whole_numbers(searcher, "length", addresses)))
        rows = _timed(local, "read_back", lambda: index._readable(rowids[0], identity))
        texts = [lexical.text_of(rows[r]["context"], rows[r]["body"]) for r in rowids[0] if r in rows]
        lengths = [n for r, n in zip(*rowids) if r in rows]
        _timed(local, "exact_bm25", lambda: lexical._bm25(searcher, statistics, terms, texts, lengths))
        _timed(local, "hits", lambda: [index._hit(rows[r], 1.0, i) for i, r in enumerate(rowids[0]) if r in rows])
        _timed(local, "lane", lambda: index.lexical(text, identity, depth))
        if hasattr(lexical, "PRUNED_MOST"):  # the same lane with the access terms always in the ranked query
            kept, lexical.PRUNED_MOST = lexical.PRUNED_MOST, 0
            try:
                _timed(local, "lane_filtered", lambda: index.lexical(text, identity, depth))
            finally:
                lexical.PRUNED_MOST = kept
        if keep:
            for name, values in local.items():
                samples.setdefault(name, []).extend(values)

    for text in queries[:3]:
        one(text, keep=False)  # warm: the page cache, the searcher, the stemmer
    for text in queries:
        one(text, keep=True)
    report: dict[str, object] = {name: percentiles(values) for name, values in samples.items()}
    report["chunks"] = lexicon._searcher()[1].rows
    report["mean_hits"] = {name: round(sum(n) / len(n), 1) for name, n in hits_seen.items()}
    return report


def hybrid(home: Path, queries: list[str], cache: Path) -> dict[str, object]:
    """Searches as ``benchmarks.speed`` times them, each way of ranking the words in turn per query."""
    from benchmarks.cache import CachedEmbedder
    from citewell.search import search

    services = open_local(home)
    model = services.embedder
    cached = CachedEmbedder(model, cache)
    cached.embed(queries)
    samples: dict[str, list[float]] = {}
    most = lexical.PRUNED_MOST
    plan = [("bm25", cached, ("bm25",)), ("hybrid", model, ("bm25", "vector")), ("hybrid_no_embed", cached, ("bm25", "vector"))]
    try:
        for text in queries[:3] + queries:  # the first three warm up, and are dropped below
            for way in ("pruned", "filtered"):
                lexical.PRUNED_MOST = most if way == "pruned" else 0
                for name, embedder, lanes in plan:
                    services.embedder = embedder
                    _timed(samples, f"{name}:{way}", lambda t=text, ls=lanes: search(services, EVAL_IDENTITY, t, k=10, lanes=ls))
            for name, embedder in (("vector", model), ("vector_no_embed", cached)):
                services.embedder = embedder
                _timed(samples, name, lambda t=text: search(services, EVAL_IDENTITY, t, k=10, lanes=("vector",)))
    finally:
        lexical.PRUNED_MOST = most
        services.embedder = model
    return {name: percentiles(values[3:]) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--queries", type=Path, required=True, help="a BEIR-layout dataset whose judged queries to run")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--depth", type=int, default=50, help="the lane's depth (search asks max(50, 3k))")
    parser.add_argument("--hybrid", type=Path, metavar="CACHE", help="time whole searches both ways instead")
    args = parser.parse_args()
    queries = list(load_queries(args.queries, load_qrels(args.queries, "test")).values())
    queries = queries[: args.limit] if args.limit else queries
    emit(hybrid(args.home, queries, args.hybrid) if args.hybrid else profile(args.home, queries, args.depth))


if __name__ == "__main__":
    main()
