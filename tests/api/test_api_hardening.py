"""The HTTP API under hostile or clumsy input: every refusal is a 4xx JSON error written for
people, ids with '/' are reachable however the path spells them, and only writers change
documents. Real API Gateway HTTP API events go to the real handler, against moto and
osmem-server (the ``aws`` fixture of test_aws_chain)."""

from __future__ import annotations

import base64
import json
import logging
from urllib.parse import quote

import pytest

from citewell.lambdas.settings import AwsSettings, services_from_env
from tests.aws.test_aws_chain import EVENTS, HANDBOOK, LambdaContext, api, aws, knn_proxy, load_handler, pump, upload  # noqa: F401

WRITER = "[staff citewell:write]"
READER = "[staff]"


def call(method: str, path: str, body: str | None = None, *, base64_encoded: bool = False, groups: str = WRITER,
         query: dict[str, str] | None = None, content_type: str = "application/json") -> tuple[int, dict]:
    """Like ``api()``, but the body and rawPath go out exactly as given (API Gateway does not decode rawPath)."""
    event = json.loads((EVENTS / "api_request.json").read_text())
    event.update(routeKey=f"{method} {path}", rawPath=path, body=body, isBase64Encoded=base64_encoded,
                 queryStringParameters=query, rawQueryString="&".join(f"{k}={quote(v)}" for k, v in (query or {}).items()))
    event["headers"]["content-type"] = content_type
    event["requestContext"]["http"].update(method=method, path=path)
    event["requestContext"]["routeKey"] = f"{method} {path}"
    event["requestContext"]["authorizer"]["jwt"]["claims"]["cognito:groups"] = groups
    reply = load_handler("api")(event, LambdaContext())
    return reply["statusCode"], json.loads(reply["body"]) if reply.get("body") else {}


def refused(reply: tuple[int, dict], status: int) -> str:
    """The reply is ``status`` with the one error shape and a message, and no Python in it."""
    code, body = reply
    assert code == status, body
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"] and "Traceback" not in body["error"]["message"], body
    return body["error"]["message"]


@pytest.fixture
def handbook(aws):
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    return aws


@pytest.mark.parametrize("section", ["²", "1" * 5000, "1", "1234567-0123456789abcdef", "²-0123456789abcdef",
                                     "1-0123456789ABCDEF", "1-0123456789abcde", " 1-0123456789abcdef"])
def test_a_section_must_be_a_section_id(handbook, section):
    assert "section id" in refused(call("GET", "/documents/handbook.md", query={"section": section}), 400)


def _section(path: list[str]) -> str:
    status, found = call("POST", "/search", json.dumps({"question": "sickness shift", "k": 10}))
    assert status == 200
    return next(h["section_id"] for h in found["hits"] if h["section_path"] == path)


def test_a_section_is_read_by_its_id_within_the_budget(handbook, monkeypatch):
    sick = _section(["Sick leave"])
    status, found = call("GET", "/documents/handbook.md", query={"section": sick})
    assert status == 200 and found["text"].startswith("Sick leave") and "27 days" not in found["text"]
    assert found["section"]["section_id"] == sick and found["revision"] == found["document"]["active_revision"]
    assert found["chars"] == len(found["text"]) and found["budget"] == 6000
    # A role the document does not allow, another tenant's caller: the same 404 as for no document.
    assert refused(call("GET", "/documents/handbook.md", groups="[hr]", query={"section": sick}), 404) == (
        refused(call("GET", "/documents/nowhere.md", groups="[hr]", query={"section": sick}), 404).replace("nowhere", "handbook"))
    status, other = api("GET", "/documents/handbook.md", tenant="bluefen", groups="[staff]", query={"section": sick})
    assert status == 404 and "no such document" in other["error"]["message"]
    assert "names one revision" in refused(call("GET", "/documents/handbook.md", query={"section": "999999-0123456789abcdef"}), 404)
    monkeypatch.setenv("CITEWELL_EVIDENCE_CHARS", "500")
    upload(handbook, "handbook.md", HANDBOOK + b"\n# Long\n\n" + b"The quay opens at six. " * 40)
    pump(handbook)
    status, found = call("POST", "/search", json.dumps({"question": "quay opens at six", "k": 10}))
    long = next(h["section_id"] for h in found["hits"] if h["section_path"] == ["Long"])
    message = refused(call("GET", "/documents/handbook.md", query={"section": long}), 400)
    assert "over the budget of 500" in message
    paged = refused(call("GET", "/documents/handbook.md", query={"section": sick, "limit": "10"}), 400)
    assert "without cursor or limit" in paged


