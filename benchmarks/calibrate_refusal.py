"""Fit the extractive path's unit and answer models, and report them on questions they never saw.

``python -m benchmarks.calibrate_refusal --squad SQUAD_DIR [--realdocs DIR [DIR ...]] [--folds K] [--work DIR] [--write]``

Three sources of labelled questions go through the real search and evidence path, as their
callers: SQuAD 2.0 (its paragraphs ingested as documents; half of the articles for fitting),
citewell's own answer set (a knowledge base in every supported format, with revisions,
restricted documents and questions that must be refused; its ``tune`` split for fitting) and,
with ``--realdocs``, real files nobody here wrote with labelled questions (all fitted on; their
figures are cross-validated by document: ``--folds`` groups of the documents of every folder
together, each measured by models fitted without it, so no document's questions are in both).
Each evidence unit is labelled by whether it holds a gold fact; the unit model is fitted on
those, then the answer model on whether the answer built on the best unit (its list, or the
unit with the sentence or heading quoted beside it) holds one, for answerable questions.
Each source weighs the same in both fits unless a ``--*-weight`` says otherwise. Held-out figures: the other SQuAD articles and
the answer set's ``held_out`` split. ``--write`` replaces the shipped ``refusal_model.json``.

The answer model's second operating point, ``unconfirmed_threshold`` (a declined answer above
it quotes its best unit as not confirmed), is chosen on the fitting questions by
``--unconfirmed-recall R``: the highest threshold at which a share R of the questions whose
best unit's answer holds a gold fact is answered or quoted. A quote not confirmed claims
nothing, so R is a recall target, not a trade against precision. ``--reuse`` refits in seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import shutil
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import numpy as np

from citewell.answers.evidence import gather_evidence
from citewell.answers.extractive.cross_encoder import MODEL_FILE as VERIFIER_FILE
from citewell.answers.extractive.cross_encoder import unit_passage
from citewell.answers.extractive.features import (
    ANSWER_FEATURES,
    RERANK_FEATURES,
    UNIT_FEATURES,
    AnswerFeatures,
    EvidenceCoverage,
    UnitFeatures,
    answer_features,
    best_and_rival,
)
from citewell.answers.extractive.quoting import quoted_by, runner_up_of, runner_up_quote
from citewell.answers.extractive.refusal import MODEL_FILE, VERIFIED, LogisticModel, RefusalModel, reranked
from citewell.answers.extractive.scoring import score_support
from citewell.answers.extractive.units import Unit
from citewell.answers.extractive.vectors import UnitEmbeddings
from citewell.evaluation.answers import AnswerCase
from citewell.models.identity import Identity
from citewell.ports import Embedder
from citewell.search import search
from citewell.services import Services

# Before the first fit the unit model only needs to order units: cosine plus coverage.
_NEUTRAL_UNIT = LogisticModel(features=UNIT_FEATURES,
                              weights=[1.0 if f in ("cosine", "coverage") else 0.0 for f in UNIT_FEATURES], bias=0.0)
_ANSWER_ALWAYS = LogisticModel(features=ANSWER_FEATURES, weights=[0.0] * len(ANSWER_FEATURES), bias=1.0)


@dataclass
class Question:
    text: str
    identity: Identity
    facts: list[str]  # any of them in a unit makes it an answering unit
    answerable: bool
    source: str
    fit: bool  # in the fitting half
    every_fact: bool = False  # the facts are all required (a labelled answer), not alternatives (SQuAD's spans)
    fold: int = 0  # realdocs: which group of documents it is about, for the cross-validated figures
    case_id: str = ""  # realdocs: the labelled question's id in its folder's questions.jsonl


@dataclass
class Observed:
    question: Question
    unit_rows: list[UnitFeatures]
    unit_labels: list[bool]  # the unit holds a gold fact
    evidence: EvidenceCoverage | None  # the evidence-wide values the answer model reads (None: no units)
    answer_labels: list[bool]  # an answer built on the unit (its list, or it and its companion) holds one
    quoted: list[frozenset[int]]  # for each unit, the units an answer built on it quotes
    passages: list[str] = field(default_factory=list)  # for each unit, what the verifier reads of it (``unit_passage``)
    runner_labels: list[bool] = field(default_factory=list)  # what an answer quotes of the unit as its runner-up holds one
    texts: list[str] = field(default_factory=list)  # for each unit, its own text: what the answerer embeds


def observe(services: Services, questions: Sequence[Question], encoder: Embedder | None = None) -> list[Observed]:
    """Each question through the real search and evidence path, its units scored (with
    ``encoder``'s vectors in place of the packaged unit encoder's, when given) and labelled."""
    embed = UnitEmbeddings(services.embedder, services.embeddings, encoder)
    neutral = RefusalModel(unit=_NEUTRAL_UNIT, answer=_ANSWER_ALWAYS)
    observed = []
    for number, question in enumerate(questions, start=1):
        hits = search(services, question.identity, question.text, k=16).hits
        evidence = gather_evidence(services, question.identity, hits)
        support = score_support(embed, question.text, evidence, neutral, every_unit=True) if evidence else None
        if support is not None:
            facts = [f.lower() for f in question.facts]

            def holds(units: Sequence[Unit], question: Question = question, facts: list[str] = facts) -> bool:
                text = " ".join(u.text for u in units).lower()
                found = all if question.every_fact else any
                return question.answerable and found(f in text for f in facts)

            observed.append(Observed(
                question=question, unit_rows=support.unit_features,
                unit_labels=[holds([u]) for u in support.units],
                evidence=EvidenceCoverage(support.features.evidence_coverage, support.features.absent_terms),
                answer_labels=[holds(quoted_by(question.text, support, rank)) for rank in range(len(support.units))],
                quoted=support.quoted, passages=[unit_passage(u) for u in support.units],
                runner_labels=[holds(runner_up_quote(question.text, support, rank)) for rank in range(len(support.units))],
                texts=[u.text for u in support.units],
            ))
        else:
            observed.append(Observed(question, [], [], None, [], []))
        if number % 250 == 0:
            print(f"{number}/{len(questions)} questions", flush=True)
    return observed


class Scores:
    """The answer verifier's logits of (question, passage) pairs, each computed once."""

    def __init__(self, path: Path) -> None:
        from citewell.answers.extractive.cross_encoder import AnswerVerifier

        self.verifier = AnswerVerifier(path)
        self.known: dict[tuple[str, str], float] = {}

    def of(self, question: str, passages: Sequence[str]) -> np.ndarray:
        fresh = [p for p in dict.fromkeys(passages) if (question, p) not in self.known]
        if fresh:
            self.known.update(zip(((question, p) for p in fresh), map(float, self.verifier.score(question, fresh))))
        return np.array([self.known[(question, p)] for p in passages])


