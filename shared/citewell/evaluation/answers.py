"""Measuring answers on a labelled question set: ``citewell eval-answers QUESTIONS.jsonl``.

Each line names who asks (tenant, roles), what a correct answer must and must not contain,
which documents it should cite, and whether the documents that caller may read answer it at
all. Every question goes through ``ask`` as that caller; the report counts, overall and per
category: answers that are right (every required fact in the answer, an expected document
cited), refusals that are right, citation precision, fabrications (an answer where the right
thing was to refuse) and forbidden text (any text that must not appear: in an answer; for a
question whose answer only a document the caller may not read holds, also in the quote of an
unconfirmed answer and the closest passages, which the caller could only see through a leak).
It counts each outcome too: answerable questions answered right or wrong, unconfirmed with
or without the facts in the quote, or not found; questions that must be refused answered
(fabrications), unconfirmed (allowed: the quote is a passage the caller may read) or not
found. ``fact_shown`` is the share of answerable questions whose facts the caller was shown,
answered right or quoted unconfirmed. With a model generator it also counts the drafts
verification rejected (by kind: a source it was not given, no citation, a quote or a number
its sources do not hold) and the replies that were unusable (timeouts, errors, malformed
replies); either way the extractive answer stood in, and that is what was scored.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, ValidationError

from citewell.answers.service import DRAFT_REJECTED, GENERATOR_UNAVAILABLE
from citewell.answers.verify import Rejection
from citewell.errors import InvalidInput
from citewell.models.answers import Answer, Outcome
from citewell.models.identity import Identity

if TYPE_CHECKING:
    from citewell.ports import Generator
    from citewell.services import Services


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
    # A follow-up: asked after the question ``follows`` (an id of the same split) in one
    # conversation; ``standalone`` is the question it stands for, to judge the rewriting by.
    follows: str | None = None
    standalone: str | None = None
    # The corpus answers it per condition, more of them than an answer lists: the right reply asks
    # which one is meant (outcome ``clarify``), naming the conditions ``must_contain`` holds.
    clarify: bool = False

    @property
    def identity(self) -> Identity:
        return Identity(tenant=self.tenant, roles=frozenset(self.roles), subject=f"eval:{self.id}")


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
    outcome: Outcome
    fact_in_quote: bool = False  # answerable, unconfirmed, its quote holding every required fact and citing an expected document
    rewritten: str | None = None  # a follow-up: the standalone question it was answered as
    rewrite_matched: bool | None = None  # a follow-up: that question is its labelled standalone form
    rejected: list[Rejection] = Field(default_factory=list)  # why verification rejected a generator's draft
    generator_unavailable: bool = False  # the generator's reply was unusable


class AnswerableOutcomes(BaseModel):
    answered_right: int = 0
    answered_wrong: int = 0  # answered without a required fact, or citing no expected document
    unconfirmed_with_fact: int = 0
    unconfirmed_without_fact: int = 0
    not_found: int = 0
    asked_which_right: int = 0  # a clarifying question, where one was labelled, naming the conditions
    asked_which_wrong: int = 0  # a clarifying question where an answer was labelled, or naming other conditions


class MustRefuseOutcomes(BaseModel):
    answered: int = 0  # fabrications
    unconfirmed: int = 0
    not_found: int = 0
    asked_which: int = 0


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
    fact_shown: float | None = None  # (answered right + unconfirmed with the fact) / answerable
    answerable_outcomes: AnswerableOutcomes = Field(default_factory=AnswerableOutcomes)
    must_refuse_outcomes: MustRefuseOutcomes = Field(default_factory=MustRefuseOutcomes)


class FollowUps(BaseModel):
    """Follow-ups against the first questions they follow, answerable ones only."""

    follow_ups: int = 0
    follow_up_accuracy: float | None = None
    first_questions: int = 0
    first_question_accuracy: float | None = None
    rewrites_matched: int = 0  # rewritten exactly as labelled (case and end punctuation aside)


class Report(BaseModel):
    generator: str = ""
    overall: Scores
    follow_ups: FollowUps = Field(default_factory=FollowUps)
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
    ids = {c.id for c in cases}
    if stray := [c.id for c in cases if c.follows is not None and c.follows not in ids]:
        raise InvalidInput(f"{path}: {', '.join(stray)} follow a question that is not among these (a follow-up "
                           "follows a question of its own split)")
    return cases


def _stripped(question: str) -> str:
    return _normal(question).rstrip("?!. ")


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def judge(case: AnswerCase, answer: Answer) -> Judgement:
    answered = not answer.refused and answer.answer is not None
    text = _normal(answer.answer or "")
    # A refusal whose answer exists only where the caller may not read it must not show it as a
    # quote or passage either; elsewhere a quote not confirmed is a passage the caller may read.
    secret = case.refuse and bool(case.expected_documents)
    shown = " ".join([text if answered or secret else "", *(_normal(p.text) for p in answer.closest if secret)])
    forbidden = [f for f in case.must_not_contain if _normal(f) in shown]
    missing = [f for f in case.must_contain if _normal(f) not in text]
    cited = [c for c in answer.citations if not c.deleted]
    expected = [c for c in cited if c.document_id in case.expected_documents]
    holds = bool(text) and not missing and (not case.expected_documents or bool(expected))
    if case.refuse:
        correct = not answered
    elif case.clarify:  # asked back which condition is meant, naming them
        correct = answer.outcome is Outcome.CLARIFY and holds
    else:
        correct = answered and holds
    counted = answered and not case.refuse  # citation precision is of answers to answerable questions
    return Judgement(
        id=case.id, category=case.category, refuse=case.refuse, answered=answered, correct=correct and not forbidden,
        cited=len(cited) if counted else 0, cited_expected=len(expected) if counted else 0,
        fabricated=case.refuse and answered, forbidden=forbidden, missing=missing if answered else [], answer=answer.answer,
        outcome=answer.outcome,
        fact_in_quote=not case.refuse and answer.outcome is Outcome.UNCONFIRMED and holds and not forbidden,
        rejected=[kind for note in answer.degraded if note.startswith(DRAFT_REJECTED) for kind in Rejection
                  if f"({kind}:" in note],
        generator_unavailable=any(note.startswith(GENERATOR_UNAVAILABLE) for note in answer.degraded),
        rewritten=(answer.question or case.question) if case.follows else None,
        rewrite_matched=(_stripped(answer.question or case.question) == _stripped(case.standalone or case.question))
        if case.follows else None,
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
        fact_shown=_ratio(sum(j.correct or j.fact_in_quote for j in answerable), len(answerable)),
        answerable_outcomes=AnswerableOutcomes(
            answered_right=sum(j.answered and j.correct for j in answerable),
            answered_wrong=sum(j.answered and not j.correct for j in answerable),
            unconfirmed_with_fact=sum(j.fact_in_quote for j in answerable),
            unconfirmed_without_fact=sum(j.outcome is Outcome.UNCONFIRMED and not j.fact_in_quote for j in answerable),
            not_found=sum(j.outcome is Outcome.NOT_FOUND for j in answerable),
            asked_which_right=sum(j.outcome is Outcome.CLARIFY and j.correct for j in answerable),
            asked_which_wrong=sum(j.outcome is Outcome.CLARIFY and not j.correct for j in answerable),
        ),
        must_refuse_outcomes=MustRefuseOutcomes(
            answered=sum(j.answered for j in refusals),
            unconfirmed=sum(j.outcome is Outcome.UNCONFIRMED for j in refusals),
            not_found=sum(j.outcome is Outcome.NOT_FOUND for j in refusals),
            asked_which=sum(j.outcome is Outcome.CLARIFY for j in refusals),
        ),
    )


def evaluate(cases: Iterable[AnswerCase], ask: Callable[[AnswerCase], Answer], generator: str = "") -> Report:
    cases_seen = list(cases)
    judgements = [judge(case, ask(case)) for case in cases_seen]
    groups: defaultdict[str, list[Judgement]] = defaultdict(list)
    for judgement in judgements:
        groups[judgement.category].append(judgement)
    rejections = Counter(kind for j in judgements for kind in j.rejected)
    by_id = {c.id: c for c in cases_seen}
    follow = [j for j in judgements if by_id[j.id].follows is not None and not j.refuse]
    firsts = {by_id[j.id].follows for j in follow}
    first = [j for j in judgements if j.id in firsts and not j.refuse]
    follow_ups = FollowUps(
        follow_ups=len(follow), follow_up_accuracy=_ratio(sum(j.correct for j in follow), len(follow)),
        first_questions=len(first), first_question_accuracy=_ratio(sum(j.correct for j in first), len(first)),
        rewrites_matched=sum(bool(j.rewrite_matched) for j in follow),
    )
    return Report(generator=generator, overall=score(judgements), rejections=dict(sorted(rejections.items())),
                  follow_ups=follow_ups,
                  by_category={c: score(g) for c, g in sorted(groups.items())}, judgements=judgements)



def asker(
    services: Services, cases: Sequence[AnswerCase], generator: Generator, budget_chars: int,
) -> Callable[[AnswerCase], Answer]:
    """How ``evaluate`` asks: a first question alone; a follow-up in a conversation begun with
    the question it follows, as its caller (their own subject per case, so no two share one)."""
    from citewell.answers.service import ask
    from citewell.conversations import ask_in_conversation

    by_id = {c.id: c for c in cases}

    def answer(case: AnswerCase) -> Answer:
        identity = case.identity
        def answering(question: str) -> Answer:
            return ask(services, identity, question, generator, budget_chars=budget_chars)
        if case.follows is None:
            return answering(case.question)
        first = ask_in_conversation(services, identity, by_id[case.follows].question, None, answering, generator)
        return ask_in_conversation(services, identity, case.question, first.conversation_id, answering, generator)

    return answer
