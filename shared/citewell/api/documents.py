"""``/documents``: create (a file's upload form, or a web page fetched), list, read (paged text,
or one section) and delete a document, each within what the caller may read and write."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.exceptions import BadRequestError, ForbiddenError, NotFoundError
from pydantic import ValidationError

from citewell.api.callers import require_writer
from citewell.api.dependencies import ApiDependencies
from citewell.api.models import NewDocument
from citewell.errors import readable
from citewell.ingest.registration import register_upload
from citewell.keys import raw_key
from citewell.models.documents import Document
from citewell.models.identity import Identity
from citewell.models.values import validate_document_id
from citewell.services import Services

UPLOAD_URL_SECONDS = 900
_SECTION = re.compile(r"[0-9]{1,6}-[0-9a-f]{16}")  # a section id (citewell.models.chunks.section_id); ASCII digits only


def checked_id(document_id: str) -> str:
    """The one id grammar (at most 512 bytes: it becomes a DynamoDB key) for every id the API is sent."""
    try:
        return validate_document_id(document_id)
    except ValueError as error:
        raise BadRequestError(str(error)) from None


def path_id(segment: str) -> str:
    """The id in ``/documents/{id}``: one percent-encoded segment (see :func:`citewell.api.events.one_id_segment`)."""
    try:
        return checked_id(unquote(segment, errors="strict"))
    except UnicodeDecodeError:
        raise BadRequestError("the document id in the path is not percent-encoded UTF-8") from None


def _visible(document: Document | None, caller: Identity) -> Document:
    if document is None or not caller.can_see(document.tenant, document.allowed_roles):
        raise NotFoundError("no such document")  # the same answer whether it exists or not
    return document


def shown(document: Document) -> dict[str, Any]:
    """A record as callers see it: which process holds it in flight is the server's business, and
    so is where on the server's disk `citewell ingest` read a file (a ``file:`` source)."""
    record = document.model_dump(mode="json", exclude={"lease"})
    if record["source"].startswith("file:"):
        record["source"] = ""
    return record


def read_section(services: Services, caller: Identity, document_id: str, section: str) -> dict[str, Any]:
    """``GET /documents/{id}?section=ID``: one section of the served revision as a snapshot within
    the evidence budget (:mod:`citewell.reads`), 400 over it, 404 for a section id of another
    revision and for a document the caller may not read."""
    from citewell.answers.config import evidence_budget
    from citewell.reads import served_chunks, snapshot

    if not _SECTION.fullmatch(section):
        raise BadRequestError("section must be a section id, as a search hit's or citation's section_id "
                              "(such as 3-1f2e3d4c5b6a7988)")
    document, chunks = served_chunks(services, caller, document_id)
    return {"document": shown(document), **snapshot(document, chunks, evidence_budget(), section).model_dump(mode="json")}


def router(api: ApiDependencies) -> Router:
    """The four routes of ``/documents``."""
    routes = Router()

    @routes.post("/documents")
    def create_document(request: NewDocument) -> Response[dict[str, Any]]:
        found, who = api.caller()
        services = found.services
        require_writer(found.settings, who)
        source, filename = request.source, request.filename
        if request.url is not None:
            if found.fetch_page is None:
                raise BadRequestError("this service does not fetch web pages: send the file instead")
            from citewell.fetch.urls import filename_of, normalise

            source = normalise(request.url)  # UrlRefused (400) for another scheme or credentials in it
            filename = filename_of(source)
        document_id = checked_id(request.document_id or source)
        roles = frozenset(request.allowed_roles)
        if not roles <= who.roles:
            raise ForbiddenError("allowed_roles may only name roles the caller holds")
        existing = services.documents.get_document(who.tenant, document_id)
        if existing is not None and not who.can_see(existing.tenant, existing.allowed_roles):
            raise ForbiddenError("a document with this id exists and the caller may not replace it")
        try:
            upload = register_upload(
                services, document_id=document_id, tenant=who.tenant, allowed_roles=roles, title=request.title,
                source=source, filename=filename, described=request, lease=found.lease,
            )
        except ValidationError as error:
            raise BadRequestError(readable(error)) from None
        if request.url is not None:
            assert found.fetch_page is not None
            found.fetch_page(upload)
            body = {"document_id": upload.document_id, "upload_id": upload.upload_id, "url": source, "fetching": True}
            return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=body)
        key = raw_key(who.tenant, upload.document_id, upload.upload_id)
        form = found.upload_form(key, services.max_bytes, UPLOAD_URL_SECONDS, api.event)
        body = {"document_id": upload.document_id, "upload_id": upload.upload_id, "upload": form,
                "max_bytes": services.max_bytes, "expires_in": UPLOAD_URL_SECONDS}
        return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)

    @routes.get("/documents")
    def list_documents() -> dict[str, Any]:
        from citewell.api.paging import LIST_PAGE, LIST_PAGE_MAX, list_page, page_size

        found, who = api.caller()
        query = api.event.get_query_string_value
        size = page_size(query("limit"), LIST_PAGE, LIST_PAGE_MAX)
        page = list_page(found.services.documents, who.tenant, who, query("cursor"), size)
        return {**page, "documents": [shown(d) for d in page["documents"]]}

    @routes.get("/documents/<document_id>")
    def get_document(document_id: str) -> dict[str, Any]:
        from citewell.api.paging import TEXT_PAGE_CHARS, page_size, pinned_chunks, text_page

        found, who = api.caller()
        document_id = path_id(document_id)
        query = api.event.get_query_string_value
        section = query("section")
        if section is not None:  # a section read: one budget-checked snapshot (citewell.reads), never paged
            if query("cursor") is not None or query("limit") is not None:
                raise BadRequestError("a section is read whole, within the evidence budget: send section without cursor or limit")
            return read_section(found.services, who, document_id, section)
        cursor, limit = query("cursor"), page_size(query("limit"), TEXT_PAGE_CHARS, TEXT_PAGE_CHARS)
        document, chunks = pinned_chunks(found.services.documents, found.services.chunks, who, document_id, cursor,
                                         lambda d: _visible(d, who))
        text = "".join(c.text[max(0, c.body_start - c.start):] for c in chunks)
        return {"document": shown(document), **text_page(text, chunks[0].revision if chunks else None, cursor, limit)}

    @routes.delete("/documents/<document_id>")
    def remove_document(document_id: str) -> dict[str, Any]:
        from citewell.deletion import delete_document

        found, who = api.caller()
        require_writer(found.settings, who)
        document_id = path_id(document_id)
        _visible(found.services.documents.get_document(who.tenant, document_id), who)
        return delete_document(found.services, who.tenant, document_id).model_dump()

    return routes
