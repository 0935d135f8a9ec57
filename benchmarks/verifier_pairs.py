"""The answer verifier's training pairs: ``python -m benchmarks.verifier_pairs --squad DIR --realdocs DIR --out PAIRS.jsonl``.

Each labelled question of the three sources that ``calibrate_refusal`` fits on goes through the
real search and evidence path as its caller; every unit of its evidence becomes one pair
(the question, ``unit_passage(unit)``), labelled by whether the unit holds a gold fact. Only
fitting questions are written: SQuAD's even-numbered articles, the answer set's ``tune``
split, every realdocs question (with the fold of its document, so the trainer can
cross-validate over realdocs' two document halves). The observations are saved in ``--work``
as ``calibrate_refusal`` saves them, so ``calibrate_refusal --reuse`` reads the same ones.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.calibrate_refusal import Observed, observe_sources, question_sources


def pairs(observed: list[Observed]) -> list[dict[str, object]]:
    """One row a unit of each fitting question, in ranked order (``rank``) by the neutral unit model."""
    return [
        {"question": o.question.text, "passage": passage, "label": int(label), "source": o.question.source,
         "fold": o.question.fold, "answerable": o.question.answerable, "rank": rank,
         **({"text": o.texts[rank]} if getattr(o, "texts", None) else {})}  # the unit's own text (older observations lack it)
        for o in observed if o.question.fit
        for rank, (passage, label) in enumerate(zip(o.passages, o.unit_labels))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--realdocs", type=Path, nargs="+", required=True)
    parser.add_argument("--folds", type=int, default=5, help="realdocs' folds by document, as calibrate_refusal's")
    parser.add_argument("--qa-train", type=Path, help="public labelled questions (qa-train) to add (benchmarks.qa_train)")
    parser.add_argument("--work", type=Path, default=Path(".eval/calibrate"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reuse", action="store_true", help="read the observations the last run saved in --work")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    # saved and ingested as calibrate_refusal does, so either reads the other's
    observed = observe_sources(args.work, question_sources(args.squad, args.work, args.realdocs, args.folds), args.reuse)
    rows = pairs(observed)
    if args.qa_train:
        from benchmarks.qa_train import groups, pair_rows

        rows += pair_rows(groups(args.qa_train))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} pairs ({sum(r['label'] for r in rows)} holding a fact) -> {args.out}")


if __name__ == "__main__":
    main()
