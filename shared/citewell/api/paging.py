"""Pages of what one response cannot hold: the document listing and a document's text.

A Lambda response holds at most 6 MB and an upload may be 50 MB of text, so ``GET
/documents/{id}`` returns its text a page at a time and ``GET /documents`` its records a page
at a time. Each page names the next by an opaque ``cursor``. A text cursor pins the revision
the first page read: a page of a revision replaced since is refused (409 ``stale_cursor``),
never served from the new one, so the pages of one read always join into one revision's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from citewell.cursors import decode as _decode
from citewell.cursors import encode as _encode
from citewell.errors import Conflict, InvalidInput
from citewell.models.chunks import Chunk
from citewell.models.documents import Document
from citewell.models.identity import Identity
from citewell.ports import ChunkRecords, DocumentRecords

# Characters of text a page holds at most. Serialized twice (the body, then the Lambda reply
# holding it as a string), one character costs at most 12 bytes (a character outside the BMP
# becomes two escaped surrogates), so a full page stays under 4.8 MB of the 6 MB.
TEXT_PAGE_CHARS = 400_000
LIST_PAGE = 50  # records a listing page holds unless asked for another number
LIST_PAGE_MAX = 200  # a record with every field at its bound is under 20 KB serialized twice
REREADS = 3  # a document read while its revision is replaced is read again
_NUMBER = re.compile(r"[0-9]{1,7}")


class StaleCursor(Conflict):
    """The cursor's revision is no longer the document's: the read must start again."""

    code = "stale_cursor"


class _TextCursor(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["text"] = "text"
    revision: str = Field(min_length=1, max_length=128)
    offset: int = Field(ge=0)


class _ListCursor(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["list"] = "list"
    after: str = Field(min_length=1, max_length=512)


class ListPage(TypedDict):
    documents: list[Document]
    next: str | None


def page_size(value: str | None, default: int, maximum: int) -> int:
    """``limit`` from a query string: a whole number from 1 to ``maximum``."""
    if value is None:
        return default
    if not _NUMBER.fullmatch(value) or not 1 <= int(value) <= maximum:
        raise InvalidInput(f"limit must be a whole number from 1 to {maximum:,}")
    return int(value)


def list_page(documents: DocumentRecords, tenant: str, reader: Identity | None, cursor: str | None, limit: int) -> ListPage:
    """One page of the tenant's records ``reader`` may read (all of them for the operator, None),
    and the cursor of the next (None: the last page)."""
    after = _decode(cursor, _ListCursor).after if cursor else None
    page = documents.page_documents(tenant, limit, after, reader=reader)
    return {"documents": page.documents, "next": _encode(_ListCursor(after=page.after)) if page.after else None}


def pinned_chunks(documents: DocumentRecords, chunks: ChunkRecords, reader: Identity, document_id: str, cursor: str | None,
                  visible: Callable[[Document | None], Document]) -> tuple[Document, list[Chunk]]:
    """The record (as ``visible`` lets the reader see it) and the chunks of the revision a read
    serves: the cursor's, or on a first page the active one, read again while it is replaced."""
    pinned = _decode(cursor, _TextCursor).revision if cursor else None
    for _ in range(REREADS):
        document = visible(documents.get_document(reader.tenant, document_id))
        revision = pinned or document.active_revision
        if pinned and document.active_revision != pinned:
            raise StaleCursor(f"{document_id!r} was replaced since this read began (its text is now another revision): "
                              "read it again from the first page")
        if not revision:
            return document, []
        found = chunks.get_chunks(reader.tenant, document_id, revision)
        if found:
            return document, found
        # a served revision always has chunks: none means it was replaced (and purged) since the record was read
    return document, []


def text_page(text: str, revision: str | None, cursor: str | None, limit: int) -> dict[str, object]:
    """``limit`` characters of ``text`` (the pinned revision's) from the cursor's offset on."""
    offset = _decode(cursor, _TextCursor).offset if cursor else 0
    if offset > len(text):
        raise InvalidInput(f"the cursor points past the end of the text ({len(text):,} characters)")
    end = min(len(text), offset + limit)
    following = _encode(_TextCursor(revision=revision, offset=end)) if revision and end < len(text) else None
    return {"text": text[offset:end], "revision": revision, "offset": offset, "total_chars": len(text), "next": following}