@pytest.mark.parametrize("body", [
    "[" * 5000 + "]" * 5000,  # json.loads raises RecursionError
    '{"question": "leave", "k": ' + "[" * 900 + "]" * 900 + "}",  # parses here, not deeper in the stack
    '{"question": "leave", "k": ' + "1" * 5000 + "}",  # int() refuses over 4,300 digits
])
def test_a_body_that_cannot_be_read_is_400(aws, body):
    refused(call("POST", "/search", body), 400)


def test_a_base64_body_must_be_base64_of_utf8(aws):
    assert "base64" in refused(call("POST", "/search", "not base64 at all!", base64_encoded=True), 400)
    refused(call("POST", "/search", base64.b64encode(b'{"question": "\xff"}').decode(), base64_encoded=True), 400)
    body = base64.b64encode(json.dumps({"question": "annual leave"}).encode()).decode()
    status, found = call("POST", "/search", body, base64_encoded=True)
    assert status == 200 and found["hits"] == []


def test_a_body_over_64_kib_is_413(aws):
    padded = json.dumps({"question": "annual leave"}) + " " * (64 * 1024)
    assert "64 KiB" in refused(call("POST", "/search", padded), 413)
    new = {"document_id": "big.md", "allowed_roles": ["staff"], "title": "t" * 500_000}
    refused(call("POST", "/documents", json.dumps(new)), 413)  # a 500 KB title cannot fit in a body
    assert api("GET", "/documents") == (200, {"documents": [], "next": None})


def test_a_document_id_too_long_for_a_key_is_400_in_the_body_and_the_path(aws):
    emoji = "\N{GRINNING FACE}" * 512  # 512 characters, 2,048 bytes of UTF-8
    assert "512" in refused(call("POST", "/documents", json.dumps({"document_id": emoji, "allowed_roles": ["staff"]})), 400)
    assert "512" in refused(call("GET", f"/documents/{quote(emoji, safe='')}"), 400)
    assert "512" in refused(call("DELETE", f"/documents/{quote(emoji, safe='')}"), 400)
    refused(call("GET", "/documents/a%23b"), 400)  # '#' is outside the id grammar however it is spelled
    refused(call("GET", "/documents/%FF.md"), 400)  # not UTF-8


@pytest.mark.parametrize(("field", "value"), [
    ("title", "t" * 513), ("source", "s" * 2049), ("filename", "f" * 513), ("locale", "l" * 36),
    ("allowed_roles", [f"r{i}" for i in range(33)]), ("allowed_roles", [" staff"]), ("allowed_roles", ["a" * 129]),
])
def test_new_document_fields_are_bounded_422(aws, field, value):
    new = {"document_id": "bounded.md", "allowed_roles": ["staff"], field: value}
    assert field in refused(call("POST", "/documents", json.dumps(new)), 422)
    assert api("GET", "/documents") == (200, {"documents": [], "next": None})


def test_malformed_and_unsupported_bodies_have_the_error_shape(aws):
    assert "question" in refused(call("POST", "/search", json.dumps({"question": ""})), 422)
    refused(call("POST", "/search", "{not json"), 422)
    refused(call("POST", "/search", "question=leave", content_type="text/plain"), 415)
    refused(call("GET", "/nowhere"), 404)


def test_an_unexpected_failure_is_a_json_500_that_is_logged(aws, caplog):
    logging.getLogger("citewell-api").addHandler(caplog.handler)
    api("GET", "/documents")  # the services are built
    services_from_env()[1].documents.table.delete()  # the table is gone: nothing the caller did
    try:
        message = refused(call("GET", "/documents"), 500)
    finally:
        logging.getLogger("citewell-api").removeHandler(caplog.handler)
    assert "ResourceNotFound" not in message and LambdaContext.aws_request_id in message  # to quote when reporting it
    assert any(r.exc_info and "ResourceNotFoundException" in str(r.exc_info[1]) for r in caplog.records)


