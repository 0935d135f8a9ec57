"""One request table, both transports: the Lambda handler with API Gateway events (moto, and
osmem-server behind the kNN stand-in) and ``citewell serve`` over real HTTP on 127.0.0.1. The
same corpus goes in through each one's own upload path; every request then gets the same
status and, once values that are random per run (ids, revisions, times, scores) are masked,
the same body. Search hits are compared as a set: the two BM25 engines may order ties apart."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import jwt
import pytest

from citewell.serve.tokens import LOCAL_AUDIENCE, LOCAL_ISSUER, home_key
from tests.aws.test_aws_chain import EVENTS, LambdaContext, aws, id_token_claims, knn_proxy, load_handler, post_upload, pump  # noqa: F401
from tests.serving import CLEAN_EXIT, CORPUS, WRITE, Served, load_corpus

STAFF = ("northpier", ("staff",))
SUPPORT = ("northpier", ("support", "engineering"))
HR_WRITER = ("northpier", ("hr", "staff", WRITE))
BLUEFEN = ("bluefen", ("staff",))
NO_ROLES = ("northpier", ())
ACCESS_TOKEN = "access token"  # a Cognito access token: no tenant claim
LEAVE = "How many days of annual leave do full-time staff get?"
JSON = "application/json"

# (name, identity, method, path, body: dict | str | None, content type)
TABLE: list[tuple[str, Any, str, str, Any, str]] = [
    ("me as staff", STAFF, "GET", "/me", None, JSON),
    ("me as a writer", HR_WRITER, "GET", "/me", None, JSON),
    ("me without roles", NO_ROLES, "GET", "/me", None, JSON),
    ("me with an access token", ACCESS_TOKEN, "GET", "/me", None, JSON),
    ("list as staff", STAFF, "GET", "/documents", None, JSON),
    ("list as support", SUPPORT, "GET", "/documents", None, JSON),
    ("list as bluefen", BLUEFEN, "GET", "/documents", None, JSON),
    ("one document", STAFF, "GET", "/documents/handbook.md", None, JSON),
    ("an id with a slash, encoded", SUPPORT, "GET", "/documents/engineering%2Ferrors.md", None, JSON),
    ("an id with a slash, as segments", SUPPORT, "GET", "/documents/engineering/errors.md", None, JSON),
    ("a role's document as staff", STAFF, "GET", "/documents/engineering/errors.md", None, JSON),
    ("another tenant's document", BLUEFEN, "GET", "/documents/hr%2Fsalaries.md", None, JSON),
    ("an id outside the grammar", STAFF, "GET", "/documents/a%23b", None, JSON),
    ("an id that is not UTF-8", STAFF, "GET", "/documents/%FF.md", None, JSON),
    ("search as staff", STAFF, "POST", "/search", {"question": "annual leave days", "k": 10}, JSON),
    ("one section", STAFF, "GET", "/documents/handbook.md?section={section}", None, JSON),
    ("one section of another tenant's", BLUEFEN, "GET", "/documents/handbook.md?section={section}", None, JSON),
    ("a section of no revision", STAFF, "GET", "/documents/handbook.md?section=999999-0123456789abcdef", None, JSON),
    ("a bad section", STAFF, "GET", "/documents/handbook.md?section=%C2%B2", None, JSON),
    ("a section number", STAFF, "GET", "/documents/handbook.md?section=1", None, JSON),
    ("search for a code as support", SUPPORT, "POST", "/search", {"question": "What does error E1027 mean?", "k": 10}, JSON),
    ("search for a code as staff", STAFF, "POST", "/search", {"question": "What does error E1027 mean?", "k": 10}, JSON),
    ("search as bluefen", BLUEFEN, "POST", "/search", {"question": "annual leave days", "k": 10}, JSON),
    ("search with an empty question", STAFF, "POST", "/search", {"question": ""}, JSON),
    ("search with k over 100", STAFF, "POST", "/search", {"question": "leave", "k": 101}, JSON),
    ("search with a long question", STAFF, "POST", "/search", {"question": "leave " * 400}, JSON),
    ("search with a body over 64 KiB", STAFF, "POST", "/search", json.dumps({"question": "leave"}) + " " * 65536, JSON),
    ("search with malformed JSON", STAFF, "POST", "/search", "{not json", JSON),
    ("search with a deep body", STAFF, "POST", "/search", "[" * 5000 + "]" * 5000, JSON),
    ("search as text", STAFF, "POST", "/search", "question=leave", "text/plain"),
    ("search as a form", STAFF, "POST", "/search", "question=leave", "application/x-www-form-urlencoded"),
    ("search as a look-alike type", STAFF, "POST", "/search", {"question": "leave"}, "application/jsonx"),
    ("search as JSON in capitals", STAFF, "POST", "/search", {"question": "annual leave days"}, "Application/JSON; charset=UTF-8"),
    ("search naming a tenant", STAFF, "POST", "/search", {"question": "leave", "tenant": "bluefen"}, JSON),
    ("search with k as text", STAFF, "POST", "/search", {"question": "leave", "k": "3"}, JSON),
    ("search by GET", STAFF, "GET", "/search", None, JSON),
    ("delete the list", HR_WRITER, "DELETE", "/documents", None, JSON),
    ("ask as staff", STAFF, "POST", "/query", {"question": LEAVE}, JSON),
    ("ask what is not written", STAFF, "POST", "/query", {"question": "Who is the chief executive of Northpier?"}, JSON),
    ("ask as bluefen", BLUEFEN, "POST", "/query", {"question": LEAVE}, JSON),
    ("citations as the asker", STAFF, "GET", "/answers/{answer}/citations", None, JSON),
    ("citations as another tenant", BLUEFEN, "GET", "/answers/{answer}/citations", None, JSON),
    ("citations of no answer", STAFF, "GET", "/answers/not-an-id/citations", None, JSON),
    ("create as a reader", STAFF, "POST", "/documents", {"document_id": "n.md", "allowed_roles": ["staff"]}, JSON),
    ("create for a role not held", HR_WRITER, "POST", "/documents", {"document_id": "n.md", "allowed_roles": ["support"]}, JSON),
    ("create outside the id grammar", HR_WRITER, "POST", "/documents", {"document_id": "../n.md", "allowed_roles": ["hr"]}, JSON),
    ("create with a long title", HR_WRITER, "POST", "/documents", {"document_id": "n.md", "allowed_roles": ["hr"], "title": "t" * 513}, JSON),
    ("create", HR_WRITER, "POST", "/documents", {"document_id": "notes/n.md", "allowed_roles": ["hr"]}, JSON),
    ("delete as a reader", STAFF, "DELETE", "/documents/handbook.md", None, JSON),
    ("delete what is not there", HR_WRITER, "DELETE", "/documents/absent.md", None, JSON),
    ("no such route", STAFF, "GET", "/nowhere", None, JSON),
    ("delete", HR_WRITER, "DELETE", "/documents/handbook.md", None, JSON),
    ("the deleted document", HR_WRITER, "GET", "/documents/handbook.md", None, JSON),
    ("citations after the delete", STAFF, "GET", "/answers/{answer}/citations", None, JSON),
    ("search after the delete", STAFF, "POST", "/search", {"question": "annual leave days", "k": 10}, JSON),
]
RANDOM = {"revision", "active_revision", "upload_id", "active_upload", "generation", "created_at", "updated_at", "version",
          "answer_id", "score", "lanes", "content_sha256", "upload_seq", "section_id"}


def masked(value: Any) -> Any:
    """The body with every per-run value replaced by its kind, and hits as a set."""
    if isinstance(value, dict):
        out = {k: ("<set>" if v is not None else None) if k in RANDOM else masked(v) for k, v in value.items()}
        if isinstance(out.get("similarity"), float):  # a cosine in float32 (local) or as the search engine reports it
            out["similarity"] = round(out["similarity"], 5)
        if isinstance(out.get("upload"), dict):
            out["upload"] = {"url": "<form url>", "fields": "<form fields>"}
        if isinstance(out.get("hits"), list):
            out["hits"] = sorted((h for h in out["hits"]), key=lambda h: h["chunk_id"])
            for hit in out["hits"]:
                hit["rank"] = "<rank>"
        if isinstance(out.get("removed"), dict):  # S3 keeps versions, a folder does not: which stores were cleared
            out["removed"] = sorted(k for k, n in out["removed"].items() if n)
        return out
    if isinstance(value, list):
        return [masked(v) for v in value]
    if isinstance(value, str):
        value = re.sub(r"[0-9a-f]{32}", "<id>", value)  # an answer or upload id quoted in a message
        return re.sub(r"\b[0-9]{1,6}-[0-9a-f]{16}\b", "<section>", value)  # a section id (of a revision)
    return value


def _body(body: Any) -> str | None:
    return None if body is None else body if isinstance(body, str) else json.dumps(body)


# -- the Lambda transport --------------------------------------------------------------------------


def lambda_call(identity: Any, method: str, path: str, body: Any, content_type: str) -> tuple[int, Any]:
    raw_path, _, query = path.partition("?")
    event = json.loads((EVENTS / "api_request.json").read_text())
    parameters = dict(p.split("=", 1) for p in query.split("&")) if query else None
    from urllib.parse import unquote

    event.update(routeKey=f"{method} {raw_path}", rawPath=raw_path, body=_body(body), isBase64Encoded=False,
                 rawQueryString=query, queryStringParameters={k: unquote(v) for k, v in parameters.items()} if parameters else None)
    event["headers"]["content-type"] = content_type
    event["requestContext"]["http"].update(method=method, path=raw_path)
    event["requestContext"]["routeKey"] = f"{method} {raw_path}"
    if identity == ACCESS_TOKEN:
        claims = {k: v for k, v in id_token_claims("northpier", "[staff]").items() if k != "custom:tenant"}
        claims["token_use"] = "access"
    else:
        tenant, roles = identity
        claims = id_token_claims(tenant, f"[{' '.join(roles)}]")
    event["requestContext"]["authorizer"]["jwt"]["claims"] = claims
    reply = load_handler("api")(event, LambdaContext())
    return reply["statusCode"], json.loads(reply["body"]) if reply.get("body") else None


def lambda_ingest(aws) -> None:
    for tenant, document_id, roles, data in CORPUS:
        status, created = lambda_call((tenant, (*roles, WRITE)), "POST", "/documents",
                                      {"document_id": document_id, "allowed_roles": list(roles),
                                       "filename": document_id.rsplit("/", 1)[-1]}, JSON)
        assert status == 201, created
        assert post_upload(created, data).status_code in (200, 204)
        pump(aws)


def run_table(call) -> list[tuple[int, Any]]:
    replies, answer, section = [], "none", "none"
    for name, identity, method, path, body, content_type in TABLE:
        status, found = call(identity, method, path.replace("{answer}", answer).replace("{section}", section), body, content_type)
        if path == "/query" and identity == STAFF and isinstance(found, dict) and found.get("answer_id") and answer == "none":
            answer = found["answer_id"]
        if name == "search as staff":  # the section of the handbook's first hit, in chunk order (the engines order ties apart)
            section = min((h["chunk_id"], h["section_id"]) for h in found["hits"] if h["document_id"] == "handbook.md")[1]
        replies.append((status, found))
    return replies


# -- the local transport -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_replies(tmp_path_factory) -> list[tuple[int, Any]]:
    server = Served(tmp_path_factory.mktemp("parity") / "home")
    try:
        load_corpus(server)

        def call(identity: Any, method: str, path: str, body: Any, content_type: str) -> tuple[int, Any]:
            if identity == ACCESS_TOKEN:
                now = int(time.time())
                token = jwt.encode({"iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE, "iat": now, "exp": now + 600,
                                    "token_use": "access", "cognito:groups": ["staff"]}, home_key(server.home), algorithm="ES256")
            else:
                token = server.token(*identity)
            data = _body(body)
            reply = server.client.request(method, path, content=data.encode() if data is not None else None,
                                          headers={"Authorization": f"Bearer {token}", "Content-Type": content_type})
            return reply.status_code, reply.json() if reply.content else None

        return run_table(call)
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()


def test_both_transports_answer_the_table_alike(aws, local_replies):
    lambda_ingest(aws)
    on_lambda = run_table(lambda_call)
    differences = []
    for (name, *_), (status, body), (local_status, local_body) in zip(TABLE, on_lambda, local_replies):
        if (status, masked(body)) != (local_status, masked(local_body)):
            differences.append(f"{name}: lambda {status} {json.dumps(masked(body))[:600]}\n"
                               f"{' ' * len(name)}  serve  {local_status} {json.dumps(masked(local_body))[:600]}")
    assert not differences, "\n".join(differences)
    statuses = {name: status for (name, *_), (status, _) in zip(TABLE, on_lambda)}  # the table walks every kind of reply
    assert {200, 201, 400, 403, 404, 413, 415, 422} <= set(statuses.values())
    assert statuses["citations as the asker"] == 200 and statuses["citations after the delete"] == 200
    assert [statuses[name] for name in ("search as a form", "search as a look-alike type", "search as JSON in capitals",
                                        "search naming a tenant", "search with k as text", "search by GET",
                                        "delete the list")] == [415, 415, 200, 422, 422, 405, 405]
