"""The HTTP API (API Gateway HTTP API with a JWT authorizer), as a Powertools resolver.

Identity comes only from the authorizer's verified claims; nothing in a body or query
string can name a tenant or widen roles. Reading needs a role a document allows; creating,
replacing and deleting also need the tenant's write role. Errors are JSON
``{"error": {"code", "message"}}``: 4xx for anything the caller sent, 503 for retrieval
that is down, and a bare 500 (details only in the log) for our own failures.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any
from urllib.parse import quote, unquote, unquote_to_bytes

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import (
    BadRequestError,
    ForbiddenError,
    NotFoundError,
    RequestEntityTooLargeError,
    ServiceError,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestUnsupportedContentType, RequestValidationError
from pydantic import BaseModel, Field, ValidationError, field_validator

from citewell.aws.settings import AwsSettings, services_from_env
from citewell.errors import Busy, CitewellError, Conflict, NotFound, RetrievalUnavailable, readable
from citewell.keys import raw_key
from citewell.ingest.registration import register_upload
from citewell.models import Document, Identity, validate_document_id, validate_name, validate_tenant, validate_token

logger = Logger(service="citewell-api")
tracer = Tracer(service="citewell-api")
app = APIGatewayHttpResolver(enable_validation=True)
UPLOAD_URL_SECONDS = 900
MAX_BODY_BYTES = 64 * 1024
MAX_JSON_DEPTH = 32  # our bodies nest 2 deep; a cap far below the parser's recursion limit
_SECTION = re.compile(r"[0-9]{1,6}")  # ASCII only: str.isdigit() also accepts '²', which int() refuses
_DOCUMENTS = "/documents/"


class NewDocument(BaseModel):
    """Bounded so a record always fits a DynamoDB item and an index row."""

    document_id: str = Field(min_length=1, max_length=512)
    allowed_roles: list[str] = Field(min_length=1, max_length=32)
    title: str | None = Field(default=None, max_length=512)
    source: str = Field(default="", max_length=2048)
    locale: str = Field(default="en", max_length=35)  # RFC 5646: 35 characters hold any practical tag
    filename: str | None = Field(default=None, max_length=512)

    @field_validator("allowed_roles")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        return [validate_name(role, "role") for role in value]


class SearchRequest(BaseModel):
    question: str = Field(min_length=1, max_length=2000)
    k: int = Field(default=10, ge=1, le=100)


class QueryRequest(BaseModel):
    question: str = Field(min_length=1, max_length=2000)


def _roles(value: Any) -> frozenset[str]:
    """Group claims arrive as a list, "[a b]" (Cognito through HTTP APIs) or "a,b"."""
    if isinstance(value, list):
        return frozenset(str(v) for v in value if str(v).strip())
    return frozenset(r for r in re.split(r"[\s,\[\]]+", str(value or "")) if r)


def identity(settings: AwsSettings) -> Identity:
    """The caller from the authorizer's verified claims. The API takes the Cognito ID token: an
    access token carries no custom attributes, so it cannot name a tenant."""
    claims = (app.current_event.request_context.authorizer.jwt_claim or {}) if app.current_event.request_context.authorizer else {}
    if claims.get("token_use") == "access" and settings.tenant_claim not in claims:
        raise ForbiddenError(f"this is an access token, which carries no {settings.tenant_claim!r}: "
                             "send the ID token in the Authorization header")
    tenant = str(claims.get(settings.tenant_claim, "") or "")
    found = Identity(tenant=tenant, roles=_roles(claims.get(settings.roles_claim)))
    if found.is_empty:
        raise ForbiddenError("the token carries no tenant or no roles")
    try:
        validate_tenant(tenant)
    except ValueError as error:
        raise ForbiddenError(f"the token's tenant is not a valid tenant: {error}") from None
    return found


def require_writer(settings: AwsSettings, caller: Identity) -> None:
    """Read access is not write access: changing documents needs the tenant's write role too."""
    if settings.write_role not in caller.roles:
        raise ForbiddenError(f"creating, replacing or deleting documents needs the role {settings.write_role!r}, "
                             "which this token does not carry")


def checked_id(document_id: str) -> str:
    """The one id grammar (at most 512 bytes: it becomes a DynamoDB key) for every id the API is sent."""
    try:
        return validate_document_id(document_id)
    except ValueError as error:
        raise BadRequestError(str(error)) from None