def _ranked(o: Observed, model: RefusalModel, scores: Scores | None) -> tuple[list[UnitFeatures], np.ndarray]:
    """The unit rows and their probabilities as the answerer ranks them: by the unit model,
    then, with a rerank model, the first ``VERIFIED`` again with their verifier logits."""
    p = np.array([model.unit.probability(r) for r in o.unit_rows])
    if model.rerank is None or scores is None:
        return o.unit_rows, p
    top = np.argsort(-p, kind="stable")[:VERIFIED]
    verified = scores.of(o.question.text, [o.passages[int(i)] for i in top])
    rows = list(o.unit_rows)
    for i, v in zip(top, verified):
        rows[int(i)] = replace(rows[int(i)], verifier=float(v))
    logits = np.array([model.unit.logit(r) for r in rows])
    return rows, reranked(p, logits, top, verified, model.rerank)


def _answer_row(o: Observed, model: RefusalModel, scores: Scores | None) -> tuple[AnswerFeatures, bool] | None:
    if not o.unit_rows or o.evidence is None:
        return None
    rows, p = _ranked(o, model, scores)
    label = o.answer_labels[best_and_rival(p, o.quoted)[0]]
    second = runner_up_of(rows, p, o.quoted, model)
    if second is not None and o.runner_labels:
        label = label or o.runner_labels[second]  # the answer quotes the runner-up too
    return answer_features(rows, p, o.evidence, o.quoted), label


def _weights(sources: list[str], weights: dict[str, float]) -> np.ndarray:
    """Each source weighs the same in a fit, however many rows it has; then each by its ``weights``
    entry (1 when absent)."""
    counts = {s: sources.count(s) for s in set(sources)}
    share = {s: weights.get(s, 1.0) for s in counts}
    return np.array([len(sources) * share[s] / (len(counts) * counts[s]) for s in sources])


