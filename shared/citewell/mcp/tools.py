"""The tools citewell offers a model over MCP: each one's arguments, result, description and the
service function it calls, the same ones the CLI and the HTTP API call (search, answer_turn,
reads, recorded_citations, the API's document list).

Nothing here says who is asking: each tool runs under the :class:`Identity` its transport hands
it (the operator's flags on stdio, the verified bearer token over HTTP). Arguments are closed
models, so a field a tool does not take (``tenant``, ``roles``) is refused, never ignored; and
filters only narrow what that identity may read (:mod:`citewell.filters`): a filter naming
another tenant's document admits nothing.

Each result is a model (the tool's output schema, sent as structured content) and a short text
for a model to read (:func:`as_text`), with the ids it can pass to the next tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from citewell.api.models import MAX_K, Question
from citewell.errors import NotFound, OverBudget
from citewell.filters import SearchFilter
from citewell.models.answers import Answer, AnswerRecord, Citation, Outcome
from citewell.models.identity import Identity
from citewell.models.search import SearchResult
from citewell.models.values import DocumentId, validate_document_id
from citewell.reads import Snapshot
from citewell.services import Services

CLOSED = ConfigDict(extra="forbid")
SECTION_PATTERN = r"^[0-9]{1,6}-[0-9a-f]{16}$"  # citewell.models.chunks.section_id
ID_PATTERN = r"^[0-9a-f]{32}$"  # an answer's or a conversation's id
LISTED_SECTIONS = 40  # sections an over-budget read names, so the model can read one without searching
DOCUMENTS_PAGE, DOCUMENTS_PAGE_MAX = 50, 200
FILTERS_HELP = (
    "Optional: narrow what is read; every field given must hold. document_ids: up to 100 ids (as search hits and "
    "`documents` give them); prefix: a folder of ids ending in '/', such as 'policies/'; source: a document's source, "
    "exactly; tags: documents carrying all of them; locale: a language ('en' also takes en-GB); effective_on: "
    "YYYY-MM-DD, documents in effect that day. Filters never widen what this caller may read."
)

A = TypeVar("A", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


# -- arguments -------------------------------------------------------------------------------


class SearchArguments(BaseModel):
    model_config = CLOSED
    question: Question = Field(description="What to look for, in words (up to 2,000 characters).")
    k: StrictInt = Field(default=10, ge=1, le=MAX_K, description="How many passages to return, 1 to 100 (default 10).")
    filters: SearchFilter | None = Field(default=None, description=FILTERS_HELP)


class AskArguments(BaseModel):
    model_config = CLOSED
    question: Question = Field(description="The question, in words (up to 2,000 characters).")
    conversation_id: str | None = Field(
        default=None, pattern=ID_PATTERN,
        description="To ask a follow-up ('and in Leeds?'), the conversation_id an earlier ask returned; leave it out "
                    "to start a new conversation.")
    filters: SearchFilter | None = Field(default=None, description=FILTERS_HELP)
    mixed_locales: StrictBool = Field(
        default=False, description="Take evidence in every language (default: only the best passage's language).")


class ReadArguments(BaseModel):
    model_config = CLOSED
    document_id: DocumentId | None = Field(
        default=None, min_length=1, max_length=2048,
        description="The document to read whole (or, with section_id, one of its sections), as search hits, citations "
                    "and `documents` name it.")
    section_id: str | None = Field(
        default=None, pattern=SECTION_PATTERN,
        description="One section of document_id: the section_id a search hit or citation carries, or one an "
                    "over-budget read listed. It names one revision: after the document is replaced, search again.")
    chunk_id: str | None = Field(
        default=None, min_length=3, max_length=2100,
        description="One passage by its chunk_id (from a search hit or citation), alone: without document_id.")

    @model_validator(mode="after")
    def _one_unit(self) -> ReadArguments:
        if (self.document_id is None) == (self.chunk_id is None):
            raise ValueError("give document_id (with section_id for one section) or chunk_id, not both or neither")
        if self.section_id is not None and self.document_id is None:
            raise ValueError("section_id names a section of document_id: give document_id with it")
        if self.chunk_id is not None:
            document_id, _, rest = self.chunk_id.rpartition("#")
            document_id, _, section = document_id.rpartition("#")
            if not (section.isascii() and section.isdigit() and rest.isascii() and rest.isdigit()):
                raise ValueError("chunk_id is a search hit's or citation's chunk_id (document#section#index)")
            validate_document_id(document_id)
        return self


class CitationsArguments(BaseModel):
    model_config = CLOSED
    answer_id: str = Field(pattern=ID_PATTERN, description="The answer_id an ask returned.")


class DocumentsArguments(BaseModel):
    model_config = CLOSED
    limit: StrictInt = Field(default=DOCUMENTS_PAGE, ge=1, le=DOCUMENTS_PAGE_MAX,
                             description=f"Documents in a page, 1 to {DOCUMENTS_PAGE_MAX} (default {DOCUMENTS_PAGE}).")
    cursor: str | None = Field(default=None, min_length=1, max_length=2048,
                               description="The `next` of the previous page, to read on; leave it out for the first page.")


# -- results ---------------------------------------------------------------------------------


class Reading(Snapshot):
    """What ``read`` returns: a snapshot of the active revision, and which unit it is."""

    unit: Literal["document", "section", "chunk"]
    chunk_id: str | None = None


class DocumentEntry(BaseModel):
    """A document as a caller sees it in a list (what ``GET /documents`` shows, in short)."""

    model_config = ConfigDict(extra="ignore")
    document_id: str
    title: str
    source: str  # "" for a file the operator ingested from their disk
    status: str
    active_revision: str | None = None
    chunk_count: int = 0
    locale: str = "en"
    tags: list[str] = Field(default_factory=list)
    effective_from: datetime | None = None
    effective_until: datetime | None = None
    updated_at: datetime | None = None


class DocumentList(BaseModel):
    documents: list[DocumentEntry]
    next: str | None = None  # pass as cursor for the next page; None: this was the last


# -- the tools -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool(Generic[A, R]):
    """One tool: what a model is told, what it may send, what it gets back, and what runs."""

    name: str
    title: str
    description: str
    arguments: type[A]
    result: type[R]
    run: Callable[[Services, Identity, A], R]
    text: Callable[[R], str]
    read_only: bool = True  # ask keeps its answer's record and the conversation's turn; the rest only read

    def call(self, services: Services, identity: Identity, arguments: dict[str, Any]) -> tuple[R, str]:
        """Validate ``arguments`` (pydantic's ValidationError when they do not fit), run the tool
        under ``identity`` and return its result with its text."""
        result = self.run(services, identity, self.arguments.model_validate(arguments))
        return result, self.text(result)


def _lanes() -> tuple[str, ...]:
    from citewell.settings import settings

    return tuple(settings().lanes)  # CITEWELL_LANES, as the HTTP API runs them


def run_search(services: Services, identity: Identity, args: SearchArguments) -> SearchResult:
    from citewell.search import search

    return search(services, identity, args.question, k=args.k, lanes=_lanes(), filters=args.filters)


def run_ask(services: Services, identity: Identity, args: AskArguments) -> Answer:
    from citewell.asking import answer_turn

    return answer_turn(services, identity, args.question, args.conversation_id, lanes=_lanes(), filters=args.filters,
                       mixed_locales=args.mixed_locales)


def run_read(services: Services, identity: Identity, args: ReadArguments) -> Reading:
    """The read order: a document whole, or one section, or one chunk, each within the evidence
    budget or refused (OverBudget), never cut; a whole document over it names its sections."""
    from citewell.answers.config import evidence_budget
    from citewell.reads import sections_of, served_chunks, snapshot

    budget = evidence_budget()
    if args.chunk_id is not None:
        return _read_chunk(services, identity, args.chunk_id, budget)
    assert args.document_id is not None
    document, chunks = served_chunks(services, identity, args.document_id)
    try:
        found = snapshot(document, chunks, budget, args.section_id)
    except OverBudget as error:
        if args.section_id is not None:
            raise
        raise OverBudget(error.message + _sections_hint(sections_of(chunks)), error.chars, error.budget) from None
    return Reading.model_validate({**found.model_dump(), "unit": "document" if args.section_id is None else "section"})


def _sections_hint(sections: dict[str, Any]) -> str:
    from citewell.reads import section_info

    listed = [section_info(sid, part) for sid, part in list(sections.items())[:LISTED_SECTIONS]]
    lines = [f"{s.section_id}: {' > '.join(s.heading_path) or '(untitled)'} ({s.chars:,} characters)" for s in listed]
    more = len(sections) - len(listed)
    tail = f"; and {more:,} more (search with filters.document_ids to find the one you need)" if more > 0 else ""
    return ". Its sections (section_id: headings): " + "; ".join(lines) + tail


def _read_chunk(services: Services, identity: Identity, chunk_id: str, budget: int) -> Reading:
    from citewell.reads import section_info, sections_of, served_chunks

    document_id = chunk_id.rsplit("#", 2)[0]
    document, chunks = served_chunks(services, identity, document_id)
    for sid, part in sections_of(chunks).items():
        for chunk in part:
            if chunk.chunk_id != chunk_id:
                continue
            if len(chunk.text) > budget:
                raise OverBudget(f"chunk {chunk_id!r} is {len(chunk.text):,} characters, over the budget of {budget:,}",
                                 len(chunk.text), budget)
            section = section_info(sid, part)
            return Reading(document_id=document_id, title=document.title, revision=chunk.revision, section=section,
                           sections=[section], text=chunk.text, chars=len(chunk.text), budget=budget, unit="chunk",
                           chunk_id=chunk_id)
    raise NotFound(f"no chunk {chunk_id!r} in the current revision of {document_id!r}: search again for the current one")


def run_citations(services: Services, identity: Identity, args: CitationsArguments) -> AnswerRecord:
    from citewell.answers.service import recorded_citations

    return recorded_citations(services, identity, args.answer_id)


def run_documents(services: Services, identity: Identity, args: DocumentsArguments) -> DocumentList:
    """The caller's readable records, a page at a time, as the HTTP API lists them."""
    from citewell.api.documents import shown
    from citewell.api.paging import list_page

    if identity.is_empty:
        return DocumentList(documents=[])
    page = list_page(services.documents, identity.tenant, identity, args.cursor, args.limit)
    return DocumentList(documents=[DocumentEntry.model_validate(shown(d)) for d in page["documents"]], next=page["next"])


# -- the text a model reads ------------------------------------------------------------------


def _where(title: str, path: list[str]) -> str:
    """The title and headings a passage lies under (the first heading is often the title again)."""
    return " > ".join(path if path and path[0] == title else [title, *path])


def _citation_lines(citations: list[Citation]) -> list[str]:
    lines = []
    for c in citations:
        if c.deleted:
            lines.append(f"[{c.ref}] (its source was deleted or replaced)")
            continue
        lines.append(f"[{c.ref}] {_where(c.title, c.section_path)} (document_id={c.document_id}, "
                     f"section_id={c.section_id}, chunk_id={c.chunk_id})" + (f'\n    "{c.quote}"' if c.quote else ""))
    return lines


def search_text(result: SearchResult) -> str:
    if not result.hits:
        lines = ["No passage this caller may read matches."]
    else:
        lines = [f"{len(result.hits)} passages, best first (read a whole document or section with `read`):"]
        for hit in result.hits:
            weak = " [weak: near in meaning only]" if hit.weak else ""
            lines.append(f"{hit.rank}. {_where(hit.title, hit.section_path)}{weak} (document_id={hit.document_id}, "
                         f"section_id={hit.section_id}, chunk_id={hit.chunk_id})\n{hit.text}")
    return "\n\n".join(lines + [f"Note: {note}" for note in result.degraded])


def answer_text(answer: Answer) -> str:
    heads = {
        Outcome.ANSWERED: "Answered from the documents:",
        Outcome.UNCONFIRMED: "Not confirmed: the documents hold only related evidence; its closest sentence, which is not "
                             "an answer:",
        Outcome.CLARIFY: "The documents answer differently under conditions the question does not name; ask which:",
        Outcome.NOT_FOUND: "Nothing this caller may read is about this (which says nothing of what exists elsewhere).",
    }
    lines = [f"outcome: {answer.outcome.value}", heads[answer.outcome]]
    if answer.source_deleted:
        lines.append("The answer was withdrawn: a source it rested on was deleted or replaced.")
    if answer.answer:
        lines.append(answer.answer)
    lines += [f"- {c.condition or '(otherwise)'}: {c.answer or ''} {' '.join(f'[{r}]' for r in c.refs)}".rstrip()
              for c in answer.conditions]
    if answer.citations:
        lines += ["Citations:", *_citation_lines(answer.citations)]
    if answer.closest:
        lines.append("Closest passages (offered as passages, not as an answer):")
        lines += [f"- {_where(p.title, p.section_path)} (document_id={p.document_id}, section_id={p.section_id}, "
                  f"chunk_id={p.chunk_id})\n{p.text}" for p in answer.closest]
    lines += [f"Note: {note}" for note in answer.degraded]
    thread = f", conversation_id={answer.conversation_id}" if answer.conversation_id else ""
    lines.append(f"answer_id={answer.answer_id}{thread}")
    return "\n".join(lines)


def reading_text(reading: Reading) -> str:
    unit = {"document": "the whole document", "section": "one section", "chunk": f"chunk {reading.chunk_id}"}[reading.unit]
    path = reading.section.heading_path if reading.section and reading.unit != "document" else []
    head = (f"{_where(reading.title, path)}: {unit} (document_id={reading.document_id}, revision={reading.revision}, "
            f"{reading.chars:,} characters)")
    return f"{head}\n\n{reading.text}"


def record_text(record: AnswerRecord) -> str:
    lines = [f"answer_id={record.answer_id} (outcome: {record.outcome.value}, asked {record.created_at:%Y-%m-%d %H:%M} UTC)"]
    if record.source_deleted:
        lines.append("Withdrawn: a source it rested on was deleted or replaced since.")
    lines += [f"Question: {record.question}"] + ([f"Answer: {record.answer}"] if record.answer else [])
    lines += ["Citations:", *_citation_lines(record.citations)] if record.citations else ["No citations."]
    return "\n".join(lines)


def documents_text(listed: DocumentList) -> str:
    if not listed.documents:
        return "No document this caller may read."
    lines = [f"{d.document_id}: {d.title} ({d.status}, {d.locale}" + (f", tags {', '.join(d.tags)}" if d.tags else "") + ")"
             for d in listed.documents]
    return "\n".join(lines + ([f"More: call documents with cursor={listed.next}"] if listed.next else []))


TOOLS: tuple[Tool[Any, Any], ...] = (
    Tool("search", "Search the documents",
         "Find the passages this caller may read that best match a question, best first: each with its text, title, "
         "section headings and the ids (document_id, section_id, chunk_id) that `read` takes. Use it to find where "
         "something is written or to gather passages yourself; use `ask` for a cited answer.",
         SearchArguments, SearchResult, run_search, search_text),
    Tool("ask", "Ask for a cited answer",
         "Answer a question from the documents this caller may read, every claim cited to a real passage, or say "
         "honestly that they do not say. outcome is one of: answered (the answer, with citations); unconfirmed (only "
         "related evidence; its closest sentence is quoted and is NOT an answer); clarify (the answer depends on a "
         "condition the question does not name: ask the user which); not_found (nothing readable is about this). "
         "Show the user the citations (title, section, quote). Pass conversation_id back to ask a follow-up; pass "
         "answer_id to `citations` later.",
         AskArguments, Answer, run_ask, answer_text, read_only=False),
    Tool("read", "Read a document, a section or a passage",
         "Read the current text of what a search hit or citation points at, in the read order: a whole document "
         "(document_id), one section of it (document_id and section_id) or one passage (chunk_id). A read longer "
         "than the evidence budget is refused with an over_budget error, never cut: a whole document that is too "
         "long names its sections, so read one of them instead.",
         ReadArguments, Reading, run_read, reading_text),
    Tool("citations", "What an answer rested on",
         "The record of an earlier answer (by its answer_id): the question, the answer and every citation with its "
         "quote. A source deleted or replaced since is marked so, and the answer is then withdrawn. Only shown to a "
         "caller who may read every document it rested on.",
         CitationsArguments, AnswerRecord, run_citations, record_text),
    Tool("documents", "List the documents",
         "The documents this caller may read, by id, with title, status, language and tags, a page at a time "
         "(pass `next` back as cursor). Use document ids in search filters or with `read`.",
         DocumentsArguments, DocumentList, run_documents, documents_text),
)
BY_NAME = {tool.name: tool for tool in TOOLS}
