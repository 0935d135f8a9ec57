"""The local default: quote the sentences that best support an answer, or refuse.

It needs no model service: the question and the evidence sentences are embedded with the
same model as the index, and a calibrated logistic model decides whether the best sentence
supports an answer at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citewell.answers.refusal import RefusalModel, coverage, shipped_model, term_weights
from citewell.chunking import sentence_spans
from citewell.errors import EmbedderUnavailable, GeneratorUnavailable
from citewell.models import Draft, EvidenceItem, sha256_text
from citewell.ports import Embedder, MetadataStore
from citewell.terms import content_terms

MAX_SENTENCES = 2
SECOND_SENTENCE_GAP = 0.1  # a second sentence is quoted only when nearly as well supported as the first


@dataclass(frozen=True)
class Sentence:
    item: EvidenceItem
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.item.text[self.start : self.end].strip()


@dataclass(frozen=True)
class Support:
    """The best sentences for a question and the features the refusal model reads."""

    sentences: list[Sentence]
    scores: np.ndarray
    features: dict[str, float]


class SentenceEmbeddings:
    """Sentence vectors, cached under a sentence namespace of the embedder's identity: the same
    passages come back for many questions, so each sentence is embedded once."""

    def __init__(self, embedder: Embedder, cache: MetadataStore | None = None) -> None:
        self.embedder = embedder
        self.cache = cache
        self.identity = f"{embedder.identity}#sentences"

    def __call__(self, question: str, sentences: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if self.cache is None:
            vectors = self.embedder.embed([question, *sentences])
            return vectors[0], vectors[1:]
        keys = [sha256_text(s) for s in sentences]
        found = self.cache.get_embeddings(self.identity, keys)
        missing = sorted({k: s for k, s in zip(keys, sentences) if k not in found}.items())
        vectors = self.embedder.embed([question, *(s for _, s in missing)])
        fresh = {k: v for (k, _), v in zip(missing, vectors[1:])}
        if fresh:
            self.cache.put_embeddings(self.identity, fresh)
        found.update(fresh)
        return vectors[0], np.stack([found[k] for k in keys])


def score_support(embed: SentenceEmbeddings, question: str, evidence: Sequence[EvidenceItem]) -> Support | None:
    """Rank evidence sentences by meaning (cosine) plus weighted term coverage, and describe the best."""
    sentences = [
        Sentence(item, start, end)
        for item in evidence
        for start, end in sentence_spans(item.text)
        if item.text[start:end].strip()
    ]
    if not sentences:
        return None
    query, vectors = embed(question, [s.text for s in sentences])
    cosines = vectors @ query
    terms = [content_terms(s.text) for s in sentences]
    weights = term_weights(content_terms(question), terms)
    coverages = np.array([coverage(weights, t) for t in terms])
    scores = cosines + coverages
    order = np.argsort(-scores, kind="stable")
    best = int(order[0])
    features = {
        "best_cosine": float(cosines[best]),
        "best_coverage": float(coverages[best]),
        "margin": float(scores[best] - scores[order[1]]) if len(order) > 1 else float(scores[best]),
        "evidence_coverage": coverage(weights, set().union(*terms)),
        "top_lane_agreement": 1.0 if sentences[best].item.rank == 1 else 0.0,
    }
    return Support(sentences=[sentences[int(i)] for i in order], scores=scores[order], features=features)


class ExtractiveGenerator:
    name = "extractive"

    def __init__(self, embedder: Embedder, cache: MetadataStore | None = None, model: RefusalModel | None = None) -> None:
        self.embed = SentenceEmbeddings(embedder, cache)
        self.model = model or shipped_model()

    def generate(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        try:
            support = score_support(self.embed, question, evidence)
        except EmbedderUnavailable as error:
            raise GeneratorUnavailable(f"sentences cannot be scored: {error.message}") from error
        if support is None or not self.model.answers(support.features):
            return Draft(text=None, refused=True)
        chosen = [support.sentences[0]]
        for sentence, score in zip(support.sentences[1:], support.scores[1:]):
            if len(chosen) == MAX_SENTENCES or score < support.scores[0] - SECOND_SENTENCE_GAP:
                break
            if sentence.text != chosen[0].text:
                chosen.append(sentence)
        quotes: dict[str, str] = {}
        parts = []
        for sentence in chosen:
            quotes[sentence.item.ref] = " ".join(filter(None, [quotes.get(sentence.item.ref), sentence.text]))
            parts.append(f"{sentence.text} [{sentence.item.ref}]")
        return Draft(text=" ".join(parts), refused=False, quotes=quotes)
