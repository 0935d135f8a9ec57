"""What authority weighting does to hybrid search: quality and latency over an evaluated home with
no document marked authoritative, with a random share marked (what a wrong marking costs), and
with every judged-relevant document marked (an oracle: the most a right marking can lift).

``python -m benchmarks.authority_cost DATASET_DIR --home HOME --cache FILE [--share 0.1] [--build]``

The same judged queries and scoring as ``benchmarks.quality`` (documents ranked by their best
chunk, top 100). With ``--build`` the home is made first from the dataset (vectors from the
cache where a text was embedded before). Each marking is written to the records, measured, and
taken off again, so the home ends as it began. No evaluation corpus marks authoritative sources:
the random and the oracle markings bound what the 1.1x weight can do either way.
"""

from __future__ import annotations

import random

from benchmarks.cache import CachedEmbedder
from benchmarks.homes import fresh_home
from benchmarks.measure import emit, hybrid_figures, judged_arguments
from citewell.deployments import open_local
from citewell.evaluation.retrieval import EVAL_TENANT, ingest_corpus, load_qrels, load_queries
from citewell.services import Services


def mark(services: Services, chosen: set[str]) -> int:
    """Authority on the documents whose source id is in ``chosen``, off on every other; returns
    how many are marked."""
    marked = 0
    for document in services.documents.list_documents(EVAL_TENANT):
        wanted = document.document_id in chosen
        if document.authority != wanted:
            assert services.documents.save_document(document.model_copy(update={"authority": wanted}))
        marked += wanted
    return marked


def main() -> None:
    parser = judged_arguments(__doc__.split("\n")[0])
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--build", action="store_true")
    args = parser.parse_args()
    qrels = load_qrels(args.dataset, args.split)
    queries = load_queries(args.dataset, qrels)
    if args.build:
        ingest_corpus(fresh_home(args.home, args.cache), args.dataset)
    services = open_local(args.home, existing=True)
    services.embedder = CachedEmbedder(services.embedder, args.cache)  # the question's vector without the model
    ids = sorted(d.document_id for d in services.documents.list_documents(EVAL_TENANT))
    relevant = {doc for judged in qrels.values() for doc, grade in judged.items() if grade > 0}
    markings = {"none": set(), f"random_{args.share:g}": set(random.Random(29).sample(ids, round(len(ids) * args.share))),
                "judged_relevant": relevant & set(ids)}
    report: dict[str, object] = {"dataset": args.dataset.name, "queries": len(queries), "documents": len(ids)}
    try:
        for name, chosen in markings.items():
            marked = mark(services, chosen)
            report[name] = {"marked": marked, **hybrid_figures(services, qrels, queries)}
    finally:
        mark(services, set())
    emit(report)


if __name__ == "__main__":
    main()