def path_id(segment: str) -> str:
    """The id in ``/documents/{id}``: one percent-encoded segment (see :func:`one_id_segment`)."""
    try:
        return checked_id(unquote(segment, errors="strict"))
    except UnicodeDecodeError:
        raise BadRequestError("the document id in the path is not percent-encoded UTF-8") from None


def _visible(document: Document | None, caller: Identity) -> Document:
    if document is None or not caller.can_see(document.tenant, document.allowed_roles):
        raise NotFoundError("no such document")  # the same answer whether it exists or not
    return document


@app.post("/documents")
def create_document(request: NewDocument) -> Response[dict[str, Any]]:
    settings, services = services_from_env()
    caller = identity(settings)
    require_writer(settings, caller)
    checked_id(request.document_id)
    roles = frozenset(request.allowed_roles)
    if not roles <= caller.roles:
        raise ForbiddenError("allowed_roles may only name roles the caller holds")
    existing = services.metadata.get_document(caller.tenant, request.document_id)
    if existing is not None and not caller.can_see(existing.tenant, existing.allowed_roles):
        raise ForbiddenError("a document with this id exists and the caller may not replace it")
    try:
        upload = register_upload(
            services, document_id=request.document_id, tenant=caller.tenant, allowed_roles=roles, title=request.title,
            source=request.source, filename=request.filename, locale=request.locale,
        )
    except ValidationError as error:
        raise BadRequestError(readable(error)) from None
    key = raw_key(caller.tenant, upload.document_id, upload.upload_id)
    objects: Any = services.objects
    form = objects.upload_form(key, services.max_bytes, UPLOAD_URL_SECONDS)
    body = {"document_id": upload.document_id, "upload_id": upload.upload_id, "upload": form,
            "max_bytes": services.max_bytes, "expires_in": UPLOAD_URL_SECONDS}
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)


@app.get("/documents")
def list_documents() -> dict[str, Any]:
    settings, services = services_from_env()
    caller = identity(settings)
    documents = [d for d in services.metadata.list_documents(caller.tenant) if caller.can_see(d.tenant, d.allowed_roles)]
    return {"documents": [d.model_dump(mode="json") for d in documents]}


@app.get("/documents/<document_id>")
def get_document(document_id: str) -> dict[str, Any]:
    settings, services = services_from_env()
    caller = identity(settings)
    document_id = path_id(document_id)
    section = app.current_event.get_query_string_value("section")
    if section is not None and not _SECTION.fullmatch(section):
        raise BadRequestError("section must be a section number: 1 to 6 digits (0-9)")
    document = _visible(services.metadata.get_document(caller.tenant, document_id), caller)
    chunks = services.metadata.get_chunks(caller.tenant, document_id, document.active_revision) if document.active_revision else []
    if section is not None:
        chunks = [c for c in chunks if c.section_index == int(section)]
    text = "".join(c.text[max(0, c.body_start - c.start):] for c in chunks)
    return {"document": document.model_dump(mode="json"), "text": text}


@app.delete("/documents/<document_id>")
def remove_document(document_id: str) -> dict[str, Any]:
    from citewell.deletion import delete_document

    settings, services = services_from_env()
    caller = identity(settings)
    require_writer(settings, caller)
    document_id = path_id(document_id)
    _visible(services.metadata.get_document(caller.tenant, document_id), caller)
    return delete_document(services, caller.tenant, document_id).model_dump()


@app.post("/search")
def search_documents(request: SearchRequest) -> dict[str, Any]:
    from citewell.search import search

    settings, services = services_from_env()
    caller = identity(settings)
    return search(services, caller, request.question, k=request.k, lanes=settings.lanes).model_dump(mode="json")


@app.post("/query")
def query(request: QueryRequest) -> dict[str, Any]:
    from citewell.answers.config import evidence_budget, generator_from_env
    from citewell.answers.service import ask

    settings, services = services_from_env()
    caller = identity(settings)
    answer = ask(services, caller, request.question, generator_from_env(services), evidence_budget(), lanes=settings.lanes)
    return answer.model_dump(mode="json")


@app.get("/answers/<answer_id>/citations")
def citations(answer_id: str) -> dict[str, Any]:
    from citewell.answers.service import recorded_citations

    settings, services = services_from_env()
    caller = identity(settings)
    try:
        validate_token(answer_id)
    except ValueError:
        raise NotFoundError("no such answer") from None  # no id we issue looks like this
    return recorded_citations(services, caller, answer_id).model_dump(mode="json")