def fit(observed: list[Observed], weights: dict[str, float] | None = None, scores: Scores | None = None,
        runner_up: float | None = None, threshold: float = 0.5) -> RefusalModel:
    """The unit model; with ``scores``, the rerank model on the first ``VERIFIED`` units of each
    question; then the answer model on the best unit as they rank it, labelled by what the answer
    quotes (with ``runner_up``, the runner-up too when it is that close), answering at ``threshold``."""
    from sklearn.linear_model import LogisticRegression

    weights = weights or {}
    train = [o for o in observed if o.question.fit]
    unit_x = [r.read(UNIT_FEATURES) for o in train for r in o.unit_rows]
    unit_y = [label for o in train for label in o.unit_labels]
    unit_sources = [o.question.source for o in train for _ in o.unit_rows]
    fitted = LogisticRegression(max_iter=2000).fit(np.array(unit_x), np.array(unit_y, dtype=int),
                                                   sample_weight=_weights(unit_sources, weights))
    unit = LogisticModel(features=UNIT_FEATURES, weights=[round(float(w), 6) for w in fitted.coef_[0]],
                         bias=round(float(fitted.intercept_[0]), 6))
    rerank = None
    if scores is not None:
        rerank_x, rerank_y, rerank_sources = [], [], []
        for o in train:
            if not o.unit_rows:
                continue
            p = np.array([unit.probability(r) for r in o.unit_rows])
            top = np.argsort(-p, kind="stable")[:VERIFIED]
            for i, v in zip(top, scores.of(o.question.text, [o.passages[int(i)] for i in top])):
                rerank_x.append([unit.logit(o.unit_rows[int(i)]), float(v)])
                rerank_y.append(int(o.unit_labels[int(i)]))
                rerank_sources.append(o.question.source)
        fitted = LogisticRegression(max_iter=2000).fit(np.array(rerank_x), np.array(rerank_y),
                                                       sample_weight=_weights(rerank_sources, weights))
        rerank = LogisticModel(features=RERANK_FEATURES, weights=[round(float(w), 6) for w in fitted.coef_[0]],
                               bias=round(float(fitted.intercept_[0]), 6))
    ranking = RefusalModel(unit=unit, answer=_ANSWER_ALWAYS, rerank=rerank, runner_up=runner_up)
    rows = [(o.question.source, _answer_row(o, ranking, scores)) for o in train]
    usable = [(source, row) for source, row in rows if row is not None]
    answer_x = np.array([row[0].read(ANSWER_FEATURES) for _, row in usable])
    answer_y = np.array([row[1] for _, row in usable], dtype=int)
    fitted = LogisticRegression(max_iter=2000).fit(answer_x, answer_y, sample_weight=_weights([s for s, _ in usable], weights))
    answer = LogisticModel(features=ANSWER_FEATURES, weights=[round(float(w), 6) for w in fitted.coef_[0]],
                           bias=round(float(fitted.intercept_[0]), 6), threshold=threshold)
    return RefusalModel(unit=unit, answer=answer, rerank=rerank, runner_up=runner_up)


def choose_unconfirmed(observed: list[Observed], model: RefusalModel, recall: float, scores: Scores | None = None) -> float:
    """The highest probability at which, of the fitting questions whose best unit's answer holds
    a gold fact, at least ``recall`` are at or above it; never above the answer threshold."""
    held = sorted((model.answer.probability(row[0]) for o in observed if o.question.fit
                   if (row := _answer_row(o, model, scores)) is not None and row[1]), reverse=True)
    if not held:
        return model.unconfirmed_threshold
    at = held[max(0, math.ceil(recall * len(held)) - 1)]
    return min(model.answer.threshold, math.floor(at * 10_000) / 10_000)


