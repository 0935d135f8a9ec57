"""A document's records: the authoritative :class:`Document`, each :class:`Upload` intent, and the
fields both carry (who may read it, what it is, what its fetch answered)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_serializer, model_validator

from citewell.leases import Lease
from citewell.models.identity import Identity
from citewell.models.values import (
    MAX_TAGS,
    DocumentId,
    Locale,
    Tenant,
    Token,
    UtcTime,
    each,
    sha256_text,
    utcnow,
    validate_role,
    validate_tag,
)


class DocumentStatus(StrEnum):
    PROCESSING = "processing"
    PUBLISHED = "published"
    FAILED = "failed"
    DELETING = "deleting"  # a tombstone: no longer served; a rerun of the deletion finishes it


def publication_revision(content_sha256: str, upload_id: str) -> str:
    """A revision is one upload's publication of a text: unique per upload, so everything a
    revision owns (chunk records, index rows, artifacts) is written and removed by one owner."""
    return sha256_text(f"{content_sha256}:{upload_id}")


class ErrorInfo(BaseModel):
    code: str
    message: str


def _some_role(roles: frozenset[str]) -> frozenset[str]:
    if not roles:
        raise ValueError("a document needs at least one allowed role")
    return roles


def _at_most_max_tags(tags: frozenset[str]) -> frozenset[str]:
    if len(tags) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    return tags


AllowedRoles = Annotated[frozenset[str], AfterValidator(_some_role), AfterValidator(each(validate_role))]
Tags = Annotated[frozenset[str], AfterValidator(_at_most_max_tags), AfterValidator(each(validate_tag))]


class AccessFields(BaseModel):
    """Who a document belongs to and who may read it: one grammar wherever these are held."""

    document_id: DocumentId
    tenant: Tenant
    allowed_roles: AllowedRoles

    @field_serializer("allowed_roles", when_used="json")
    def _sorted_roles(self, v: frozenset[str]) -> list[str]:
        return sorted(v)  # a set's order changes from process to process; what is written and shown should not


class TrustTier(StrEnum):
    """How close a source is to what it describes: the rule itself, a report on it, a summary of reports."""

    PRIMARY = "primary"
    SECONDARY = "secondary"
    TERTIARY = "tertiary"


class Descriptive(BaseModel):
    """What a document is, besides who may read it: set only by the uploader (the operator's flags,
    the upload API's record), like the access fields, never by the text or a model. Query filters
    select on these, fusion weighs ``authority``, and outside its effective window a document is
    not served."""

    locale: Locale = "en"
    tags: Tags = frozenset()
    trust_tier: TrustTier | None = None
    authority: bool = False  # an authoritative source: its hits weigh 1.1 times in fusion
    effective_from: UtcTime | None = None
    effective_until: UtcTime | None = None

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

    upload_id: Token
    seq: int  # per document, in register order: an older upload never replaces a newer one
    generation: Token  # the record's life this upload belongs to: a delete ends it
    title: str | None = None
    source: str = ""
    filename: str | None = None
    fetched: Fetched | None = None  # a web page's: what its fetch answered, for the next one's conditional request
    created_at: datetime = Field(default_factory=utcnow)


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