def test_ids_with_a_slash_are_reachable_encoded_or_as_segments(aws):
    upload(aws, "guide/intro.md", HANDBOOK)
    upload(aws, "guide/setup.md", HANDBOOK)
    pump(aws)
    for path in ("/documents/guide%2Fintro.md", "/documents/guide/intro.md", "/documents/guide%2fintro.md"):
        status, one = call("GET", path)
        assert status == 200 and one["document"]["document_id"] == "guide/intro.md", (path, one)
    hits = call("POST", "/search", json.dumps({"question": "sickness shift", "k": 10}))[1]["hits"]
    sick = next(h["section_id"] for h in hits if h["document_id"] == "guide/intro.md" and h["section_path"] == ["Sick leave"])
    assert call("GET", "/documents/guide/intro.md", query={"section": sick})[1]["text"].startswith("Sick leave")
    assert call("DELETE", "/documents/guide%2Fintro.md")[0] == 200
    assert call("DELETE", "/documents/guide/setup.md")[0] == 200
    refused(call("GET", "/documents/guide/intro.md"), 404)
    refused(call("GET", "/documents/guide%2Fsetup.md"), 404)
    assert api("GET", "/documents") == (200, {"documents": [], "next": None})
    refused(call("GET", "/documents/guide/"), 400)  # an empty part is not an id


def test_readers_may_not_create_or_delete(handbook):
    new = json.dumps({"document_id": "notes.md", "allowed_roles": ["staff"]})
    assert "citewell:write" in refused(call("POST", "/documents", new, groups=READER), 403)
    assert "citewell:write" in refused(call("DELETE", "/documents/handbook.md", groups=READER), 403)
    assert call("GET", "/documents/handbook.md", groups=READER)[0] == 200  # reading needs no write role
    assert [d["document_id"] for d in api("GET", "/documents", groups=READER)[1]["documents"]] == ["handbook.md"]


def test_a_writer_still_needs_to_see_a_document_to_replace_or_delete_it(handbook):
    stranger = "[hr citewell:write]"
    refused(call("DELETE", "/documents/handbook.md", groups=stranger), 404)  # the same as a missing one
    refused(call("DELETE", "/documents/absent.md", groups=stranger), 404)
    replace = json.dumps({"document_id": "handbook.md", "allowed_roles": ["hr"]})
    refused(call("POST", "/documents", replace, groups=stranger), 403)
    refused(call("POST", "/documents", json.dumps({"document_id": "x.md", "allowed_roles": ["staff"]}), groups=stranger), 403)
    assert call("GET", "/documents/handbook.md")[1]["document"]["status"] == "published"


def test_the_write_role_is_configured(handbook, monkeypatch):
    assert AwsSettings.from_env().write_role == "citewell:write"
    monkeypatch.setenv("CITEWELL_WRITE_ROLE", "editors")
    services_from_env.cache_clear()
    refused(call("DELETE", "/documents/handbook.md", groups=WRITER), 403)
    assert call("DELETE", "/documents/handbook.md", groups="[staff editors]")[0] == 200


def test_the_stack_routes_ids_of_several_segments_to_the_function(tmp_path_factory):
    pytest.importorskip("aws_cdk")
    from tests.project.test_infra import synth

    routes = synth(tmp_path_factory).find_resources("AWS::ApiGatewayV2::Route")
    keys = {r["Properties"]["RouteKey"] for r in routes.values()}
    assert {"GET /documents/{id+}", "DELETE /documents/{id+}"} <= keys and "GET /documents/{id}" not in keys


def test_a_misconfigured_function_answers_500_without_naming_its_settings_to_the_caller(handbook, monkeypatch):
    monkeypatch.setenv("CITEWELL_MAX_BYTES", "fifty megabytes")
    services_from_env.cache_clear()
    status, body = call("GET", "/documents/handbook.md")
    assert status == 500 and body["error"]["code"] == "misconfigured"
    assert "CITEWELL" not in json.dumps(body) and "fifty" not in json.dumps(body)
    monkeypatch.delenv("CITEWELL_MAX_BYTES")
    services_from_env.cache_clear()
    assert call("GET", "/documents/handbook.md")[0] == 200
