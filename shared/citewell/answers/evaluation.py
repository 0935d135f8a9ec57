"""Measuring answers on a labelled question set: ``citewell eval-answers QUESTIONS.jsonl``.

Each line names who asks (tenant, roles), what a correct answer must and must not contain,
which documents it should cite, and whether the documents that caller may read answer it at
all. Every question goes through ``ask`` as that caller; the report counts, overall and per
category: answers that are right (every required fact in the answer, an expected document
cited), refusals that are right, citation precision, fabrications (an answer where the right
thing was to refuse) and forbidden text (any text that must not appear, in an answer or in
the closest passages a refusal offers). With a model generator it also counts the drafts
verification rejected (by kind: a source it was not given, no citation, a quote or a number
its sources do not hold) and the replies that were unusable (timeouts, errors, malformed
replies); either way the extractive answer stood in, and that is what was scored.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from citewell.answers.service import DRAFT_REJECTED, GENERATOR_UNAVAILABLE
from citewell.answers.verify import Rejection
from citewell.errors import InvalidInput
from citewell.models import Answer, Identity


class AnswerCase(BaseModel):
    """One labelled question."""

    id: str
    question: str = Field(min_length=1)
    tenant: str
    roles: list[str] = Field(min_length=1)
    refuse: bool
    category: str = "uncategorised"
    split: str = ""
    expected_documents: list[str] = Field(default_factory=list)
    must_contain: list[str] = Field(default_factory=list)
    must_not_contain: list[str] = Field(default_factory=list)

    @property
    def identity(self) -> Identity:
        return Identity(tenant=self.tenant, roles=frozenset(self.roles))


class Judgement(BaseModel):
    id: str
    category: str
    refuse: bool
    answered: bool
    correct: bool
    cited: int = 0
    cited_expected: int = 0
    fabricated: bool = False
    forbidden: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    answer: str | None = None
    rejected: list[Rejection] = Field(default_factory=list)  # why verification rejected a generator's draft
    generator_unavailable: bool = False  # the generator's reply was unusable


class Scores(BaseModel):
    questions: int
    answerable: int
    must_refuse: int
    answer_accuracy: float | None  # right answers / questions that have one
    refusal_accuracy: float | None  # right refusals / questions that must be refused
    citation_precision: float | None  # citations of an expected document / all citations of answers to answerable questions
    fabrications: int
    forbidden_text: int
    drafts_rejected: int = 0  # questions where verification rejected a generator's draft
    generator_unavailable: int = 0  # questions where the generator's reply was unusable


class Report(BaseModel):
    generator: str = ""
    overall: Scores
    rejections: dict[Rejection, int] = Field(default_factory=dict)  # rejected drafts, by why
    by_category: dict[str, Scores]
    judgements: list[Judgement]


def load_cases(path: Path, split: str | None = None) -> list[AnswerCase]:
    """The questions of a JSONL file (one split of it if asked); a bad line is an error naming it."""
    cases = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise InvalidInput(f"cannot read {path}: {error.strerror}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            case = AnswerCase.model_validate_json(line)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in error.errors())
            raise InvalidInput(f"{path}:{number}: {problems}") from None
        if split is None or case.split == split:
            cases.append(case)
    if not cases:
        raise InvalidInput(f"{path} holds no questions" + (f" in split {split!r}" if split else ""))
    return cases


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def judge(case: AnswerCase, answer: Answer) -> Judgement:
    answered = not answer.refused and answer.answer is not None
    text = _normal(answer.answer or "")
    # A refusal whose answer exists only where the caller may not read it must not show it as a passage either.
    secret = case.refuse and bool(case.expected_documents)
    shown = " ".join([text, *(_normal(p.text) for p in answer.closest if secret)])
    forbidden = [f for f in case.must_not_contain if _normal(f) in shown]
    missing = [f for f in case.must_contain if _normal(f) not in text]
    cited = [c for c in answer.citations if not c.deleted]
    expected = [c for c in cited if c.document_id in case.expected_documents]
    if case.refuse:
        correct = not answered
    else:
        correct = answered and not missing and (not case.expected_documents or bool(expected))
    return Judgement(
        id=case.id, category=case.category, refuse=case.refuse, answered=answered, correct=correct and not forbidden,
        cited=len(cited) if not case.refuse else 0, cited_expected=len(expected) if not case.refuse else 0,
        fabricated=case.refuse and answered, forbidden=forbidden, missing=missing if answered else [], answer=answer.answer,
        rejected=[kind for note in answer.degraded if note.startswith(DRAFT_REJECTED) for kind in Rejection
                  if f"({kind}:" in note],
        generator_unavailable=any(note.startswith(GENERATOR_UNAVAILABLE) for note in answer.degraded),
    )


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def score(judgements: Iterable[Judgement]) -> Scores:
    rows = list(judgements)
    answerable = [j for j in rows if not j.refuse]
    refusals = [j for j in rows if j.refuse]
    return Scores(
        questions=len(rows), answerable=len(answerable), must_refuse=len(refusals),
        answer_accuracy=_ratio(sum(j.correct for j in answerable), len(answerable)),
        refusal_accuracy=_ratio(sum(j.correct for j in refusals), len(refusals)),
        citation_precision=_ratio(sum(j.cited_expected for j in answerable), sum(j.cited for j in answerable)),
        fabrications=sum(j.fabricated for j in rows),
        forbidden_text=sum(bool(j.forbidden) for j in rows),
        drafts_rejected=sum(bool(j.rejected) for j in rows),
        generator_unavailable=sum(j.generator_unavailable for j in rows),
    )


def evaluate(cases: Iterable[AnswerCase], ask: Callable[[AnswerCase], Answer], generator: str = "") -> Report:
    judgements = [judge(case, ask(case)) for case in cases]
    groups: defaultdict[str, list[Judgement]] = defaultdict(list)
    for judgement in judgements:
        groups[judgement.category].append(judgement)
    rejections = Counter(kind for j in judgements for kind in j.rejected)
    return Report(generator=generator, overall=score(judgements), rejections=dict(sorted(rejections.items())),
                  by_category={c: score(g) for c, g in sorted(groups.items())}, judgements=judgements)