def choose_threshold(observed: list[Observed], model: RefusalModel, max_wrong: float, max_answered_refusals: float,
                     scores: Scores | None = None) -> float:
    """The lowest answer threshold (in steps of 0.01, 0.3 to 0.95) at which, over the fitting
    realdocs questions, answers lacking a fact stay within ``max_wrong`` of the answerable ones
    and answers to questions that must be refused within ``max_answered_refusals`` of those: the
    operating point the targets name, chosen on real documents, never on the ones measured."""
    rows = [(o, row) for o in observed if o.question.fit and o.question.source == "realdocs"
            if (row := _answer_row(o, model, scores)) is not None]
    answerable = sum(o.question.answerable for o in observed if o.question.fit and o.question.source == "realdocs") or 1
    refusals = sum(not o.question.answerable for o in observed if o.question.fit and o.question.source == "realdocs") or 1
    probabilities = [(o.question.answerable, row[1], model.answer.probability(row[0])) for o, row in rows]
    for step in range(30, 96):
        at = step / 100
        wrong = sum(answerable_ and not right and p >= at for answerable_, right, p in probabilities)
        answered_refusals = sum(not answerable_ and p >= at for answerable_, _, p in probabilities)
        if wrong <= max_wrong * answerable and answered_refusals <= max_answered_refusals * refusals:
            return at
    return 0.95


def measure(observed: list[Observed], model: RefusalModel, scores: Scores | None = None) -> dict[str, float]:
    """Right answers (the answer built on the best unit holds a gold fact) and right refusals, on these questions."""
    answered = correct = answerable = answered_right = refused_right = unanswerable = quoted_right = quoted_unanswerable = 0
    for o in observed:
        row = _answer_row(o, model, scores)
        says = row is not None and model.answer.accepts(row[0])
        right = says and row is not None and row[1]
        quotes = row is not None and not says and model.relates(row[0])
        quoted_right += quotes and row is not None and row[1]
        quoted_unanswerable += quotes and not o.question.answerable
        answerable += o.question.answerable
        unanswerable += not o.question.answerable
        answered += says
        answered_right += right
        refused_right += (not says) and not o.question.answerable
        correct += right or ((not says) and not o.question.answerable)
    return {
        "questions": len(observed), "accuracy": round(correct / len(observed), 4) if observed else 0.0,
        "answer_precision": round(answered_right / answered, 4) if answered else 0.0,
        "answer_rate_answerable": round(answered_right / answerable, 4) if answerable else 0.0,
        "refusal_rate_unanswerable": round(refused_right / unanswerable, 4) if unanswerable else 0.0,
        "always_refuse_accuracy": round(unanswerable / len(observed), 4) if observed else 0.0,
        # a declined answer quoting its best unit; labelled as its answer would be, without the shared-word check
        "fact_shown_answerable": round((answered_right + quoted_right) / answerable, 4) if answerable else 0.0,
        "unconfirmed_rate_unanswerable": round(quoted_unanswerable / unanswerable, 4) if unanswerable else 0.0,
    }


def discrimination(parts: Sequence[tuple[list[Observed], RefusalModel, Scores | None]]) -> dict[str, float]:
    """How well each scorer tells the units holding a fact among the first ``VERIFIED`` by the
    unit model (ROC AUC over those units of every question of every part, each part scored by
    its own models and verifier): the unit model, and with a verifier its logit alone and the
    rerank blend. ``best_holds_*``: answerable questions whose best unit holds a fact, ranked by
    the unit model and after the rerank."""
    from sklearn.metrics import roc_auc_score

    labels, unit, verifier, blend, best = [], [], [], [], {"unit_model": 0, "reranked": 0}
    for observed, model, scores in parts:
        for o in observed:
            if not o.unit_rows:
                continue
            p = np.array([model.unit.probability(r) for r in o.unit_rows])
            top = np.argsort(-p, kind="stable")[:VERIFIED]
            labels += [o.unit_labels[int(i)] for i in top]
            unit += [float(p[i]) for i in top]
            best["unit_model"] += o.question.answerable and o.unit_labels[int(top[0])]
            if scores is not None and model.rerank is not None:
                _, again = _ranked(o, model, scores)
                verifier += list(scores.of(o.question.text, [o.passages[int(i)] for i in top]))
                blend += [float(again[i]) for i in top]
                best["reranked"] += o.question.answerable and o.unit_labels[int(np.argmax(again))]
    y = np.array(labels, dtype=int)
    if not 0 < y.sum() < len(y):
        return {"units": len(y)}
    out: dict[str, float] = {"units": len(y), "holding": int(y.sum()), "auc_unit_model": round(float(roc_auc_score(y, unit)), 4),
                             "best_holds_unit_model": best["unit_model"]}
    if verifier:
        out |= {"auc_verifier": round(float(roc_auc_score(y, verifier)), 4),
                "auc_rerank": round(float(roc_auc_score(y, blend)), 4), "best_holds_reranked": best["reranked"]}
    return out


