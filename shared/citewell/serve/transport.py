"""HTTP requests as API Gateway HTTP API (payload 2.0) events, and the resolver's replies as responses.

The event is what API Gateway hands the Lambda after its JWT authorizer: the raw path left
encoded, headers lowercased with repeats joined by commas, query parameters decoded with
repeats joined by commas, and the verified claims in ``requestContext.authorizer.jwt.claims``.
Claims are passed as the token holds them (a roles list stays a list; API Gateway would
flatten it to ``"[a b]"``, which the routes read too).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote


@dataclass(frozen=True)
class LocalContext:
    """What a handler reads of a Lambda context: the request id it quotes in a 500."""

    aws_request_id: str
    function_name: str = "citewell-serve"
    memory_limit_in_mb: int = 0
    invoked_function_arn: str = "local"


def build_event(scope: Mapping[str, Any], body: bytes, claims: dict[str, Any], request_id: str, host: str) -> dict[str, Any]:
    """``host`` is the server's configured name (API Gateway's domain), never the client's Host header."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers") or []:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]},{value}" if name in headers else value
    headers["x-forwarded-proto"] = scope.get("scheme", "http")  # what API Gateway sets; never the client's
    query_string = (scope.get("query_string") or b"").decode("latin-1")
    parameters: dict[str, str] = {}
    for name, value in parse_qsl(query_string, keep_blank_values=True):
        parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
    raw_path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    now = time.time()
    client = scope.get("client") or ("127.0.0.1", 0)
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": query_string,
        "headers": headers,
        "queryStringParameters": parameters or None,
        "requestContext": {
            "accountId": "local",
            "apiId": "citewell-serve",
            "authorizer": {"jwt": {"claims": claims, "scopes": []}},
            "domainName": host,
            "domainPrefix": host.split(".")[0],
            "http": {"method": scope["method"], "path": unquote(raw_path), "protocol": f"HTTP/{scope.get('http_version', '1.1')}",
                     "sourceIp": client[0], "userAgent": headers.get("user-agent", "")},
            "requestId": request_id,
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "body": text if body else None,
        "isBase64Encoded": encoded,
    }


def response_parts(reply: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
    """Status, body bytes and headers of a payload 2.0 response."""
    body = reply.get("body") or ""
    data = base64.b64decode(body) if reply.get("isBase64Encoded") else str(body).encode("utf-8")
    headers = {str(k): str(v) for k, v in (reply.get("headers") or {}).items()}
    for name, values in (reply.get("multiValueHeaders") or {}).items():
        headers[str(name)] = ", ".join(str(v) for v in values)
    return int(reply.get("statusCode", 200)), data, headers
