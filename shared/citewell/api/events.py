"""API Gateway HTTP API (payload 2.0) events in and out: what is refused before any route runs.

Both transports hand :func:`handle` a payload 2.0 event: API Gateway on AWS, ``citewell
serve`` after verifying the bearer token itself.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any
from urllib.parse import quote, unquote_to_bytes

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, content_types
from aws_lambda_powertools.event_handler.exceptions import BadRequestError, RequestEntityTooLargeError, ServiceError

from citewell.api.routes import logger

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
    which :func:`citewell.api.routes.path_id` decodes exactly once."""
    path = event.get("rawPath") or ""
    stage = (event.get("requestContext") or {}).get("stage") or "$default"
    for head in (_DOCUMENTS, f"/{stage}{_DOCUMENTS}"):
        if path.startswith(head) and len(path) > len(head):
            return {**event, "rawPath": head + quote(unquote_to_bytes(path[len(head):]), safe="")}
    return event


def reply(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """An HTTP API (payload 2.0) response with the one error shape, for requests refused before the resolver runs."""
    return {"statusCode": status, "headers": {"Content-Type": content_types.APPLICATION_JSON, **(headers or {})},
            "body": json.dumps({"error": {"code": code, "message": message}}), "isBase64Encoded": False, "cookies": []}


def handle(app: APIGatewayHttpResolver, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """One request through the API: the body checks, then the route."""
    try:
        check_body(event)
    except ServiceError as error:
        logger.info("request refused", status=error.status_code, reason=error.msg)
        return reply(error.status_code, type(error).__name__, str(error.msg))
    return app.resolve(one_id_segment(event), context)
