"""The HTTP API (API Gateway HTTP API with a JWT authorizer), as a Powertools resolver.

Identity comes only from the authorizer's verified claims; nothing in a body or query
string can name a tenant or widen roles. Errors are JSON 4xx (5xx only for retrieval that
is down), never a stack trace.
"""

from __future__ import annotations

import re
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import BadRequestError, ForbiddenError, NotFoundError, ServiceError
from pydantic import BaseModel, Field, ValidationError

from citewell.aws.settings import AwsSettings, services_from_env
from citewell.errors import CitewellError, NotFound, RetrievalUnavailable
from citewell.keys import raw_key
from citewell.models import Document, DocumentStatus, Identity

logger = Logger(service="citewell-api")
app = APIGatewayHttpResolver(enable_validation=True)
UPLOAD_URL_SECONDS = 900


class NewDocument(BaseModel):
    document_id: str = Field(min_length=1, max_length=512)
    allowed_roles: list[str] = Field(min_length=1)
    title: str | None = None
    source: str = ""
    locale: str = "en"
    filename: str | None = None


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
    claims = (app.current_event.request_context.authorizer.jwt_claim or {}) if app.current_event.request_context.authorizer else {}
    found = Identity(tenant=str(claims.get(settings.tenant_claim, "") or ""), roles=_roles(claims.get(settings.roles_claim)))
    if found.is_empty:
        raise ForbiddenError("the token carries no tenant or no roles")
    return found


def _visible(document: Document | None, caller: Identity) -> Document:
    if document is None or not caller.can_see(document.tenant, document.allowed_roles):
        raise NotFoundError("no such document")  # the same answer whether it exists or not
    return document


@app.post("/documents")
def create_document(request: NewDocument) -> Response[dict[str, Any]]:
    settings, services = services_from_env()
    caller = identity(settings)
    roles = frozenset(request.allowed_roles)
    if not roles <= caller.roles:
        raise ForbiddenError("allowed_roles may only name roles the caller holds")
    existing = services.metadata.get_document(caller.tenant, request.document_id)
    if existing is not None and not caller.can_see(existing.tenant, existing.allowed_roles):
        raise ForbiddenError("a document with this id exists and the caller may not replace it")
    try:
        document = Document(
            document_id=request.document_id, tenant=caller.tenant, allowed_roles=roles, title=request.title or "",
            source=request.source, filename=request.filename, locale=request.locale, status=DocumentStatus.PROCESSING,
            active_revision=existing.active_revision if existing else None,
            chunk_count=existing.chunk_count if existing else 0,
        )
    except ValidationError as error:
        raise BadRequestError("; ".join(e["msg"] for e in error.errors())) from None
    services.metadata.put_document(document)
    key = raw_key(caller.tenant, document.document_id)
    objects: Any = services.objects
    url = objects.client.generate_presigned_url(
        "put_object", Params={"Bucket": objects.bucket, "Key": key}, ExpiresIn=UPLOAD_URL_SECONDS
    )
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON,
                    body={"document_id": document.document_id, "upload_url": url, "expires_in": UPLOAD_URL_SECONDS})


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
    document = _visible(services.metadata.get_document(caller.tenant, document_id), caller)
    chunks = services.metadata.get_chunks(caller.tenant, document_id, document.active_revision) if document.active_revision else []
    section = app.current_event.get_query_string_value("section")
    if section is not None:
        if not section.isdigit():
            raise BadRequestError("section must be a number")
        chunks = [c for c in chunks if c.section_index == int(section)]
    text = "".join(c.text[max(0, c.body_start - c.start):] for c in chunks)
    return {"document": document.model_dump(mode="json"), "text": text}


@app.delete("/documents/<document_id>")
def remove_document(document_id: str) -> dict[str, Any]:
    from citewell.deletion import delete_document

    settings, services = services_from_env()
    caller = identity(settings)
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
    record = recorded_citations(services, caller.tenant, answer_id)
    if not caller.roles & set(record.roles):
        raise NotFoundError("no such answer")
    return record.model_dump(mode="json")


@app.exception_handler(CitewellError)
def handle_error(error: CitewellError) -> Response:
    status = 404 if isinstance(error, NotFound) else 503 if isinstance(error, RetrievalUnavailable) else 400
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body={"error": error.as_dict()})


@app.exception_handler(ServiceError)
def handle_service_error(error: ServiceError) -> Response:
    return Response(status_code=error.status_code, content_type=content_types.APPLICATION_JSON,
                    body={"error": {"code": type(error).__name__, "message": error.msg}})


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)


def openapi_document() -> str:
    """The OpenAPI description of this API (``python -m citewell.aws.api`` prints it)."""
    return app.get_openapi_json_schema(title="citewell", version="0.1.0")


if __name__ == "__main__":
    print(openapi_document())
