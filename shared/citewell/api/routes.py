"""The HTTP API on a Powertools resolver: one router per resource, its errors, its OpenAPI document.

Each resource's routes are a module of their own (:mod:`~citewell.api.documents`,
:mod:`~citewell.api.search`, :mod:`~citewell.api.query`, :mod:`~citewell.api.feedback`,
:mod:`~citewell.api.conversations`, :mod:`~citewell.api.citations`, :mod:`~citewell.api.me`),
each building its ``Router`` from the :class:`~citewell.api.dependencies.ApiDependencies`;
:func:`build_resolver` joins them on one resolver with the API's exception handlers.

Identity comes only from the verified claims in ``requestContext.authorizer.jwt.claims`` (API
Gateway's JWT authorizer on AWS, ``citewell serve``'s own verifier on one machine); nothing in
a body or query string can name a tenant or widen roles. Reading needs a role a document
allows; creating, replacing and deleting also need the tenant's write role. Errors are JSON
``{"error": {"code", "message"}}``: 4xx for anything the caller sent, 503 for retrieval that
is down or a store that gave no reply within a ``/query``'s deadline, and a bare 500 (details
only in the log) for our own failures.

Where settings and services come from is the transport's: :func:`build_resolver` takes a
callable returning an :class:`~citewell.api.dependencies.ApiBackend` (on AWS, built from the
environment on first use; locally, the home opened once per process).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.exceptions import ServiceError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestUnsupportedContentType, RequestValidationError
from pydantic_core import to_json

from citewell.api import citations, conversations, documents, feedback, me, query, search
from citewell.api.dependencies import ApiBackend, ApiDependencies
from citewell.api.resolver import IsolatedHttpResolver
from citewell.errors import Busy, CitewellError, Conflict, HomeNotWritable, NotFound, OutOfTime, RetrievalUnavailable
from citewell.settings import InvalidSetting

logger = Logger(service="citewell-api")


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
    api = ApiDependencies(backend=backend, resolver=app)
    for resource in (documents, search, query, feedback, conversations, citations, me):  # the OpenAPI document's order
        app.include_router(resource.router(api))

    @app.exception_handler(CitewellError)
    def handle_error(error: CitewellError) -> Response:
        if isinstance(error, InvalidSetting):  # the operator's configuration, not the caller's request
            logger.error("misconfigured: %s", error.message)
            return _error(500, "misconfigured", "the service is misconfigured: its operator's log says which setting")
        status = (404 if isinstance(error, NotFound) else 409 if isinstance(error, Conflict)
                  else 503 if isinstance(error, RetrievalUnavailable | OutOfTime | Busy | HomeNotWritable) else 400)
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
