"""Registering an upload: the first transition of the state machine, kept apart from the stages
so the API can register uploads without importing a parser (its cold start stays small)."""

from __future__ import annotations

from citewell.errors import Conflict, DocumentIdTaken
from citewell.leases import Lease
from citewell.models.documents import Descriptive, Document, DocumentStatus, Fetched, Upload, descriptive
from citewell.models.values import new_token
from citewell.records import ATTEMPTS
from citewell.services import Services


def register_upload(
    services: Services,
    *,
    document_id: str,
    tenant: str,
    allowed_roles: frozenset[str],
    title: str | None = None,
    source: str = "",
    filename: str | None = None,
    described: Descriptive | None = None,
    replace: bool = True,
    lease: Lease | None = None,
    fetched: Fetched | None = None,
) -> Upload:
    """Record a new upload intent and make it the document's latest; the bytes come after.

    The intent is written first (nobody follows it until the record names its sequence), then
    the record moves to ``processing`` with a compare-and-set; a lost race takes the next
    number. A document being deleted takes no upload until the delete is done. With
    ``replace=False`` a document that came from another source, or is readable by other roles,
    is left alone (:class:`DocumentIdTaken`): ids made from paths can meet by accident.
    ``lease`` names the process that will run the stages, when it is this one (the local
    runner), so the audit knows at once when it died.
    """
    upload_id = new_token()
    fields = descriptive(described or Descriptive())
    for _ in range(ATTEMPTS):
        current = services.documents.get_document(tenant, document_id)
        if current is not None and current.status is DocumentStatus.DELETING:
            raise Conflict(f"{document_id!r} is being deleted; upload it again once the delete has finished")
        if current is not None and not replace:
            _refuse_another(current, source, allowed_roles)
        upload = Upload(
            upload_id=upload_id, seq=(current.upload_seq if current else 0) + 1,
            generation=current.generation if current else new_token(), document_id=document_id, tenant=tenant,
            allowed_roles=allowed_roles, title=title, source=source, filename=filename, **fields, fetched=fetched,
        )
        services.uploads.put_upload(upload)
        if current is None:
            wanted = Document(
                document_id=document_id, tenant=tenant, allowed_roles=allowed_roles, title=title or "", source=source,
                filename=filename, **fields, generation=upload.generation, upload_seq=upload.seq, upload_id=upload_id,
                lease=lease,
            )
        else:
            update: dict[str, object] = {
                "upload_seq": upload.seq, "upload_id": upload_id, "status": DocumentStatus.PROCESSING, "error": None,
                "lease": lease,
            }
            if current.active_revision is None:  # nothing served yet: the record shows the latest upload
                update.update(allowed_roles=allowed_roles, title=title or "", source=source, filename=filename, **fields)
            wanted = current.model_copy(update=update)
        if services.documents.save_document(wanted) is not None:
            return upload
        services.uploads.delete_upload(tenant, document_id, upload_id)
    raise Conflict(f"{document_id!r} kept changing while registering an upload; try again")


def _refuse_another(current: Document, source: str, allowed_roles: frozenset[str]) -> None:
    """Another file, or other readers, under the same id is a replacement nobody asked for."""
    differences = []
    if current.source != source:
        differences.append(f"it came from {current.source or 'an unnamed source'}, this is {source or 'an unnamed source'}")
    if current.allowed_roles != allowed_roles:
        differences.append(f"it is readable by {','.join(sorted(current.allowed_roles))}, "
                           f"this would be by {','.join(sorted(allowed_roles))}")
    if differences:
        raise DocumentIdTaken(
            f"{current.document_id!r} already exists and was left as it is: {'; '.join(differences)}; "
            "pass --replace to replace it on purpose, or give this file another id"
        )
