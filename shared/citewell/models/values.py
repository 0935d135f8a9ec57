"""The values records are made of, and the one grammar of each: document ids, tenants, role and tag
names, upload tokens, locales, questions; times in UTC and text digests.

The grammars are plain functions (the key builder and the API call them too) and, for model fields,
``Annotated`` types that run them after pydantic's own check: ``document_id: DocumentId``. A set's
rule runs on the whole set (:func:`each`), so an error names the field, not one of its members.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated
from urllib.parse import quote

from pydantic import AfterValidator

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


def new_token() -> str:
    """A random id: upload ids and record generations."""
    return uuid.uuid4().hex


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


def validate_role(value: str) -> str:
    return validate_name(value, "role")


# -- the grammars as field types ------------------------------------------------------------


def each(rule: Callable[[str], str]) -> Callable[[frozenset[str]], frozenset[str]]:
    """``rule`` on every member of a set, as one check of the whole set."""
    def check(values: frozenset[str]) -> frozenset[str]:
        return frozenset(rule(value) for value in values)

    return check


DocumentId = Annotated[str, AfterValidator(validate_document_id)]
DocumentIds = Annotated[frozenset[str], AfterValidator(each(validate_document_id))]
Tenant = Annotated[str, AfterValidator(validate_tenant)]
Token = Annotated[str, AfterValidator(validate_token)]  # an upload id, a record's generation
Locale = Annotated[str, AfterValidator(validate_locale)]
TagSet = Annotated[frozenset[str], AfterValidator(each(validate_tag))]
UtcTime = Annotated[datetime, AfterValidator(as_utc)]  # one without a zone is taken as UTC