def squad_questions(services: Services, squad: Path) -> list[Question]:
    from citewell.evaluation.retrieval import EVAL_IDENTITY, ingest_corpus, load_squad_questions, squad_fitting_articles

    ingest_corpus(services, squad)
    rows = load_squad_questions(squad)
    fitting = squad_fitting_articles(rows)
    return [
        Question(text=r["text"], identity=EVAL_IDENTITY, facts=list(r["answers"]), answerable=not r["is_impossible"],
                 source="squad", fit=r["context_id"].split("p")[0] in fitting)
        for r in rows
    ]


def answerset_questions(services: Services, folder: Path) -> list[Question]:
    from benchmarks.answer_quality import ingest_answerset
    from benchmarks.answerset import build as answerset

    ingest_answerset(services, folder)
    return [
        Question(text=q["question"], identity=Identity(tenant=q["tenant"], roles=frozenset(q["roles"])),
                 facts=q["must_contain"], answerable=not q["refuse"], source="answerset", fit=q["split"] == "tune")
        for q in answerset.questions()
    ]


def document_fold(folder: Path, document: str, folds: int) -> int:
    """The fold of a realdocs document: the same on every run and machine (a CRC of the folder's
    name and the document's id), so a document's questions are never on both sides of a fold."""
    return zlib.crc32(f"{folder.name}/{document}".encode()) % folds


def case_fold(folder: Path, case: AnswerCase, folds: int) -> int:
    """A realdocs question's fold: its (first) expected document's, or for a question about no
    document, its id's."""
    return document_fold(folder, case.expected_documents[0] if case.expected_documents else case.id, folds)


def realdocs_questions(services: Services, folder: Path, folds: int = 2) -> list[Question]:
    """A realdocs folder's questions (real files nobody here wrote; see ``benchmarks/realdocs``),
    every one fitted on: the held-out real documents are kept outside the project. Each is in
    one of ``folds`` folds by the document it is about (a question about no document, by its id),
    so figures can be cross-validated by document."""
    from benchmarks.realdocs import ingest_realdocs
    from citewell.evaluation.answers import load_cases

    failed = ingest_realdocs(services, folder)
    if failed:
        print(f"realdocs documents that did not publish: {failed}", flush=True)
    cases = load_cases(folder / "questions.jsonl")
    return [
        Question(text=c.question, identity=c.identity, facts=c.must_contain, answerable=not c.refuse, source="realdocs",
                 fit=True, every_fact=True, case_id=c.id,
                 fold=case_fold(folder, c, folds))
        for c in cases
    ]


def fold_models(observed: list[Observed], weights: dict[str, float], scores: dict[int, Scores | None], folds: int,
                runner_up: float | None = None, threshold: float = 0.5,
                recall: float | None = None, bounds: tuple[float, float] | None = None,
                ) -> dict[int, tuple[list[Observed], RefusalModel]]:
    """For each fold, its realdocs questions and the models fitted without them (``scores``: by
    fold, the verifier trained without it; ``recall``: choose each one's unconfirmed threshold
    on its own fitting questions, as the shipped fit does; ``bounds``: choose its answer threshold
    there too, ``choose_threshold``'s (wrong, answered refusals))."""
    others = [o for o in observed if o.question.source != "realdocs"]
    rows = [o for o in observed if o.question.source == "realdocs"]
    out = {}
    for fold in range(folds):
        held = [o for o in rows if o.question.fold == fold]
        if held:
            fitting = others + [o for o in rows if o.question.fold != fold]
            model = fit(fitting, weights, scores[fold], runner_up, threshold)
            if bounds is not None:
                model.answer.threshold = choose_threshold(fitting, model, *bounds, scores=scores[fold])
            if recall is not None:
                model.unconfirmed_threshold = choose_unconfirmed(fitting, model, recall, scores[fold])
            out[fold] = (held, model)
    return out


