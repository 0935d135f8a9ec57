"""How similar is a relevant passage that only the vector lane finds? The weak-hit threshold.

Nearest neighbours always return something: after a revision removes a unique word, a search
for it still brings the nearest passage back through the vector lane. ``search`` marks such a
hit ``weak`` when the lexical lane did not rank it and its cosine is below
``citewell.search.WEAK_SIMILARITY``. This measures that number instead of choosing it: on
BEIR sets with relevance judgements it runs every judged query through the real hybrid
search (k=10) and collects the cosine of every hit the vector lane ranked, relevant and not,
and apart those the lexical lane did not rank. The threshold is the 5th percentile of the
relevant hits' cosines: a relevant passage falls below it one time in twenty. (The relevant
hits only the vector lane found are too few to fit on, a handful at k=10 because the lexical
lane ranks 50 deep; the report shows them beside it.) It also says what share of the
irrelevant hits falls below, and where made-up words, the unique-word case, land.

    python -m benchmarks.vector_support --home-scifact .bench/homes/scifact \\
        --home-cranfield .bench/homes/cranfield --data ../shared/data

The homes are evaluation homes as ``make bench`` builds them (``citewell eval`` builds the
same); they are only read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from citewell.deployments import open_local
from citewell.evaluation.retrieval import EVAL_IDENTITY, load_qrels, load_queries
from citewell.search import search

QUANTILE = 0.05
K = 10


def vector_only(home: Path, dataset: Path, split: str = "test") -> dict[str, list[float]]:
    """Cosines of the hits only the vector lane ranked, split by relevance, and of every vector-ranked hit."""
    qrels = load_qrels(dataset, split)
    queries = load_queries(dataset, qrels)
    services = open_local(home)
    found: dict[str, list[float]] = {"relevant": [], "irrelevant": [], "all_relevant": [], "all_irrelevant": []}
    for qid, text in queries.items():
        for hit in search(services, EVAL_IDENTITY, text, k=K).hits:
            if hit.similarity is None:
                continue
            label = "relevant" if qrels[qid].get(hit.document_id, 0) > 0 else "irrelevant"
            found[f"all_{label}"].append(hit.similarity)
            if hit.lanes.bm25 is None:
                found[label].append(hit.similarity)
    return found


MADE_UP = ("zorblatt", "quillaby", "vorpaltrine", "snargleworth", "blicketrune")


def made_up(home: Path) -> dict[str, float]:
    """The best vector cosine for words no document holds: what a search for a removed unique word meets."""
    services = open_local(home)
    best = {}
    for word in MADE_UP:
        hits = search(services, EVAL_IDENTITY, word, k=1, lanes=("vector",)).hits
        best[f"{home.name}:{word}"] = round(hits[0].similarity or 0.0, 4) if hits else 0.0
    return best


def _quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {f"p{int(q * 100)}": round(float(np.quantile(values, q)), 4) for q in (0.05, 0.1, 0.25, 0.5, 0.75)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home-scifact", type=Path, required=True)
    parser.add_argument("--home-cranfield", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    per_set = {
        "scifact": vector_only(args.home_scifact, args.data / "scifact"),
        "cranfield": vector_only(args.home_cranfield, args.data / "cranfield"),
    }
    pooled = {kind: [v for found in per_set.values() for v in found[kind]] for kind in per_set["scifact"]}
    threshold = round(float(np.quantile(pooled["all_relevant"], QUANTILE)), 2)
    report: dict[str, object] = {"k": K, "quantile": QUANTILE, "threshold": threshold,
                                 "made_up_words": made_up(args.home_scifact) | made_up(args.home_cranfield)}
    for name, found in [*per_set.items(), ("pooled", pooled)]:
        report[name] = {
            kind: {"hits": len(values), **_quantiles(values),
                   "below_threshold": round(sum(v < threshold for v in values) / len(values), 3) if values else None}
            for kind, values in found.items()
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
