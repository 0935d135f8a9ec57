"""Every route of the HTTP API, its models and its errors, once, on a Powertools resolver.

Identity comes only from the verified claims in ``requestContext.authorizer.jwt.claims`` (API
Gateway's JWT authorizer on AWS, ``citewell serve``'s own verifier on one machine); nothing in
a body or query string can name a tenant or widen roles. Reading needs a role a document
allows; creating, replacing and deleting also need the tenant's write role. Errors are JSON
``{"error": {"code", "message"}}``: 4xx for anything the caller sent, 503 for retrieval that
is down, and a bare 500 (details only in the log) for our own failures.

Where settings and services come from is the transport's: :func:`build_resolver` takes a
callable returning an :class:`~citewell.api.dependencies.ApiBackend` (on AWS, built from the
environment on first use; locally, the home opened once per process).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.exceptions import BadRequestError, ForbiddenError, NotFoundError, ServiceError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestUnsupportedContentType, RequestValidationError
from pydantic import ValidationError
from pydantic_core import to_json

from citewell.api.callers import claims_identity, require_writer, token_id
from citewell.api.dependencies import ApiBackend
from citewell.api.models import FeedbackRequest, NewDocument, QueryRequest, SearchRequest
from citewell.api.resolver import IsolatedHttpResolver
from citewell.errors import Busy, CitewellError, Conflict, HomeNotWritable, NotFound, RetrievalUnavailable, readable
from citewell.ingest.registration import register_upload
from citewell.keys import raw_key
from citewell.models import Answer, AnswerRecord, Document, Identity, SearchResult, validate_document_id
from citewell.services import Services
from citewell.settings import InvalidSetting

logger = Logger(service="citewell-api")
UPLOAD_URL_SECONDS = 900
_SECTION = re.compile(r"[0-9]{1,6}-[0-9a-f]{16}")  # a section id (citewell.models.section_id); ASCII digits only


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


def _error(status: int, code: str, message: str) -> Response:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON,
                    body={"error": {"code": code, "message": message}})


def _problem(error: dict[str, Any]) -> str:
    if error["type"] == "json_invalid":  # loc is ("body", character offset)
        return f"the body is not valid JSON: {error.get('ctx', {}).get('error', 'cannot parse')} at character {error['loc'][-1]}"
    where = ".".join(str(part) for part in error["loc"][1:]) or "body"
    return f"{where}: {str(error.get('msg', error['type'])).removeprefix('Value error, ')}"


def json_text(value: Any) -> str:
    """A reply body as JSON text, written by pydantic's serializer.

    By the time a body reaches the serializer the validation middleware has already turned the
    route's model into JSON-ready values; Powertools' default (``json.dumps`` with its encoder
    class) then spends about 0.1 ms on a ten-hit search, three times what this takes. Non-ASCII
    characters are written as UTF-8 rather than ``\\u`` escapes: the same JSON value."""
    return to_json(value).decode("utf-8")


def build_resolver(backend: Callable[[], ApiBackend]) -> IsolatedHttpResolver:
    """A resolver with every route; ``backend`` is called per request and must be cheap (cache in it)."""
    app = IsolatedHttpResolver(enable_validation=True, serializer=json_text)

    def caller() -> tuple[ApiBackend, Identity]:
        found = backend()
        authorizer = app.current_event.request_context.authorizer
        claims = (authorizer.jwt_claim or {}) if authorizer else {}
        return found, claims_identity(claims, found.settings)

    @app.post("/documents")
    def create_document(request: NewDocument) -> Response[dict[str, Any]]:
        found, who = caller()
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
        form = found.upload_form(key, services.max_bytes, UPLOAD_URL_SECONDS, app.current_event)
        body = {"document_id": upload.document_id, "upload_id": upload.upload_id, "upload": form,
                "max_bytes": services.max_bytes, "expires_in": UPLOAD_URL_SECONDS}
        return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)

    @app.get("/documents")
    def list_documents() -> dict[str, Any]:
        from citewell.api.paging import LIST_PAGE, LIST_PAGE_MAX, list_page, page_size

        found, who = caller()
        query = app.current_event.get_query_string_value
        size = page_size(query("limit"), LIST_PAGE, LIST_PAGE_MAX)
        page = list_page(found.services.documents, who.tenant, who, query("cursor"), size)
        return {**page, "documents": [shown(d) for d in page["documents"]]}

    @app.get("/documents/<document_id>")
    def get_document(document_id: str) -> dict[str, Any]:
        from citewell.api.paging import TEXT_PAGE_CHARS, page_size, pinned_chunks, text_page

        found, who = caller()
        document_id = path_id(document_id)
        query = app.current_event.get_query_string_value
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

    @app.delete("/documents/<document_id>")
    def remove_document(document_id: str) -> dict[str, Any]:
        from citewell.deletion import delete_document

        found, who = caller()
        require_writer(found.settings, who)
        document_id = path_id(document_id)
        _visible(found.services.documents.get_document(who.tenant, document_id), who)
        return delete_document(found.services, who.tenant, document_id).model_dump()

    @app.post("/search")
    def search_documents(request: SearchRequest) -> SearchResult:
        from citewell.search import search

        found, who = caller()
        return search(found.services, who, request.question, k=request.k, lanes=found.settings.lanes, filters=request.filters)

    @app.post("/query")
    def query(request: QueryRequest) -> Answer:
        from citewell.asking import answer_turn

        found, who = caller()
        return answer_turn(found.services, who, request.question, request.conversation_id, lanes=found.settings.lanes,
                           filters=request.filters, mixed_locales=request.mixed_locales)

    @app.post("/answers/<answer_id>/feedback")
    def feedback(answer_id: str, request: FeedbackRequest) -> dict[str, Any]:
        from citewell.conversations import give_feedback

        found, who = caller()
        turn = give_feedback(found.services, who, token_id(answer_id, "answer"), request.helpful, request.comment)
        return {"answer_id": turn.answer_id, "feedback": turn.feedback.model_dump(mode="json") if turn.feedback else None}

    @app.get("/conversations")
    def recent_questions() -> dict[str, Any]:
        from citewell.conversations import history

        found, who = caller()
        return {"history": [item.model_dump(mode="json") for item in history(found.services, who)]}

    @app.get("/conversations/<conversation_id>")
    def conversation(conversation_id: str) -> dict[str, Any]:
        from citewell.conversations import thread

        found, who = caller()
        return thread(found.services, who, token_id(conversation_id, "conversation")).model_dump(mode="json")

    @app.get("/answers/<answer_id>/citations")
    def citations(answer_id: str) -> AnswerRecord:
        from citewell.answers.service import recorded_citations

        found, who = caller()
        return recorded_citations(found.services, who, token_id(answer_id, "answer"))

    @app.get("/me")
    def me() -> dict[str, Any]:
        """Who the token says the caller is, so a client can show it and hide what it may not do; a
        writer also learns the largest file an upload takes, to refuse a bigger one before sending it."""
        found, who = caller()
        me: dict[str, Any] = {"tenant": who.tenant, "roles": sorted(who.roles),
                              "can_write": found.settings.write_role in who.roles}
        if me["can_write"]:
            me["max_bytes"] = found.services.max_bytes
        return me

    @app.exception_handler(CitewellError)
    def handle_error(error: CitewellError) -> Response:
        if isinstance(error, InvalidSetting):  # the operator's configuration, not the caller's request
            logger.error("misconfigured: %s", error.message)
            return _error(500, "misconfigured", "the service is misconfigured: its operator's log says which setting")
        status = (404 if isinstance(error, NotFound) else 409 if isinstance(error, Conflict)
                  else 503 if isinstance(error, RetrievalUnavailable | Busy | HomeNotWritable) else 400)
        return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body={"error": error.as_dict()})

    @app.exception_handler(ServiceError)
    def handle_service_error(error: ServiceError) -> Response:
        return _error(error.status_code, type(error).__name__, str(error.msg))

    @app.exception_handler(RequestValidationError)
    def handle_invalid_request(error: RequestValidationError) -> Response:
        """A 422 that says which field is wrong and how (Powertools' default names only the type)."""
        return _error(422, "RequestValidationError", "; ".join(_problem(e) for e in error.errors()))

    @app.exception_handler(RequestUnsupportedContentType)
    def handle_unsupported_content(error: RequestUnsupportedContentType) -> Response:
        return _error(415, "RequestUnsupportedContentType", "send the body as application/json")

    @app.exception_handler(Exception)
    def handle_unexpected(error: Exception) -> Response:
        """Last resort: the details go to the log, never to the caller."""
        logger.exception("unexpected error")
        request_id = getattr(app.lambda_context, "aws_request_id", "unknown")
        return _error(500, "InternalServerError",
                      f"Something went wrong on our side. If it persists, report request id {request_id}.")

    return app


def _no_backend() -> ApiBackend:
    raise RuntimeError("this resolver only describes the API")


def openapi_document() -> str:
    """The OpenAPI description of the API, the same for both transports."""
    return build_resolver(_no_backend).get_openapi_json_schema(title="citewell", version="0.1.0")
