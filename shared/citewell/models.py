"""The corpus contract: documents, chunks, identities and search results as pydantic models."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, computed_field, field_serializer, field_validator, model_validator

from citewell.leases import Lease

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_WEB_ID = re.compile(r"https?://[^/?#\s]+(?:[/?][^#\s]*)?")  # a web page's id: its normalised URL (citewell.fetch.urls)


def utcnow() -> datetime:
    return datetime.now(UTC)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


MAX_DOCUMENT_ID_BYTES = 512
# An object key (stage/tenant/encoded id/upload) must fit S3's 1,024 bytes: 112 go to the rest.
MAX_ENCODED_DOCUMENT_ID_BYTES = 900
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def section_id(revision: str, section_index: int, heading_path: Sequence[str]) -> str:
    """A section's stable id: its number in the document and a digest of the revision and its
    heading path. The same section of the same revision always has the same id; once the
    document is replaced an id names nothing (a read of it is refused as stale, never answered
    with whatever section now has that number)."""
    import json

    digest = hashlib.sha256(json.dumps([revision, section_index, list(heading_path)]).encode()).hexdigest()[:16]
    return f"{section_index}-{digest}"


def chunk_section_id(chunk_id: str, revision: str, heading_path: Sequence[str]) -> str:
    """The id of the section a chunk id (``document_id#section#index``) lies in; "" for no chunk."""
    parts = chunk_id.rsplit("#", 2)
    if len(parts) != 3 or not parts[1].isascii() or not parts[1].isdigit() or not revision:
        return ""
    return section_id(revision, int(parts[1]), heading_path)


def validate_document_id(value: str) -> str:
    """The one grammar of document ids, at every entry point and in the key builder.

    Ids become (encoded) object keys, DynamoDB sort keys and chunk-id prefixes: a relative
    path of at most 512 UTF-8 bytes and 900 percent-encoded, without '#', control characters,
    or empty, '.' or '..' parts; or a web page's normalised ``http(s)://`` URL, under the same limits.
    """
    if not isinstance(value, str) or not value or len(value.encode("utf-8")) > MAX_DOCUMENT_ID_BYTES:
        raise ValueError(f"document id must be 1 to {MAX_DOCUMENT_ID_BYTES} bytes of UTF-8")
    if len(quote(value, safe="")) > MAX_ENCODED_DOCUMENT_ID_BYTES:
        raise ValueError(f"document id must be at most {MAX_ENCODED_DOCUMENT_ID_BYTES} bytes percent-encoded "
                         "(about 300 bytes of UTF-8 outside ASCII)")
    if "#" in value or _CONTROL.search(value) or "\\" in value:
        raise ValueError("document id may not contain '#', '\\' or control characters")
    if _WEB_ID.fullmatch(value):  # its path keeps what the server named ('//' and a trailing '/' included)
        return value
    if value.startswith("/") or any(part in ("", ".", "..") for part in value.split("/")):
        raise ValueError("document id must be a relative path without empty, '.' or '..' parts")
    return value


def validate_name(value: str, what: str) -> str:
    """Roles: short, printable, no separators that could smuggle a second value."""
    if not value or len(value) > 128 or _CONTROL.search(value) or "," in value or value != value.strip():
        raise ValueError(f"{what} must be 1 to 128 printable characters without commas or edge spaces")
    return value


def validate_question(value: str) -> str:
    """A question has a word: one of only blanks, control characters or punctuation ("???",
    a NUL) asks nothing, and is said so rather than searched for."""
    if not value.strip():
        raise ValueError("the question is empty")
    if not any(c.isalnum() for c in value):
        raise ValueError("the question has no word in it (only spaces, punctuation or control characters)")
    return value


_TOKEN = re.compile(r"[0-9a-f]{32}")


def validate_token(value: str) -> str:
    if not isinstance(value, str) or not _TOKEN.fullmatch(value):
        raise ValueError("not an upload id: 32 lowercase hex digits expected")
    return value


def validate_tenant(value: str) -> str:
    """The one grammar of tenants: it names a key prefix in every store, so letters, digits,
    '_', '.' and '-' only, starting with a letter or digit (never '.', '..' or a separator)."""
    if not isinstance(value, str) or not _TENANT.fullmatch(value):
        raise ValueError("tenant must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit")
    return value


class Identity(BaseModel):
    """Who is asking. Built only from trusted input: operator flags or verified claims."""

    model_config = ConfigDict(frozen=True)

    tenant: str = ""
    roles: frozenset[str] = frozenset()
    subject: str = ""  # the token's ``sub`` (the CLI's operator has none): whose conversations and feedback

    @property
    def is_empty(self) -> bool:
        """An identity without a tenant or without roles may see nothing."""
        return not self.tenant or not self.roles

    def can_see(self, tenant: str, allowed_roles: frozenset[str] | set[str]) -> bool:
        return not self.is_empty and tenant == self.tenant and bool(self.roles & set(allowed_roles))


class DocumentStatus(StrEnum):
    PROCESSING = "processing"
    PUBLISHED = "published"
    FAILED = "failed"
    DELETING = "deleting"  # a tombstone: no longer served; a rerun of the deletion finishes it


def new_token() -> str:
    """A random id: upload ids and record generations."""
    return uuid.uuid4().hex


def publication_revision(content_sha256: str, upload_id: str) -> str:
    """A revision is one upload's publication of a text: unique per upload, so everything a
    revision owns (chunk records, index rows, artifacts) is written and removed by one owner."""
    return sha256_text(f"{content_sha256}:{upload_id}")


class ErrorInfo(BaseModel):
    code: str
    message: str


class AccessFields(BaseModel):
    """Who a document belongs to and who may read it: one grammar wherever these are held."""

    document_id: str
    tenant: str
    allowed_roles: frozenset[str]

    @field_validator("document_id")
    @classmethod
    def _document_id(cls, v: str) -> str:
        return validate_document_id(v)

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, v: str) -> str:
        return validate_tenant(v)

    @field_validator("allowed_roles")
    @classmethod
    def _roles(cls, v: frozenset[str]) -> frozenset[str]:
        if not v:
            raise ValueError("a document needs at least one allowed role")
        return frozenset(validate_name(r, "role") for r in v)

    @field_serializer("allowed_roles", when_used="json")
    def _sorted_roles(self, v: frozenset[str]) -> list[str]:
        return sorted(v)  # a set's order changes from process to process; what is written and shown should not


