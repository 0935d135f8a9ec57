"""Query-time filters: what a caller narrows a search or an answer to.

A filter is access-like. It is resolved against the authoritative records, under the caller's
tenant, to the set of document ids it admits, and both lanes rank inside that set (as they rank
inside the access filter): a lane's top k is the filtered top k, never a finished list cut
afterwards. It can only narrow: the access filter still applies in every lane, read-back still
checks every hit, and a filter naming a document of another tenant, or one the caller may not
read, admits nothing more.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator

from citewell.models.documents import Descriptive, Document
from citewell.models.values import DocumentIds, Locale, TagSet, validate_document_id

MAX_DOCUMENT_IDS = 100  # ids a caller names in one filter
# Documents a filter may resolve to: the set goes into each lane's query (a ``terms`` clause on
# OpenSearch, which allows 65,536 at most); a filter admitting more is too broad to be a filter.
MAX_SCOPE = 20_000


class SearchFilter(BaseModel):
    """Every condition given must hold (tags: each one named). An empty filter admits everything
    the caller may read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    document_ids: DocumentIds = Field(default=frozenset(), max_length=MAX_DOCUMENT_IDS)
    prefix: str | None = None  # a folder of ids: "policies/" admits "policies/leave.md"
    source: str | None = Field(default=None, min_length=1, max_length=2048)  # the document's source, exactly
    tags: TagSet = Field(default=frozenset(), max_length=32)
    locale: Locale | None = None  # "en" admits en and en-GB; "en-GB" only en-GB
    effective_on: date | None = None  # in effect at some moment of that day (UTC)

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str | None) -> str | None:
        if v is None:
            return None
        if not v.endswith("/"):
            raise ValueError("prefix must be a folder of document ids, ending in '/' (policies/, not policies)")
        validate_document_id(v.removesuffix("/"))
        return v

    @model_validator(mode="before")
    @classmethod
    def _lists(cls, data: object) -> object:
        """A JSON body sends lists; a string where a list belongs is one mistake, not a list of letters."""
        if isinstance(data, dict):
            for name in ("document_ids", "tags"):
                if isinstance(data.get(name), str):
                    raise ValueError(f"{name} must be a list of strings")
        return data

    @field_serializer("document_ids", "tags", when_used="json")
    def _sorted(self, v: frozenset[str]) -> list[str]:
        return sorted(v)

    @property
    def is_empty(self) -> bool:
        return not (self.document_ids or self.prefix or self.source or self.tags or self.locale or self.effective_on)

    def admits(self, document: Document | Descriptive) -> bool:
        """The one predicate; every store's resolution agrees with it (tests/search/test_filters.py)."""
        if isinstance(document, Document):
            if self.document_ids and document.document_id not in self.document_ids:
                return False
            if self.prefix and not document.document_id.startswith(self.prefix):
                return False
            if self.source is not None and document.source != self.source:
                return False
        if self.tags and not self.tags <= document.tags:
            return False
        if self.locale and not locale_matches(self.locale, document.locale):
            return False
        if self.effective_on:
            start = datetime.combine(self.effective_on, time(), tzinfo=UTC)
            if document.effective_from and document.effective_from >= start + timedelta(days=1):
                return False
            if document.effective_until and document.effective_until <= start:
                return False
        return True

    def key(self) -> str:
        """The filter in one canonical spelling: part of a cached answer's key."""
        return self.model_dump_json(exclude={name for name in type(self).model_fields if not getattr(self, name)})


def locale_matches(wanted: str, locale: str) -> bool:
    """``en`` matches ``en`` and ``en-GB`` (a language and its regions); case does not matter."""
    wanted, locale = wanted.lower(), locale.lower()
    return locale == wanted or locale.startswith(wanted + "-")


Scope: TypeAlias = "frozenset[str] | None"  # the document ids the lanes rank inside; None: no filter


def checked_scope(found: frozenset[str]) -> frozenset[str]:
    """A store's resolution, refused when it is too broad to go into a lane's query."""
    from citewell.errors import InvalidInput

    if len(found) > MAX_SCOPE:
        raise InvalidInput(f"the filter admits more than {MAX_SCOPE:,} documents: narrow it")
    return found

