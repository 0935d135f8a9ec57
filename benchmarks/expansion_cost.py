"""What query expansion costs: retrieval quality and latency of hybrid search over an evaluated
home (``benchmarks.quality`` built it), without expansion and with it through the
OpenAI-compatible generator talking to the local model server (``benchmarks.model_server``:
the stand-in model, whose probes are the question's own content words, a known signal, not a
model's paraphrases).

``python -m benchmarks.expansion_cost DATASET_DIR --home HOME --cache FILE``

The same judged queries and scoring as ``benchmarks.quality``: documents ranked by their best
chunk, top 100, ir-measures. The question's vector comes from the cache; the hypothetical
passage is embedded by the model the first time it is seen (then the cache holds it too), so a
first run's latencies include one model call and one embedding per query, as in service.
"""

from __future__ import annotations

import subprocess
import sys

from benchmarks.cache import CachedEmbedder
from benchmarks.measure import emit, hybrid_figures, judged_arguments
from citewell.deployments import open_local
from citewell.evaluation.retrieval import load_qrels, load_queries
from citewell.llm.openai_compatible import OpenAICompatibleModel


def main() -> None:
    parser = judged_arguments(__doc__.split("\n")[0])
    args = parser.parse_args()
    qrels = load_qrels(args.dataset, args.split)
    queries = load_queries(args.dataset, qrels)
    services = open_local(args.home, existing=True)
    services.embedder = CachedEmbedder(services.embedder, args.cache)
    server = subprocess.Popen([sys.executable, "-m", "benchmarks.model_server", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline() if server.stdout else ""
        url = first.split(" at ", 1)[1].split(" ", 1)[0]  # "serving NAME at http://HOST:PORT/v1 (OpenAI-compatible) ..."
        model = OpenAICompatibleModel(base_url=url, model="citewell-stand-in", timeout=30, retries=0)
        report: dict[str, object] = {"dataset": args.dataset.name, "queries": len(queries)}
        for name, expander in (("none", None), ("standin_expansion", model)):
            services.expander = expander
            report[name] = hybrid_figures(services, qrels, queries)
    finally:
        server.terminate()
        server.wait()
    emit(report)


if __name__ == "__main__":
    main()
