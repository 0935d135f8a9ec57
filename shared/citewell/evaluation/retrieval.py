"""Retrieval evaluation on any BEIR-layout folder, through the real ingest and search paths.

Documents are ranked by their best chunk; metrics come from ir-measures (trec_eval).
"""

from __future__ import annotations

import csv
import gzip
import json
import time
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel

from citewell.errors import InvalidInput
from citewell.ingest.runner import IngestProgress, StageClock, ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.identity import Identity
from citewell.search import search
from citewell.services import Services

EVAL_TENANT = "eval"
EVAL_ROLE = "eval"
EVAL_IDENTITY = Identity(tenant=EVAL_TENANT, roles=frozenset({EVAL_ROLE}))  # who evaluation searches as
RUN_DEPTH = 100  # documents per query: enough for Recall@100


class LaneScores(BaseModel):
    lane: str
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int
    search_ms_p50: float
    search_ms_p95: float


class IngestStats(BaseModel):
    documents: int
    published: int
    unchanged: int
    failed: int
    chunks: int
    seconds: float
    stage_seconds: dict[str, float]


def _open(path: Path) -> Iterator[str]:
    gz = path.with_name(path.name + ".gz")
    if path.exists():
        yield from path.open(encoding="utf-8")
    elif gz.exists():
        with gzip.open(gz, "rt", encoding="utf-8") as handle:
            yield from handle
    else:
        raise InvalidInput(f"missing {path} (or {gz.name})")


def load_corpus(folder: Path) -> Iterator[dict[str, str]]:
    for line in _open(folder / "corpus.jsonl"):
        if line.strip():
            yield json.loads(line)


def load_queries(folder: Path, qrels: dict[str, dict[str, int]]) -> dict[str, str]:
    queries = {}
    for line in _open(folder / "queries.jsonl"):
        if line.strip():
            row = json.loads(line)
            if row["_id"] in qrels:
                queries[row["_id"]] = row["text"]
    return queries


def load_qrels(folder: Path, split: str) -> dict[str, dict[str, int]]:
    path = folder / "qrels" / f"{split}.tsv"
    if not path.exists():
        raise InvalidInput(f"missing {path}")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return qrels


def ingest_corpus(
    services: Services,
    folder: Path,
    progress: IngestProgress | None = None,
    only: Collection[str] | None = None,
) -> IngestStats:
    """Every corpus row (or those whose id is in ``only``) becomes a plain-text document titled
    with its title; reruns are no-ops."""
    requests = (
        IngestRequest(
            document_id=row["_id"],
            tenant=EVAL_TENANT,
            allowed_roles=frozenset({EVAL_ROLE}),
            data=(row.get("text") or row.get("title") or "").encode("utf-8"),
            filename=f"{row['_id']}.txt",
            title=row.get("title") or row["_id"],
            source=f"{folder.name}/corpus.jsonl#{row['_id']}",
        )
        for row in load_corpus(folder)
        if only is None or row["_id"] in only
    )
    clock = StageClock()
    started = time.perf_counter()
    outcomes = ingest(services, requests, progress=progress, clock=clock)
    seconds = time.perf_counter() - started
    return IngestStats(
        documents=len(outcomes),
        published=sum(o.status == "published" for o in outcomes),
        unchanged=sum(o.status == "unchanged" for o in outcomes),
        failed=sum(o.status == "failed" for o in outcomes),
        chunks=sum(o.chunks for o in outcomes),
        seconds=round(seconds, 2),
        stage_seconds={stage: round(value, 2) for stage, value in clock.seconds.items()},
    )


class DocumentRun(BaseModel):
    ranking: dict[str, dict[str, float]]
    milliseconds: list[float]


def document_run(services: Services, queries: dict[str, str], lanes: tuple[str, ...]) -> DocumentRun:
    """Rank documents by their best chunk, for each query; time each search call."""
    run: dict[str, dict[str, float]] = {}
    milliseconds: list[float] = []
    for qid, text in queries.items():
        started = time.perf_counter()
        result = search(services, EVAL_IDENTITY, text, k=3 * RUN_DEPTH, lanes=lanes, depth=3 * RUN_DEPTH)
        milliseconds.append((time.perf_counter() - started) * 1000)
        run[qid] = best_chunk_ranking(hit.document_id for hit in result.hits)
    return DocumentRun(ranking=run, milliseconds=milliseconds)


def best_chunk_ranking(document_ids: Iterable[str]) -> dict[str, float]:
    """The first ``RUN_DEPTH`` distinct documents of a ranked chunk list, scored by their rank."""
    ranked: dict[str, float] = {}
    for document_id in document_ids:
        if document_id not in ranked:
            ranked[document_id] = 1.0 / (len(ranked) + 1)
            if len(ranked) == RUN_DEPTH:
                break
    return ranked


def load_squad_questions(folder: Path) -> list[dict]:
    """SQuAD 2.0 rows of ``questions.jsonl(.gz)``: text, context_id, is_impossible, answers."""
    return [json.loads(line) for line in _open(folder / "questions.jsonl") if line.strip()]


def squad_fitting_articles(rows: list[dict]) -> set[str]:
    """The SQuAD articles the answer models are fitted on (every other one, in order); the
    rest are held out, and only those are reported."""
    articles = sorted({r["context_id"].split("p")[0] for r in rows})
    return set(articles[::2])


def score(qrels: dict[str, dict[str, int]], run: DocumentRun, lane: str) -> LaneScores:
    import ir_measures
    import numpy as np
    from ir_measures import RR, R, nDCG

    measures = ir_measures.calc_aggregate([nDCG @ 10, R @ 100, RR @ 10], qrels, run.ranking)
    return LaneScores(
        lane=lane,
        ndcg_at_10=round(measures[nDCG @ 10], 4),
        recall_at_100=round(measures[R @ 100], 4),
        mrr_at_10=round(measures[RR @ 10], 4),
        queries=len(run.ranking),
        search_ms_p50=round(float(np.percentile(run.milliseconds, 50)), 1) if run.milliseconds else 0.0,
        search_ms_p95=round(float(np.percentile(run.milliseconds, 95)), 1) if run.milliseconds else 0.0,
    )
