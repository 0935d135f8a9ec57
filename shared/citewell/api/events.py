"""API Gateway HTTP API (payload 2.0) events in and out: what is refused before any route runs.

Both transports hand :func:`handle` a payload 2.0 event: API Gateway on AWS, ``citewell
serve`` after verifying the bearer token itself.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from typing import Any
from urllib.parse import quote, unquote_to_bytes

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, content_types
from aws_lambda_powertools.event_handler.exceptions import BadRequestError, RequestEntityTooLargeError, ServiceError

from citewell.api.routes import logger, openapi_document

MAX_BODY_BYTES = 64 * 1024
MAX_JSON_DEPTH = 32  # our bodies nest 2 deep; a cap far below the parser's recursion limit
_DOCUMENTS = "/documents/"


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


class UnsupportedContentType(ServiceError):
    """A body that is not JSON: every route reads JSON, and Powertools would parse a form or a
    multipart body into the same fields (a non-UTF-8 part of one raised a 500)."""

    code = "RequestUnsupportedContentType"

    def __init__(self) -> None:
        super().__init__(415, "send the body as application/json")


def json_content_type(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its content type checked and spelled as Powertools compares it: a media type
    is case-insensitive and may carry parameters (``Application/JSON; charset=utf-8`` is JSON), a
    look-alike is not (``application/jsonx``). A body without a content type is read as JSON; one
    with any other type is refused; a bodiless request's content type does not matter."""
    headers = event.get("headers") or {}
    declared = [name for name in headers if name.lower() == "content-type"]
    if not declared:
        return event
    media_type = str(headers[declared[0]]).partition(";")[0].strip().lower()
    kept = {name: value for name, value in headers.items() if name not in declared}
    if media_type == content_types.APPLICATION_JSON:
        kept["content-type"] = content_types.APPLICATION_JSON
    elif event.get("body"):
        raise UnsupportedContentType
    return {**event, "headers": kept}


def one_id_segment(event: dict[str, Any]) -> dict[str, Any]:
    """Ids may contain '/' (folder ingests make ``guide/intro.md``); the route ``<document_id>``
    matches one segment. A client may send ``guide%2Fintro.md`` (API Gateway leaves rawPath
    undecoded) or raw segments (``{id+}`` routes them here); both become one encoded segment,
    which :func:`citewell.api.documents.path_id` decodes exactly once."""
    path = event.get("rawPath") or ""
    stage = (event.get("requestContext") or {}).get("stage") or "$default"
    for head in (_DOCUMENTS, f"/{stage}{_DOCUMENTS}"):
        if path.startswith(head) and len(path) > len(head):
            return {**event, "rawPath": head + quote(unquote_to_bytes(path[len(head):]), safe="")}
    return event


@functools.lru_cache(maxsize=1)
def _api_methods() -> list[tuple[re.Pattern[str], frozenset[str]]]:
    """Each API path of the OpenAPI document (an id may hold '/') with its methods."""
    paths = json.loads(openapi_document())["paths"]
    return [(re.compile(re.sub(r"\\\{[^}]+\\\}", ".+", re.escape(path))), frozenset(m.upper() for m in methods))
            for path, methods in paths.items()]


def allowed_methods(path: str) -> frozenset[str] | None:
    """The methods an API path takes, or None for a path the API does not have."""
    return next((methods for pattern, methods in _api_methods() if pattern.fullmatch(path)), None)


def _wrong_method(event: dict[str, Any]) -> dict[str, Any] | None:
    """A 405 naming the methods for a path the API has, asked with a method it does not take (the
    resolver knows routes, not paths, and says 404). Looked up only after a 404, so a cold start
    does not build the OpenAPI document."""
    path = event.get("rawPath") or ""
    stage = (event.get("requestContext") or {}).get("stage") or "$default"
    path = path[len(stage) + 1:] if path.startswith(f"/{stage}/") else path
    method = str(((event.get("requestContext") or {}).get("http") or {}).get("method", "")).upper()
    allowed = allowed_methods(path)
    if not allowed or method in allowed:
        return None
    listed = ", ".join(sorted(allowed))
    return reply(405, "MethodNotAllowedError", f"{path} takes {listed}, not {method}", {"Allow": listed})


def reply(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """An HTTP API (payload 2.0) response with the one error shape, for requests refused before the resolver runs."""
    return {"statusCode": status, "headers": {"Content-Type": content_types.APPLICATION_JSON, **(headers or {})},
            "body": json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False, separators=(",", ":")),
            "isBase64Encoded": False, "cookies": []}


def handle(app: APIGatewayHttpResolver, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """One request through the API: the body checks, then the route."""
    try:
        event = json_content_type(event)
        check_body(event)
    except ServiceError as error:
        logger.info("request refused", status=error.status_code, reason=error.msg)
        return reply(error.status_code, getattr(error, "code", type(error).__name__), str(error.msg))
    resolved = app.resolve(one_id_segment(event), context)
    if resolved.get("statusCode") == 404:
        return _wrong_method(event) or resolved
    return resolved
