"""Public labelled questions as training pairs for the answer reader (``../shared/data/qa-train``).

Three sets, each a question with candidate sentences labelled by whether they answer it:
SelQA's answer-sentence selection (its candidates are a Wikipedia section's sentences), and
COVID-QA and PolicyQA, SQuAD-format spans, cut into sentences with citewell's own segmenter
(the sentence holding an answer's start is the answer). A span set's question keeps the
sentences around its answer first, then others of its passage, at most ``negatives``. Rows are
``verifier_pairs``' format (``question``, ``passage``, ``text``, ``label``, ``source``, ``rank``): the
passage is where the sentence stands (article and section, or title), then the sentence, as
``cross_encoder.unit_passage`` writes a unit, so the reader trains on what it reads. Ranked by
the shipped unit encoder's cosine, so the trainer's "hardest negatives" are the ones the
answerer confuses today. None of it ships; the licences are in the folder's README.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from citewell.chunking import sentence_spans

Group = tuple[str, str, str, list[tuple[str, bool]]]  # (source, question, where, [(sentence, answers it)])


def selqa(folder: Path) -> Iterator[Group]:
    for name in ("selqa-ass-dev.json", "selqa-ass-test.json"):
        for row in json.loads((folder / name).read_text()):
            if row["answers"]:
                where = " > ".join(w for w in (row.get("article", ""), row.get("section", "")) if w)
                yield "selqa", row["question"], where, [(c, i in row["answers"]) for i, c in enumerate(row["candidates"])]


def spans_set(path: Path, source: str, negatives: int, rng: random.Random) -> Iterator[Group]:
    """A SQuAD-format file's answerable questions, each with its passage's sentences labelled."""
    for article in json.loads(path.read_text())["data"]:
        for paragraph in article["paragraphs"]:
            where = str(article.get("title") or paragraph.get("document_id") or "")
            context = paragraph["context"]
            bounds = [(s, e) for s, e in sentence_spans(context) if context[s:e].strip()]
            for qa in paragraph["qas"]:
                starts = [a["answer_start"] for a in qa.get("answers", [])]
                labels = [any(s <= a < e for a in starts) for s, e in bounds]
                holding = [i for i, held in enumerate(labels) if held]
                if not holding:
                    continue
                others = [i for i, held in enumerate(labels) if not held]
                near = sorted(others, key=lambda i: min(abs(i - j) for j in holding))[: negatives // 2]
                rest = [i for i in others if i not in near]
                rng.shuffle(rest)
                kept = holding + near + rest[: negatives - len(near)]
                sentences = [(" ".join(context[bounds[i][0]:bounds[i][1]].split()), labels[i]) for i in kept]
                yield source, qa["question"], where, sentences


def groups(folder: Path, per_source: int = 5000, negatives: int = 12, seed: int = 0) -> list[Group]:
    """Every SelQA question; at most ``per_source`` of COVID-QA's and of PolicyQA's (PolicyQA's
    templated questions repeat: a sample of them is as good as all)."""
    rng = random.Random(seed)
    chosen: list[Group] = list(selqa(folder / "selqa"))
    covid = list(spans_set(folder / "covid-qa" / "200423_covidQA.json", "covid", negatives, rng))
    policy = [g for name in ("dev.json", "test.json") for g in spans_set(folder / "policyqa" / name, "policy", negatives, rng)]
    for found in (covid, policy):
        rng.shuffle(found)
        chosen += found[:per_source]
    return chosen


def pair_rows(found: list[Group]) -> list[dict[str, object]]:
    """``verifier_pairs`` rows, each group's candidates ranked by the shipped unit encoder's cosine."""
    from citewell.answers.extractive.unit_encoder import shipped_unit_encoder
    from citewell.embedders.minilm import MiniLMEmbedder

    encoder = shipped_unit_encoder() or MiniLMEmbedder()
    texts = sorted({t for _, q, _, c in found for t, _ in c} | {q for _, q, _, _ in found})
    at = {t: i for i, t in enumerate(texts)}
    vectors = np.concatenate([encoder.embed(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    rows: list[dict[str, object]] = []
    for source, question, where, candidates in found:
        cosines = vectors[[at[t] for t, _ in candidates]] @ vectors[at[question]]
        for rank, i in enumerate(np.argsort(-cosines, kind="stable")):
            text, label = candidates[int(i)]
            rows.append({"question": question, "passage": f"{where} | {text}" if where else text, "text": text,
                         "label": int(label), "source": source,
                         "fold": -1, "answerable": True, "rank": rank})
    return rows
