"""The units' vectors: cached per revision, and computed only for the units that can change the answer.

Embedding the evidence's sentences is most of what an answer costs, and most of them cannot
matter: ``unit_cosines`` embeds the candidates best bound first and stops when the ranking the
answer reads is settled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from citewell.answers.extractive.cross_encoder import AnswerVerifier, shipped_verifier
from citewell.answers.extractive.features import UnitFeatures
from citewell.answers.extractive.refusal import LogisticModel
from citewell.answers.extractive.unit_encoder import shipped_unit_encoder
from citewell.answers.extractive.units import Unit
from citewell.keys import units_identity
from citewell.models.values import sha256_text
from citewell.ports import Embedder, EmbeddingCache


class UnitEmbeddings:
    """Unit vectors, cached per revision: the same passages come back for many questions, so
    each unit is embedded once. They come from the packaged unit encoder where it ships
    (``unit_encoder.py``), else from the index's ``embedder``; either way they are kept in the
    namespace of the index's embedder and the revision (``units_identity``), which deleting or
    replacing the revision purges, each under its text and the encoder that embedded it. They
    carry the answer verifier a rerank model reads the first units with (``verifier``, else the
    packaged one; its file is opened only when read), so that everything that scores units
    travels together."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None, encoder: Embedder | None = None,
                 verifier: AnswerVerifier | None = None) -> None:
        self.embedder = embedder
        self.encoder = encoder or shipped_unit_encoder() or embedder
        self.verifier = verifier or shipped_verifier()
        self.cache = cache
        self.questions: dict[str, np.ndarray] = {}  # vectors the search already computed, by question

    def _key(self, text: str) -> str:
        return sha256_text(text) if self.encoder is self.embedder else sha256_text(f"{self.encoder.identity}\n{text}")

    def cached(self, question: str, units: Sequence[Unit]) -> tuple[np.ndarray | None, dict[int, np.ndarray]]:
        """The question's vector if the search computed it with the same model, and the vectors
        of the units (by position) embedded for an earlier question."""
        query = self.questions.get(question) if self.encoder is self.embedder else None
        if self.cache is None:
            return query, {}
        keys = [(u.item.revision, self._key(u.text)) for u in units]
        found: dict[tuple[str, str], np.ndarray] = {}
        for revision in sorted({r for r, _ in keys}):
            hashes = {h for r, h in keys if r == revision}
            cached = self.cache.get_embeddings(units_identity(self.embedder.identity, revision), hashes)
            found.update({(revision, h): v for h, v in cached.items()})
        return query, {i: found[k] for i, k in enumerate(keys) if k in found}

    def compute(self, question: str, query: np.ndarray | None, units: Sequence[Unit]) -> tuple[np.ndarray, np.ndarray]:
        """Embeds ``units`` (and the question, when ``query`` is None) in one call."""
        asked = [] if query is not None else [question]
        if query is not None and not units:
            return query, np.zeros((0, len(query)), dtype=np.float32)
        vectors = self.encoder.embed([*asked, *(u.text for u in units)])
        return (query if query is not None else vectors[0]), vectors[len(asked):]

    def keep(self, units: Sequence[Unit], vectors: np.ndarray) -> None:
        """Caches the units' vectors for later questions: one write an answer, whatever the
        rounds it embedded them in."""
        if self.cache is None or not len(units):
            return
        by_revision: dict[str, dict[str, np.ndarray]] = {}
        for unit, vector in zip(units, vectors):
            by_revision.setdefault(unit.item.revision, {})[self._key(unit.text)] = vector
        for revision, vectors_of in sorted(by_revision.items()):
            self.cache.put_embeddings(units_identity(self.embedder.identity, revision), vectors_of)


ROUND = 8  # units embedded at a time, best bound first
# The units an answer may be built on: those that score best without their cosine. A cold ask
# embeds at most this many, and cached or not the same ones are ranked. realdocs-tune, the answer
# set and SQuAD answer alike with 12 and with all of them (8 loses one of realdocs-tune's); the
# cost is linear in it.
CANDIDATES = 12


def unit_cosines(embed: UnitEmbeddings, question: str, units: list[Unit], rows: list[UnitFeatures],
                 quoting: list[frozenset[int]], model: LogisticModel, leading: int, every_unit: bool,
                 alone: list[bool]) -> np.ndarray:
    """Each unit's cosine to the question, NaN for a unit left unembedded. Embedding the
    evidence's sentences is most of what an answer costs, and most of them cannot matter. Unless
    ``every_unit``, only the ``CANDIDATES`` units that score best without their cosine are
    candidates. The unit model is linear in the cosine, which lies in [-1, 1], so a candidate's
    score is bounded before it is embedded. Candidates are embedded ``ROUND`` at a time, best bound
    first, and only those whose bound reaches the ``leading``-th score or, unless the first
    unit's answer quotes it, the best rival's (what the answer model reads), until none is left;
    the ranking read from the candidates embedded equals theirs in full."""
    weight = model.weights[model.features.index("cosine")]
    partial = np.array([model.logit(row) for row in rows])  # every row's cosine is still 0
    # a unit that cannot answer alone is never ranked
    candidates = sorted((i for i in range(len(units)) if alone[i]), key=lambda i: (-partial[i], i))
    if not every_unit:
        candidates = candidates[:CANDIDATES]
    query, cached = embed.cached(question, [units[i] for i in candidates])  # only the candidates' vectors are read
    known = {candidates[j]: vector for j, vector in cached.items()}
    pending = [i for i in candidates if i not in known]
    first = len(pending) if every_unit else (ROUND if query is None or not known else 0)  # the question rides along
    taken, pending = pending[:first], pending[first:]
    query, vectors = embed.compute(question, query, [units[i] for i in taken])
    embedded, fresh = list(taken), [vectors]
    cosines = np.full(len(units), np.nan)
    if known:
        cosines[list(known)] = np.stack(list(known.values())) @ query
    cosines[taken] = vectors @ query
    while pending:
        blocking = _blocking(partial + weight * np.nan_to_num(cosines), cosines, pending,
                             [partial[i] + abs(weight) for i in pending], quoting, leading)
        if not blocking:
            break
        taken = blocking[:ROUND]
        embedding = set(taken)
        pending = [i for i in pending if i not in embedding]
        query, vectors = embed.compute(question, query, [units[i] for i in taken])
        embedded += taken
        fresh.append(vectors)
        cosines[taken] = vectors @ query
    embed.keep([units[i] for i in embedded], np.concatenate(fresh))
    return cosines


def _blocking(scores: np.ndarray, cosines: np.ndarray, pending: list[int], bounds: list[float],
              quoting: list[frozenset[int]], leading: int) -> list[int]:
    """The units still to embed (bounded by ``bounds``, in ``pending``'s order) that could rank
    among the first ``leading`` or be the first unit's best rival (the best unit its answer
    does not quote), as far as the units scored so far tell; none left means the ranking is
    settled."""
    scored = sorted((i for i in range(len(scores)) if not np.isnan(cosines[i])), key=lambda i: (-scores[i], i))
    if len(scored) < leading:
        return pending
    lead = scores[scored[leading - 1]]
    rival = next((i for i in scored[1:] if i not in quoting[scored[0]]), None)
    floor = -np.inf if rival is None else scores[rival]
    return [i for i, bound in zip(pending, bounds)
            if bound >= lead or (i not in quoting[scored[0]] and bound >= floor)]