def question_sources(squad: Path, work: Path, realdocs: Sequence[Path], folds: int,
                     answerset: bool = True) -> dict[str, Callable[[Services], list[Question]]]:
    """Each source's questions by the name its observations are saved and its home kept under in
    ``work``: SQuAD, the answer set, and each realdocs folder (one source "realdocs" in the fits)."""
    sources: dict[str, Callable[[Services], list[Question]]] = {"squad": lambda services: squad_questions(services, squad)}
    if answerset:
        sources["answerset"] = lambda services: answerset_questions(services, work / "answerset-files")
    for folder in realdocs:
        sources[f"realdocs-{folder.name}"] = lambda services, folder=folder: realdocs_questions(services, folder, folds)
    return sources


def observe_sources(work: Path, sources: dict[str, Callable[[Services], list[Question]]], reuse: bool,
                    encoder: Embedder | None = None) -> list[Observed]:
    """Every source's questions observed (``observe``) and saved in ``work``, one file a source; with
    ``reuse``, a source saved before is read back instead (the same questions through the same path),
    so a refit or a new set of pairs needs no asking again."""
    from citewell.deployments import open_local

    observed: list[Observed] = []
    for source, questions in sources.items():
        saved = work / f"observed-{source}.pickle"
        if reuse and saved.exists():
            observed += pickle.loads(saved.read_bytes())
            continue
        services = open_local(work / source)
        fresh = observe(services, questions(services), encoder)
        saved.write_bytes(pickle.dumps(fresh))
        observed += fresh
        print(f"{source}: {len(fresh)} questions observed", flush=True)
    return observed


