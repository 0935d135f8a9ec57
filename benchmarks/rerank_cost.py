"""What the reranker seam costs: retrieval quality and latency of hybrid search over an
evaluated home (``benchmarks.quality`` built it), with no reranker and with the stand-in
rerank server (``benchmarks.standin_reranker``: a known signal, not a model) behind the HTTP
adapter.

``python -m benchmarks.rerank_cost DATASET_DIR --home HOME --cache FILE [--depth 30]``

The same judged queries and scoring as ``benchmarks.quality``: documents ranked by their best
chunk, top 100, ir-measures. Each run asks for the evaluation's 300 hits; the reranker sees
the read-back pool (its depth or k, whichever is more), so every hit goes over the wire.
"""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.cache import CachedEmbedder
from benchmarks.measure import emit, hybrid_figures, judged_arguments
from citewell.deployments import open_local
from citewell.evaluation.retrieval import load_qrels, load_queries
from citewell.rerankers.http import HttpReranker


def main() -> None:
    parser = judged_arguments(__doc__.split("\n")[0])
    parser.add_argument("--depth", type=int, default=30)
    args = parser.parse_args()
    qrels = load_qrels(args.dataset, args.split)
    queries = load_queries(args.dataset, qrels)
    services = open_local(args.home, existing=True)
    services.embedder = CachedEmbedder(services.embedder, args.cache)  # the question's vector without the model
    os.environ["CITEWELL_RERANK_DEPTH"] = str(args.depth)
    server = subprocess.Popen([sys.executable, "-m", "benchmarks.standin_reranker"], stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip() if server.stdout else ""
        report: dict[str, object] = {"dataset": args.dataset.name, "queries": len(queries)}
        for name, reranker in (("none", None), ("standin_http", HttpReranker(url, timeout=30))):
            services.reranker = reranker
            report[name] = hybrid_figures(services, qrels, queries)
    finally:
        server.terminate()
        server.wait()
    emit(report)


if __name__ == "__main__":
    main()
