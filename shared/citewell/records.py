"""Changing a document record (or a conversation) safely: read, decide, compare-and-set, and again if someone won.

Every writer of a document record goes through :func:`update_document`, so no write is ever
based on a record that changed since it was read (a stage cannot write back what it read
before a delete, and an older upload cannot overwrite a newer one's state).
"""

from __future__ import annotations

from collections.abc import Callable

from citewell.errors import Busy
from citewell.models.conversations import Conversation
from citewell.models.documents import Document, DocumentStatus, Upload
from citewell.ports import ConversationRecords, DocumentRecords, UploadRecords

ATTEMPTS = 20


def update_document(
    documents: DocumentRecords, tenant: str, document_id: str, change: Callable[[Document], Document | None]
) -> Document | None:
    """Apply ``change`` to the current record and store it with a compare-and-set, retrying on
    a lost race. ``change`` returns None to write nothing; so does a missing record."""
    for _ in range(ATTEMPTS):
        current = documents.get_document(tenant, document_id)
        if current is None:
            return None
        wanted = change(current)
        if wanted is None:
            return None
        stored = documents.save_document(wanted)
        if stored is not None:
            return stored
    raise Busy(f"the record of {document_id!r} kept changing under {ATTEMPTS} attempts; try again")


def update_conversation(
    conversations: ConversationRecords, conversation: Conversation, change: Callable[[Conversation], Conversation | None],
    reread: Callable[[], Conversation | None] | None = None,
) -> Conversation | None:
    """``change`` applied to a conversation with a compare-and-set, read again and retried when
    another writer won. ``change`` returns the head with the turns to write (see
    ``ConversationRecords.save_conversation``); ``reread`` reads it again with the turns
    ``change`` needs (default: the head alone, as appending a turn needs)."""
    current: Conversation | None = conversation
    for _ in range(ATTEMPTS):
        if current is None:
            return None
        wanted = change(current)
        if wanted is None:
            return None
        stored = conversations.save_conversation(wanted)
        if stored is not None:
            return stored
        current = (reread() if reread is not None
                   else conversations.get_conversation(conversation.tenant, conversation.conversation_id, last=0))
    raise Busy(f"conversation {conversation.conversation_id!r} kept changing under {ATTEMPTS} attempts; try again")


def current_upload(uploads: UploadRecords, document: Document) -> Upload | None:
    """The upload that may still move ``document`` on, if one is recorded."""
    return next((u for u in uploads.list_uploads(document.tenant, document.document_id) if is_current(document, u)), None)


def is_current(document: Document | None, upload: Upload) -> bool:
    """Whether ``upload`` may still move the record on: the same life of the record, the latest
    registered upload, and no delete under way."""
    return (
        document is not None
        and document.generation == upload.generation
        and document.upload_seq == upload.seq
        and document.upload_id in (None, upload.upload_id)
        and document.status is not DocumentStatus.DELETING
    )