class TrustTier(StrEnum):
    """How close a source is to what it describes: the rule itself, a report on it, a summary of reports."""

    PRIMARY = "primary"
    SECONDARY = "secondary"
    TERTIARY = "tertiary"


_LOCALE = re.compile(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*")
MAX_TAGS = 32


def validate_locale(value: str) -> str:
    """A language tag as BCP 47 spells one (``en``, ``pt-BR``, ``zh-Hant-TW``), at most 35 characters."""
    if not isinstance(value, str) or len(value) > 35 or not _LOCALE.fullmatch(value):
        raise ValueError("locale must be a language tag such as en, en-GB or pt-BR (letters and digits in parts joined by '-')")
    return value


def validate_tag(value: str) -> str:
    if not isinstance(value, str) or len(value) > 64:
        raise ValueError("a tag must be 1 to 64 printable characters without commas or edge spaces")
    return validate_name(value, "a tag")


def as_utc(value: datetime | None) -> datetime | None:
    """A moment in UTC (one without a zone is taken as UTC): stored times are compared as written."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Descriptive(BaseModel):
    """What a document is, besides who may read it: set only by the uploader (the operator's flags,
    the upload API's record), like the access fields, never by the text or a model. Query filters
    select on these, fusion weighs ``authority``, and outside its effective window a document is
    not served."""

    locale: str = "en"
    tags: frozenset[str] = frozenset()
    trust_tier: TrustTier | None = None
    authority: bool = False  # an authoritative source: its hits weigh 1.1 times in fusion
    effective_from: datetime | None = None
    effective_until: datetime | None = None

    @field_validator("locale")
    @classmethod
    def _locale(cls, v: str) -> str:
        return validate_locale(v)

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: frozenset[str]) -> frozenset[str]:
        if len(v) > MAX_TAGS:
            raise ValueError(f"at most {MAX_TAGS} tags")
        return frozenset(validate_tag(t) for t in v)

    @field_validator("effective_from", "effective_until")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return as_utc(v)

    @model_validator(mode="after")
    def _window(self) -> Descriptive:
        if self.effective_from and self.effective_until and self.effective_until <= self.effective_from:
            raise ValueError("effective_until must be later than effective_from")
        return self

    @field_serializer("tags", when_used="json")
    def _sorted_tags(self, v: frozenset[str]) -> list[str]:
        return sorted(v)


def descriptive(source: Descriptive) -> dict[str, Any]:
    """The descriptive fields of an upload or record, to carry onto a record."""
    return {name: getattr(source, name) for name in Descriptive.model_fields}


class Fetched(BaseModel):
    """What a web page's fetch answered: the validators a re-fetch sends back (``If-None-Match``,
    ``If-Modified-Since``) and the bytes' hash, so an unchanged page costs no write even from a
    server that sends neither."""

    model_config = ConfigDict(frozen=True)

    etag: str | None = None
    last_modified: str | None = None
    sha256: str


class Upload(AccessFields, Descriptive):
    """An immutable upload intent, recorded at register. Every stage works from the intent it
    was handed, never from the live record, so a later upload or a delete cannot change what
    an earlier upload publishes, only stop it."""

    model_config = ConfigDict(frozen=True)

    upload_id: str
    seq: int  # per document, in register order: an older upload never replaces a newer one
    generation: str  # the record's life this upload belongs to: a delete ends it
    title: str | None = None
    source: str = ""
    filename: str | None = None
    fetched: Fetched | None = None  # a web page's: what its fetch answered, for the next one's conditional request
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("upload_id", "generation")
    @classmethod
    def _token(cls, v: str) -> str:
        return validate_token(v)


class Document(AccessFields, Descriptive):
    """The authoritative record of one document. ``active_revision`` is what is served, and
    the access fields (roles, title, source) are those it was published with; a pending
    upload's fields live in its :class:`Upload` until it is published.

    Every write is a compare-and-set on ``version``; ``generation`` names this life of the
    record (a delete ends it, a later upload starts a new one); ``upload_seq`` is the latest
    registered upload, the only one allowed to move the record on, and ``upload_id`` its id: an
    intent left by a register killed before its record write can share that number, never the id.
    """

    title: str
    source: str
    filename: str | None = None  # the uploaded name: a hint among text types, never the type itself
    status: DocumentStatus = DocumentStatus.PROCESSING
    active_revision: str | None = None
    chunk_count: int = 0
    error: ErrorInfo | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    generation: str = ""
    version: int = 0  # 0: not stored yet
    upload_seq: int = 0
    upload_id: str | None = None  # the latest registered upload; None on records written before it was kept
    active_upload: str | None = None
    content_sha256: str | None = None  # of the active revision's extracted text
    encoding: str | None = None  # the active revision's text encoding, as detected; None for binary formats
    lease: Lease | None = None  # the process that last put it in flight (processing, deleting), when it does the work
    fetched: Fetched | None = None  # a web page's: what the fetch of the served (or last unchanged) bytes answered
    # Revisions a switch replaced whose purge has not finished: written with the switch, cleared
    # after the purge, so a process killed in between leaves an intent a restart and the audit finish.
    purging: list[str] = Field(default_factory=list)

    def serves(self, revision: str, identity: Identity) -> bool:
        """The read-back rule: live, ``revision`` is the active one, and the caller may see it."""
        return self.is_live and self.active_revision == revision and identity.can_see(self.tenant, self.allowed_roles)

    @property
    def is_live(self) -> bool:
        """Served when it has an active revision and is inside its effective window."""
        if self.active_revision is None:
            return False
        now = utcnow()
        if self.effective_from and now < self.effective_from:
            return False
        return not (self.effective_until and now >= self.effective_until)


class Section(BaseModel):
    """A span of the extracted text under one heading path. Sections tile the text."""

    heading_path: list[str]
    start: int
    end: int


class BlockKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE_ROW = "table_row"
    RECORD = "record"
    CODE = "code"


class Block(BaseModel):
    """One structural unit of extracted text with its offsets and where it came from."""

    kind: BlockKind
    start: int
    end: int
    page: int | None = None
    sheet: str | None = None
    row: int | None = None
    ocr_confidence: float | None = None  # read by OCR from a scanned page: the page's mean confidence (0 to 1)


class ParsedDocument(BaseModel):
    """What a parser extracted: the text, its sections and blocks (offsets into ``text``)."""

    mime: str
    text: str
    sections: list[Section]
    blocks: list[Block]
    title: str | None = None
    encoding: str | None = None  # the text encoding the bytes were read in; None for binary formats

    @property
    def content_sha256(self) -> str:
        return sha256_text(self.text)


class Chunk(BaseModel):
    """A retrievable passage: ``text == extracted_text[start:end]`` of its revision.

    ``body_start`` marks where the part not shared with the previous chunk begins: the
    bodies ``extracted_text[body_start:end]`` of a revision's chunks concatenate to the
    whole extracted text.
    """

    chunk_id: str
    document_id: str
    tenant: str
    allowed_roles: frozenset[str]
    revision: str
    title: str
    section_index: int
    index: int
    heading_path: list[str]
    start: int
    end: int
    body_start: int
    text: str
    pages: list[int] = Field(default_factory=list)
    sheet: str | None = None
    rows: list[int] = Field(default_factory=list)
    continues: bool = False  # a list, table or sentence run goes on in the next chunk of the section
    # Where each page and row begins in ``text`` (``(offset into text, page or row)``, in text order),
    # so a citation names the page or row of its quote, not the chunk's range. Kept only when the
    # chunk spans more than one (else ``pages``/``rows`` are exact); records written before these
    # existed have neither, and cite the chunk's range.
    page_starts: list[tuple[int, int]] = Field(default_factory=list)
    row_starts: list[tuple[int, int]] = Field(default_factory=list)
    # Read by OCR from scanned pages: the lowest mean confidence (0 to 1) of those pages; None for
    # text from a text layer or a text format.
    ocr_confidence: float | None = None

    def record_json(self) -> str:
        """The stored record: the page and row maps and the OCR confidence only when there is one,
        so a chunk on one page (most of a PDF's) costs a DynamoDB item nothing for them."""
        empty = {name for name in ("page_starts", "row_starts", "ocr_confidence") if not getattr(self, name)}
        return self.model_dump_json(exclude=empty)

    @staticmethod
    def make_id(document_id: str, section_index: int, index: int) -> str:
        return f"{document_id}#{section_index}#{index}"

    @property
    def context(self) -> str:
        """Title and heading path: indexed and embedded with the text so a chunk knows where it is."""
        parts = [self.title, *[h for h in self.heading_path if h != self.title]]
        return " > ".join(p for p in parts if p)

    @property
    def embedding_text(self) -> str:
        return f"{self.context}\n{self.text}" if self.context else self.text

    @property
    def content_hash(self) -> str:
        """Key of the embedding cache: the exact text the embedder sees."""
        return sha256_text(self.embedding_text)


class LaneRanks(BaseModel):
    bm25: int | None = None
    vector: int | None = None
    expansion: int | None = None  # its best rank in a probe's list, when query expansion ran


class SearchHit(BaseModel):
    """``score`` is the fused rank score (1.1 times for an authoritative document); ``similarity``
    the vector lane's cosine, when it ranked the chunk. ``weak``: only the vector lane found it,
    at a similarity that relevant passages seldom have (:data:`citewell.search.WEAK_SIMILARITY`):
    near in meaning, and not holding the words asked for, so not evidence that they are in the
    documents."""

    rank: int
    chunk_id: str
    document_id: str
    revision: str
    title: str
    section_path: list[str]
    text: str
    score: float
    lanes: LaneRanks
    similarity: float | None = None
    weak: bool = False
    rerank: float | None = None  # the reranker's score, when one reordered the hits
    locale: str = "en"  # its document's language

    @computed_field  # type: ignore[prop-decorator]  # mypy allows no decorator above @property; pydantic's own advice
    @property
    def section_id(self) -> str:
        """Its section's stable id: ``citewell read --section`` and ``GET /documents/{id}?section=`` take it."""
        return chunk_section_id(self.chunk_id, self.revision, self.section_path)


class Probes(BaseModel):
    """What query expansion turned the question into (:mod:`citewell.expansion`): shown beside the
    hits it helped find, so a caller sees why a passage without the question's words came up."""

    lexical: list[str] = Field(default_factory=list)  # paraphrases, each run in the lexical lane
    passage: str | None = None  # the hypothetical answer passage, run in the vector lane


class SearchResult(BaseModel):
    hits: list[SearchHit]
    degraded: list[str] = Field(default_factory=list)
    expansion: Probes | None = None  # the probes searched beside the question; None: the question alone
    # The question's vector (None when the vector lane did not run): the answer that follows
    # scores its sentences against it instead of embedding the question again. Never sent.
    _query_vector: Any = PrivateAttr(default=None)


class Place(BaseModel):
    """Where a passage sits in its file, besides its headings: the PDF pages, or the sheet and
    rows of a spreadsheet (rows also for CSV records). Empty for formats without either."""

    pages: list[int] = Field(default_factory=list)
    sheet: str | None = None
    rows: list[int] = Field(default_factory=list)


def _starting_in(starts: Sequence[tuple[int, int]], start: int, end: int) -> list[int]:
    """The values of ``starts`` (``(offset, value)`` in offset order) whose stretch of text, from
    their offset to the next one's, overlaps ``[start, end)``."""
    found = []
    for i, (offset, value) in enumerate(starts):
        following = starts[i + 1][0] if i + 1 < len(starts) else None
        if offset < end and (following is None or following > start) and value not in found:
            found.append(value)
    return found


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


class Removal(BaseModel):
    """A removal of stored text under way or awaiting its compaction: until a compaction that
    started after it ended has finished, deleted bytes may still sit in segments and logs.
    It names no document: its own row must not become a trace of what it removed."""

    removal_id: str
    owner: Lease | None = None
    done: bool = False
    started_at: datetime = Field(default_factory=utcnow)


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


class EvidenceSpan(Place):
    """The part of an evidence text that came from one chunk (offsets into that evidence text), that
    chunk's place, and where its pages and rows begin (offsets into the evidence text, as in
    :attr:`Chunk.page_starts`; empty when the chunk has one page or row, or was written without them)."""

    chunk_id: str
    section_path: list[str]
    start: int
    end: int
    page_starts: list[tuple[int, int]] = Field(default_factory=list)
    row_starts: list[tuple[int, int]] = Field(default_factory=list)

    def place_of(self, start: int, end: int) -> Place:
        """The place of the evidence characters ``[start, end)`` inside this span: the pages and rows
        they lie on where the map says, else the chunk's."""
        start, end = max(start, self.start), min(end, self.end)
        pages = sorted(_starting_in(self.page_starts, start, end)) if self.page_starts else self.pages
        rows = sorted(_starting_in(self.row_starts, start, end)) if self.row_starts else self.rows
        return Place(pages=pages or self.pages, sheet=self.sheet, rows=rows or self.rows)


class EvidenceItem(BaseModel):
    """A passage handed to a generator as ``[ref]``: one chunk, or neighbours stitched whole."""

    ref: str
    document_id: str
    revision: str
    title: str
    section_path: list[str]
    text: str
    spans: list[EvidenceSpan]
    rank: int

    def span_at(self, offset: int) -> EvidenceSpan:
        """The chunk span that holds ``text[offset]``."""
        return next((s for s in self.spans if s.start <= offset < s.end), self.spans[-1])

    def place_of(self, parts: Sequence[tuple[int, int]]) -> Place:
        """The place of a quote made of ``parts`` (``[start, end)`` offsets into ``text``, an elided
        quote's in order): the pages and rows its characters lie on, in whichever chunks they are;
        the sheet of the first part's chunk (a section is never on two sheets)."""
        pages: set[int] = set()
        rows: list[int] = []
        sheet = None
        for start, end in parts:
            for span in self.spans:
                if span.start < end and start < span.end:
                    found = span.place_of(start, end)
                    pages.update(found.pages)
                    rows.extend(r for r in found.rows if r not in rows)
                    sheet = sheet or found.sheet
        return Place(pages=sorted(pages), sheet=sheet, rows=sorted(rows))


class Draft(WithOutcome):
    """A generator's output before verification. ``quotes`` maps a ref to the exact text it
    supports. An ``unconfirmed`` draft is refused yet has text: the quote of what came nearest."""

    text: str | None
    refused: bool
    outcome: Outcome
    quotes: dict[str, str] = Field(default_factory=dict)
    conditions: list[ConditionAnswer] = Field(default_factory=list)  # refs as the draft's own ``[Sn]``
    dimension: str = ""  # what the conditions are of ("city", "contract type"), when the evidence names it


MAX_COMMENT_CHARS = 2000


class Feedback(BaseModel):
    """What the asker said of an answer: kept on the turn that gave it to them, withdrawn with it."""

    helpful: bool
    comment: str | None = Field(default=None, max_length=MAX_COMMENT_CHARS)
    at: datetime = Field(default_factory=utcnow)


class Turn(BaseModel):
    """One question of a conversation. ``asked`` is what the caller typed, ``question`` the
    standalone form it was answered as; both go (``withdrawn``) when the answer is withdrawn."""

    seq: int
    answer_id: str
    asked: str
    question: str
    at: datetime = Field(default_factory=utcnow)
    feedback: Feedback | None = None
    withdrawn: bool = False


class Conversation(BaseModel):
    """A thread of turns owned by one identity: tenant, subject and roles, exactly."""

    conversation_id: str
    tenant: str
    subject: str
    roles: list[str]
    turns: list[Turn] = Field(default_factory=list)
    version: int = 0  # compare-and-set: a save succeeds only over the version it read
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    def expired(self, days: float, now: datetime | None = None) -> bool:
        """Past ``days`` since its last question."""
        return self.updated_at < (now or utcnow()) - timedelta(days=days)

    def owned_by(self, identity: Identity) -> bool:
        return (not identity.is_empty and identity.tenant == self.tenant and identity.subject == self.subject
                and sorted(identity.roles) == self.roles)