@app.exception_handler(CitewellError)
def handle_error(error: CitewellError) -> Response:
    status = (404 if isinstance(error, NotFound) else 409 if isinstance(error, Conflict)
              else 503 if isinstance(error, RetrievalUnavailable | Busy) else 400)
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body={"error": error.as_dict()})


@app.exception_handler(ServiceError)
def handle_service_error(error: ServiceError) -> Response:
    return _error(error.status_code, type(error).__name__, str(error.msg))


@app.exception_handler(RequestValidationError)
def handle_invalid_request(error: RequestValidationError) -> Response:
    """A 422 that says which field is wrong and how (Powertools' default names only the type)."""
    return _error(422, "RequestValidationError", "; ".join(_problem(e) for e in error.errors()))


def _problem(error: dict[str, Any]) -> str:
    if error["type"] == "json_invalid":  # loc is ("body", character offset)
        return f"the body is not valid JSON: {error.get('ctx', {}).get('error', 'cannot parse')} at character {error['loc'][-1]}"
    where = ".".join(str(part) for part in error["loc"][1:]) or "body"
    return f"{where}: {str(error.get('msg', error['type'])).removeprefix('Value error, ')}"


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


def _error(status: int, code: str, message: str) -> Response:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON,
                    body={"error": {"code": code, "message": message}})


def _json_depth(value: Any) -> int:
    """Without recursion, so a deep body cannot exhaust the stack here either."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict | list):
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def check_body(event: dict[str, Any]) -> None:
    """Refuse a body we could not read before Powertools reads it: its base64 and JSON
    decoding raise plain errors (binascii.Error, RecursionError, ValueError over 4,300
    digits) that would otherwise become 500s. Malformed JSON is left to the 422 with details."""
    body = event.get("body")
    if not body:
        return
    if event.get("isBase64Encoded"):
        try:
            data = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise BadRequestError("the body is marked base64-encoded but is not valid base64") from None
    else:
        data = body.encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_BODY_BYTES:
        raise RequestEntityTooLargeError(f"the body is {len(data):,} bytes; the limit is 64 KiB ({MAX_BODY_BYTES:,} bytes)")
    content_type = str({k.lower(): v for k, v in (event.get("headers") or {}).items()}.get("content-type", "")).strip()
    if content_type and not content_type.startswith(content_types.APPLICATION_JSON):
        return
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequestError("the body is not UTF-8 text") from None
    except json.JSONDecodeError:
        return
    except RecursionError:
        raise BadRequestError(f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError:  # int() refuses more than 4,300 digits
        raise BadRequestError("the JSON body holds a number too long to read") from None
    if _json_depth(parsed) > MAX_JSON_DEPTH:
        raise BadRequestError(f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep")


def one_id_segment(event: dict[str, Any]) -> dict[str, Any]:
    """Ids may contain '/' (folder ingests make ``guide/intro.md``); the route ``<document_id>``
    matches one segment. A client may send ``guide%2Fintro.md`` (API Gateway leaves rawPath
    undecoded) or raw segments (``{id+}`` routes them here); both become one encoded segment,
    which :func:`path_id` decodes exactly once."""
    path = event.get("rawPath") or ""
    stage = (event.get("requestContext") or {}).get("stage") or "$default"
    for head in (_DOCUMENTS, f"/{stage}{_DOCUMENTS}"):
        if path.startswith(head) and len(path) > len(head):
            return {**event, "rawPath": head + quote(unquote_to_bytes(path[len(head):]), safe="")}
    return event


def _reply(status: int, code: str, message: str) -> dict[str, Any]:
    """An HTTP API (payload 2.0) response, for requests refused before the resolver runs."""
    return {"statusCode": status, "headers": {"Content-Type": content_types.APPLICATION_JSON},
            "body": json.dumps({"error": {"code": code, "message": message}}), "isBase64Encoded": False, "cookies": []}


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        check_body(event)
    except ServiceError as error:
        logger.info("request refused", status=error.status_code, reason=error.msg)
        return _reply(error.status_code, type(error).__name__, str(error.msg))
    return app.resolve(one_id_segment(event), context)


def openapi_document() -> str:
    """The OpenAPI description of this API (``python -m citewell.aws.api`` prints it)."""
    return app.get_openapi_json_schema(title="citewell", version="0.1.0")


if __name__ == "__main__":
    print(openapi_document())