def cross_validated(observed: list[Observed], weights: dict[str, float], scores: dict[int, Scores | None], folds: int = 2,
                    runner_up: float | None = None, threshold: float = 0.5, recall: float | None = None,
                    bounds: tuple[float, float] | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """Realdocs figures of models fitted without the fold of its documents they are measured on:
    each fold's figures weighted by its questions; then the units' ``discrimination`` over every
    fold's held-out questions."""
    measured = [(measure(held, model, scores[fold]), held, model, scores[fold])
                for fold, (held, model) in fold_models(observed, weights, scores, folds, runner_up, threshold, recall,
                                                       bounds).items()]
    total = sum(f["questions"] for f, *_ in measured) or 1
    keys = [k for k in (measured[0][0] if measured else {}) if k != "questions"]
    figures = {"questions": total, **{k: round(sum(f[k] * f["questions"] for f, *_ in measured) / total, 4) for k in keys}}
    return figures, discrimination([(held, model, fold_scores) for _, held, model, fold_scores in measured])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path(".eval/calibrate"))
    parser.add_argument("--write", action="store_true", help="replace the shipped refusal_model.json")
    parser.add_argument("--squad-only", action="store_true", help="leave the answer set out (a first fit)")
    parser.add_argument("--reuse", action="store_true", help="refit on the observations the last run saved in --work")
    parser.add_argument("--answerset-weight", type=float, default=1.0,
                        help="how much the answer set weighs against SQuAD in both fits (1: the same)")
    parser.add_argument("--realdocs", type=Path, nargs="+", default=[],
                        help="realdocs folders (real documents with labelled questions) to fit on too")
    parser.add_argument("--folds", type=int, default=5, help="realdocs' cross-validation: groups of documents (default 5)")
    parser.add_argument("--realdocs-weight", type=float, default=1.0, help="how much it weighs against SQuAD")
    parser.add_argument("--squad-weight", type=float, default=1.0,
                        help="how much SQuAD weighs (its unanswerables are adversarial, not a user's mix)")
    parser.add_argument("--unconfirmed-recall", type=float, default=0.95,
                        help="share of fitting questions with a fact in the best unit to answer or quote as not confirmed")
    parser.add_argument("--runner-up", type=float, help="quote the runner-up beside the best unit when its probability "
                        "is at least this share of the best's (labels the answer fit by that quote)")
    parser.add_argument("--answer-threshold", type=float, default=0.5, help="the answer model's operating point")
    parser.add_argument("--choose-threshold", type=float, nargs=2, metavar=("MAX_WRONG", "MAX_ANSWERED_REFUSALS"),
                        help="choose the operating point on the realdocs questions instead: the lowest at which "
                             "wrong answers and answered refusals stay within these shares (choose_threshold)")
    parser.add_argument("--unit-encoder", type=Path, help="a unit encoder (int8 ONNX, benchmarks/train_unit_encoder) "
                        "to score units with in place of the packaged one")
    parser.add_argument("--verifier", type=Path, help="an answer verifier (int8 ONNX, benchmarks/train_verifier) to rerank with")
    parser.add_argument("--verifier-without-fold", type=Path, nargs="+", metavar="FOLD",
                        help="verifiers trained without each realdocs fold in turn, for its cross-validated figures")
    args = parser.parse_args()
    from citewell.answers.extractive.unit_encoder import UnitEncoder

    sources = question_sources(args.squad, args.work, args.realdocs, args.folds, answerset=not args.squad_only)
    observed = observe_sources(args.work, sources, args.reuse, UnitEncoder(args.unit_encoder) if args.unit_encoder else None)
    weights = {"squad": args.squad_weight, "answerset": args.answerset_weight, "realdocs": args.realdocs_weight}
    scores = Scores(args.verifier) if args.verifier else None
    model = fit(observed, weights, scores, args.runner_up, args.answer_threshold)
    bounds = (args.choose_threshold[0], args.choose_threshold[1]) if args.choose_threshold else None
    if bounds is not None:
        model.answer.threshold = choose_threshold(observed, model, *bounds, scores=scores)
    model.unconfirmed_threshold = choose_unconfirmed(observed, model, args.unconfirmed_recall, scores)
    sources = sorted({o.question.source for o in observed})
    held_out = {source: measure([o for o in observed if o.question.source == source and not o.question.fit], model, scores)
                for source in sources}
    fitted_on = {source: sum(o.question.fit for o in observed if o.question.source == source) for source in sources}
    model.fitted_on = (f"SQuAD 2.0 dev, even-numbered articles ({fitted_on['squad']} questions, "
                       f"weighing {args.squad_weight:g})") + (
        f", the answer set's tune split ({fitted_on['answerset']} questions, weighing {args.answerset_weight:g})"
        if "answerset" in fitted_on else "") + (
        f", {' and '.join(f.name for f in args.realdocs)} ({fitted_on['realdocs']} questions, weighing {args.realdocs_weight:g})"
        if "realdocs" in fitted_on else "") + (
        f"; the first {VERIFIED} units reranked by the answer verifier {args.verifier.name}" if args.verifier else "")
    model.metrics = {f"{source}_{k}": v for source, figures in held_out.items() if figures["questions"]  # realdocs: all fitted
                     for k, v in figures.items()}
    units = {source: discrimination([([o for o in observed if o.question.source == source and not o.question.fit],
                                       model, scores)])
             for source in sources if source != "realdocs"}
    on_fitted = {source: measure([o for o in observed if o.question.source == source and o.question.fit], model, scores)
                 for source in sources}
    if "realdocs" in fitted_on:  # every realdocs question is fitted on: its figures come from the other half of its documents
        by_fold = {f: Scores(p) for f, p in enumerate(args.verifier_without_fold)} if args.verifier_without_fold else {}
        held_out["realdocs"], units["realdocs"] = cross_validated(
            observed, weights, {f: by_fold.get(f, scores) for f in range(args.folds)}, args.folds, args.runner_up,
            args.answer_threshold, args.unconfirmed_recall, bounds)
        model.metrics |= {f"realdocs_cv_{k}": v for k, v in held_out["realdocs"].items()}
    print(json.dumps({"model": model.model_dump(), "fitted_half": on_fitted, "held_out": held_out, "held_out_units": units},
                     indent=2))
    if args.write:
        target = Path(str(resources.files("citewell.answers.extractive") / MODEL_FILE))
        target.write_text(model.model_dump_json(indent=2) + "\n")
        print(f"wrote {target}")
        if args.verifier:  # the rerank model was fitted on this verifier's logits: they ship together
            shipped = Path(str(resources.files("citewell.answers.extractive") / VERIFIER_FILE))
            if args.verifier.resolve() != shipped.resolve():
                shutil.copyfile(args.verifier, shipped)
            print(f"wrote {shipped}")


if __name__ == "__main__":
    # run as the importable module, so the observations it pickles name ``benchmarks.calibrate_refusal``'s
    # classes, not ``__main__``'s: ``verifier_pairs --reuse`` and ``verifier_auc`` read them too
    from benchmarks.calibrate_refusal import main as run

    run()
