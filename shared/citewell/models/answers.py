"""Answers: a generator's draft, the verified answer with its citations and outcome, and the
record of what it rested on."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from citewell.models.chunks import chunk_section_id
from citewell.models.evidence import Place
from citewell.models.search import Probes
from citewell.models.values import utcnow


class Citation(Place):
    """One source an answer rests on: a real chunk of the revision that was active when it was cited,
    and the place in its file of its quote (the pages its quoted words lie on, the rows of the
    records it quotes); the chunk's place when the quote cannot be placed.

    When that source is deleted (or its revision replaced) the citation keeps only its ref and
    says so: nothing of the removed text or its ids stays behind.
    """

    ref: str
    chunk_id: str = ""
    document_id: str = ""
    revision: str = ""
    title: str = ""
    section_path: list[str] = Field(default_factory=list)
    quote: str = ""
    deleted: bool = False

    @computed_field  # type: ignore[prop-decorator]  # mypy allows no decorator above @property; pydantic's own advice
    @property
    def section_id(self) -> str:
        """Its chunk's section's stable id ("" once deleted)."""
        return chunk_section_id(self.chunk_id, self.revision, self.section_path)


class Passage(Place):
    """A passage shown beside a refusal: the closest the caller may read, offered as a passage,
    not as an answer, with its place in its file."""

    chunk_id: str
    document_id: str
    revision: str
    title: str
    section_path: list[str]
    text: str

    @computed_field  # type: ignore[prop-decorator]  # mypy allows no decorator above @property; pydantic's own advice
    @property
    def section_id(self) -> str:
        return chunk_section_id(self.chunk_id, self.revision, self.section_path)


class Outcome(StrEnum):
    """What an ask came to. ``refused`` is true for both non-answers, so a client that reads only
    ``refused`` never takes a quote that was not confirmed for an answer."""

    ANSWERED = "answered"  # the evidence states it: the answer and its citations
    UNCONFIRMED = "unconfirmed"  # related evidence the answerer could not confirm: its best sentence quoted, labelled so
    NOT_FOUND = "not_found"  # nothing the caller may read is about this (which says nothing of what exists elsewhere)
    # The evidence answers differently under conditions the question does not name, more of them
    # than an answer lists: which one is asked back, each condition listed with its citation.
    CLARIFY = "clarify"


class WithOutcome(BaseModel):
    """``refused`` and ``outcome`` agree. A record or draft written before outcomes existed
    carries only ``refused``: an answer was answered, a refusal quoted nothing, so not_found."""

    if TYPE_CHECKING:  # each subclass declares both fields, in the place its JSON gives them
        refused: bool
        outcome: Outcome

    @model_validator(mode="before")
    @classmethod
    def _derived(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("outcome") is None and "refused" in data:
            return {**data, "outcome": Outcome.NOT_FOUND if data["refused"] else Outcome.ANSWERED}
        return data

    @model_validator(mode="after")
    def _agree(self) -> WithOutcome:
        if self.refused != (self.outcome is not Outcome.ANSWERED):
            raise ValueError("refused must be true exactly when the outcome is not answered")
        return self


class ConditionAnswer(BaseModel):
    """One condition the evidence answers differently under ("London", "grade KV3", "after five
    years of continuous service"; empty for the case no condition names), with its answer there
    (None in a clarifying question, which lists the conditions only) and the ``[Sn]`` it rests on."""

    condition: str
    answer: str | None = None
    refs: list[str] = Field(default_factory=list)


class Answer(WithOutcome):
    """``answer`` is None when nothing was found (``not_found``) or when the answer was
    withdrawn because a source it rested on was deleted (``source_deleted``); an ``unconfirmed``
    answer holds the best passage's quote with its ``[Sn]``, which is not an answer. When the
    evidence answers differently under conditions the question does not name, ``conditions``
    lists them: with their answers (``answered``, each cited) or, when there are more than an
    answer lists, only their names with the question asking which (``clarify``)."""

    answer_id: str
    answer: str | None
    refused: bool
    outcome: Outcome
    citations: list[Citation] = Field(default_factory=list)
    degraded: list[str] = Field(default_factory=list)
    source_deleted: bool = False
    closest: list[Passage] = Field(default_factory=list)  # with a refusal: what the caller may read that came nearest
    conditions: list[ConditionAnswer] = Field(default_factory=list)
    conversation_id: str | None = None  # the thread this turn joined (a new one when none was named)
    question: str | None = None  # the standalone question it was answered as, when a follow-up was rewritten
    expansion: Probes | None = None  # the probes its evidence was searched with, beside the question
    read: Literal["document", "section"] | None = None  # the model was given that whole instead of passages


class SourceRef(BaseModel):
    """A revision a refusal read as evidence: its question may quote it, so it goes with it."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    revision: str


class AnswerRecord(WithOutcome):
    """What an answer rested on, kept so a caller who may read all of it can later ask."""

    answer_id: str
    tenant: str
    roles: list[str]
    question: str
    answer: str | None
    refused: bool
    outcome: Outcome
    citations: list[Citation]
    generator: str
    degraded: list[str] = Field(default_factory=list)
    conditions: list[ConditionAnswer] = Field(default_factory=list)  # withdrawn with the answer: they quote it
    source_deleted: bool = False  # a source was removed since; the answer and question were withdrawn with it
    # Every source the generator was given, cited or not: its words may be in the answer, and
    # its question may quote it. The answer is shown only to a caller who may read all of them.
    considered: list[SourceRef] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)

    def rests_on(self) -> set[tuple[str, str]]:
        """``(document_id, revision)`` of every cited or considered source still recorded."""
        cited = {(c.document_id, c.revision) for c in self.citations if not c.deleted}
        return cited | {(s.document_id, s.revision) for s in self.considered}


class Draft(WithOutcome):
    """A generator's output before verification. ``quotes`` maps a ref to the exact text it
    supports. An ``unconfirmed`` draft is refused yet has text: the quote of what came nearest."""

    text: str | None
    refused: bool
    outcome: Outcome
    quotes: dict[str, str] = Field(default_factory=dict)
    conditions: list[ConditionAnswer] = Field(default_factory=list)  # refs as the draft's own ``[Sn]``
    dimension: str = ""  # what the conditions are of ("city", "contract type"), when the evidence names it
