"""The AWS ingestion chain and HTTP API, for real against moto (S3, SQS, DynamoDB) and
osmem-server (OpenSearch over HTTP) behind a kNN-capable stand-in (test_aws_knn), so both
lanes run. An upload goes through the presigned POST the API returns and produces an S3
notification on the moto queue; the test hands the real messages to each stage's handler
in turn until the document is published, then queries through the API handler with
authorizer-shaped events. Every AWS call each function makes is recorded under its name and,
when the test ends, checked against the role the stack synthesizes for that function
(tests.aws_roles); test_aws_iam also walks every path and finds what is granted but unused.
S3 and DynamoDB answer as strictly as AWS where moto is kinder (tests.strict_aws): a read of a
missing key is a 403 for a role that may not list the bucket, and keys and items are held to
DynamoDB's sizes."""

from __future__ import annotations

import copy
import importlib.util
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

import boto3
import pytest
import requests
from moto import mock_aws

from citewell.keys import raw_key
from citewell.lambdas.settings import services_from_env
from citewell.metadata.dynamodb import TABLE_DEFINITION
from citewell.models.values import MAX_DOCUMENT_ID_BYTES, validate_document_id
from tests.aws.test_aws_knn import KnnProxy, knn_proxy  # noqa: F401
from tests.aws_roles import refusals
from tests.contract.test_contract_metadata import citations
from tests.strict_aws import RECORDED, FunctionLimits, StrictAws, Usage, invocation

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
STAGES = {"raw/": "parse", "parsed/": "chunk", "chunks/": "embed", "embedded/": "publish"}
HANDBOOK = b"# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n\n# Sick leave\n\nReport sickness before your shift.\n"


@dataclass
class LambdaContext:
    function_name: str = "citewell-test"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:citewell-test"
    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"
    remaining_ms: int = 30_000  # the API function's timeout

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class AuditContext(LambdaContext):
    remaining_ms: int = 900_000  # the audit function's timeout


class Calls:
    """Every AWS API call made through boto3, with the function that made it ("test" for the test itself)."""

    def __init__(self, proxy: KnnProxy) -> None:
        self.proxy = proxy
        self.made: list[tuple[str, str, str, dict]] = []  # (caller, service, operation, params)
        self.containers = False  # True: each function gets its own container (services built anew on a switch)
        self.last = ""
        self.pending: list[tuple[str, str, Callable[[], object]]] = []  # see interject
        self.limits: dict[str, FunctionLimits] = {}  # each function's memory and timeout, as the stack sets them
        self.usage: dict[str, Usage] = {}  # what each function's last call took

    def interject(self, caller: str, operation: str, action: Callable[[], object]) -> None:
        """Run ``action`` once, just before ``caller`` next makes ``operation``: what another
        request does while a function runs, at the AWS call it would land between."""
        self.pending.append((caller, operation, action))

    @property
    def caller(self) -> str:
        return self.proxy.caller

    def record(self, params: dict, model, context: dict | None = None, **_: object) -> None:
        entry = dict(params)
        self.made.append((self.caller, model.service_model.endpoint_prefix, model.name, entry))
        if context is not None:
            context[RECORDED] = entry  # tests.strict_aws notes on it what S3 had to check
        for n, (caller, operation, action) in enumerate(self.pending):
            if (caller, operation) == (self.caller, model.name):
                del self.pending[n]
                action()
                return

    def all(self) -> list[tuple[str, str, str, dict]]:
        """Every call so far, the domain's HTTP requests as ``es`` calls of (method, path)."""
        return self.made + [(caller, "es", method, {"path": path}) for caller, method, path in self.proxy.calls]


CALLS: list[Calls] = []  # the recorder of the running test, for load_handler


def load_handler(function: str):
    spec = importlib.util.spec_from_file_location(f"functions_{function}", ROOT / "functions" / function / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def as_function(event, context):
        """Run as ``function``, held to Lambda's payload limits and to its memory and timeout:
        its AWS and OpenSearch calls are recorded under its name."""
        if not CALLS:
            return invocation(module.lambda_handler, event, context)
        calls = CALLS[-1]
        if calls.containers and calls.last != function:
            services_from_env.cache_clear()  # what one container cached, another has to look up itself
        calls.last = function
        previous, calls.proxy.caller = calls.proxy.caller, function
        calls.usage[function] = Usage()
        try:
            return invocation(module.lambda_handler, event, context, calls.limits.get(function), calls.usage[function])
        finally:
            calls.proxy.caller = previous

    return as_function


@pytest.fixture
def aws(monkeypatch, knn_proxy, function_roles, function_limits):
    env = {
        "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
        "CITEWELL_BUCKET": "citewell-documents", "CITEWELL_TABLE": "citewell-metadata",
        "CITEWELL_OPENSEARCH_URL": knn_proxy.url, "CITEWELL_EMBEDDER": "minilm",
        "POWERTOOLS_TRACE_DISABLED": "1", "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CITEWELL_LANES", raising=False)
    calls = Calls(knn_proxy)
    calls.limits = function_limits
    CALLS.append(calls)
    with mock_aws():
        boto3.setup_default_session()  # mock_aws starts from a fresh default session: record its calls
        boto3.DEFAULT_SESSION.events.register("before-parameter-build", calls.record)
        StrictAws(function_roles, lambda: calls.caller, boto3.session.Session().client("s3")).install(boto3.DEFAULT_SESSION.events)
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="citewell-documents", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_bucket_versioning(Bucket="citewell-documents", VersioningConfiguration={"Status": "Enabled"})
        boto3.resource("dynamodb").create_table(TableName="citewell-metadata", **TABLE_DEFINITION)
        sqs = boto3.client("sqs")
        queues = {prefix: sqs.create_queue(QueueName=f"citewell-{stage}")["QueueUrl"] for prefix, stage in STAGES.items()}
        s3.put_bucket_notification_configuration(Bucket="citewell-documents", NotificationConfiguration={"QueueConfigurations": [
            {"QueueArn": sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"],
             "Events": ["s3:ObjectCreated:*"], "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": prefix}]}}}
            for prefix, url in queues.items()
        ]})
        fetches = sqs.create_queue(QueueName="citewell-fetch")["QueueUrl"]  # the API queues a URL's upload for the fetch function
        monkeypatch.setenv("CITEWELL_FETCH_QUEUE_URL", fetches)  # as the stack sets it on the API
        services_from_env.cache_clear()
        yield {"s3": s3, "sqs": sqs, "queues": queues, "handlers": {p: load_handler(s) for p, s in STAGES.items()},
               "calls": calls, "proxy": knn_proxy, "fetches": fetches}
        services_from_env.cache_clear()
    CALLS.remove(calls)
    boto3.DEFAULT_SESSION = None
    refused = refusals(function_roles, calls.all())
    assert not refused, "refused by the synthesized role:\n" + "\n".join(refused)


def sqs_event(messages: list[dict]) -> dict:
    template = json.loads((EVENTS / "sqs_s3_object_created.json").read_text())["Records"][0]
    records = []
    for message in messages:
        record = copy.deepcopy(template)
        record.update(messageId=message["MessageId"], receiptHandle=message["ReceiptHandle"], body=message["Body"])
        records.append(record)
    return {"Records": records}


def pump(aws, replay: list | None = None) -> list[dict]:
    """Deliver every queued notification to its stage until all queues are empty; returns what was delivered."""
    delivered = []
    while True:
        moved = False
        for prefix, url in aws["queues"].items():
            messages = aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                continue
            moved = True
            event = sqs_event(messages)
            reply = aws["handlers"][prefix](event, LambdaContext())
            assert reply == {"batchItemFailures": []}, reply
            delivered.append((prefix, event))
            for message in messages:
                aws["sqs"].delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        if not moved:
            return delivered


def deliver(aws, prefix: str, event: dict) -> None:
    """Hand one batch to a stage's function, which must acknowledge all of it."""
    assert aws["handlers"][prefix](event, LambdaContext()) == {"batchItemFailures": []}


def step(aws, prefix: str) -> list[dict]:
    """Deliver what one stage's queue holds now, and only that; returns the batches delivered."""
    url, delivered = aws["queues"][prefix], []
    while messages := aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        delivered.append(sqs_event(messages))
        deliver(aws, prefix, delivered[-1])
        for message in messages:
            aws["sqs"].delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return delivered


def fetch_queued(aws) -> list[dict]:
    """Hand what the API queued for the fetch function to it, as SQS does; returns the events sent."""
    handler, sent = load_handler("fetch"), []
    while messages := aws["sqs"].receive_message(QueueUrl=aws["fetches"], MaxNumberOfMessages=10).get("Messages", []):
        sent.append(sqs_event(messages))
        assert handler(sent[-1], LambdaContext()) == {"batchItemFailures": []}
        for message in messages:
            aws["sqs"].delete_message(QueueUrl=aws["fetches"], ReceiptHandle=message["ReceiptHandle"])
    return sent


def id_token_claims(tenant: str | None = "northpier", groups: str = "[staff citewell:write]") -> dict:
    """The claims of a Cognito ID token exactly as the HTTP API's JWT authorizer hands them on:
    every value a string, a list as "[a b]", the app client in ``aud``."""
    claims = {
        "sub": "6a1f3c2e-0d4b-4b8e-9f2a-1c3d5e7f9a0b", "email_verified": "true",
        "iss": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123", "cognito:username": "6a1f3c2e-0d4b-4b8e-9f2a-1c3d5e7f9a0b",
        "origin_jti": "1f0e9d8c-7b6a-5948-3726-150493827160", "aud": "4q2lh7e1ac3s9vb0nm6kd8ufit",
        "event_id": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "token_use": "id", "auth_time": "1764471000",
        "exp": "Sun Nov 30 04:00:00 UTC 2026", "iat": "Sun Nov 30 03:00:00 UTC 2026", "jti": "9e8d7c6b-5a49-3827-1605-f4e3d2c1b0a9",
        "email": "staff@northpier.example", "cognito:groups": groups,
    }
    if tenant is not None:
        claims["custom:tenant"] = tenant
    return claims


def api(method: str, path: str, body: dict | None = None, tenant: str | None = "northpier", groups: str = "[staff citewell:write]",
        query: dict | None = None, claims: dict | None = None, context: LambdaContext | None = None) -> tuple[int, dict]:
    event = json.loads((EVENTS / "api_request.json").read_text())
    event["routeKey"] = f"{method} {path}"
    event["rawPath"] = path
    event["requestContext"]["http"].update(method=method, path=path)
    event["requestContext"]["routeKey"] = f"{method} {path}"
    event["body"] = json.dumps(body) if body is not None else None
    event["queryStringParameters"] = query
    event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in (query or {}).items())
    event["requestContext"]["authorizer"]["jwt"]["claims"] = claims if claims is not None else id_token_claims(tenant, groups)
    reply = load_handler("api")(event, context or LambdaContext())
    return reply["statusCode"], json.loads(reply["body"]) if reply.get("body") else {}


def test_a_query_whose_model_stalls_is_answered_extractively_before_the_invocation_ends(aws, monkeypatch):
    """API Gateway gives up at 30 s, so a query's model calls (the question's expansion, the
    answer) share one deadline, bounded by what the invocation has left: against a model that
    never answers in time, ``/query`` gives the extractive answer, said so, before that deadline."""
    from citewell.deadline import FALLBACK_RESERVE_S, INVOCATION_MARGIN_S
    from tests import fake_model_service
    from tests.fake_model_service import Reply

    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    service, server = fake_model_service.start()
    service.respond = lambda body: Reply(delay=8.0, body=service.chat("late").body)
    for name, value in {"CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": service.url,
                        "CITEWELL_OPENAI_MODEL": "stalls"}.items():
        monkeypatch.setenv(name, value)
    seconds = FALLBACK_RESERVE_S + 3.0  # what the request may take: the invocation's time less its margin
    try:
        started = time.monotonic()
        status, answer = api("POST", "/query", {"question": "How many days of paid annual leave do full-time staff receive?"},
                             context=LambdaContext(remaining_ms=int((seconds + INVOCATION_MARGIN_S) * 1000)))
        took = time.monotonic() - started
    finally:
        server.shutdown()
    assert status == 200 and "27 days" in answer["answer"] and not answer["refused"], answer
    assert any("in time" in note and "answering extractively" in note for note in answer["degraded"]), answer["degraded"]
    assert took < seconds, took
    assert service.requests  # the model was asked, and given up on


def assert_no_residue(aws, answer_id: str) -> None:
    """What both deletion paths must leave: nothing of the document in any store."""
    services = services_from_env()[1]
    assert services.documents.get_document("northpier", "handbook.md") is None
    assert services.index.inventory() == [] and services.chunks.chunk_inventory() == []
    assert citations(services.answers) == [] and services.answer_cache.cache_inventory() == []
    assert services.embeddings.embedding_identities() == {}  # chunk and sentence embeddings of its text
    versions = aws["s3"].list_object_versions(Bucket="citewell-documents")
    assert versions.get("Versions", []) == [] and versions.get("DeleteMarkers", []) == []
    assert api("POST", "/search", {"question": "annual leave days"})[1]["hits"] == []
    record = api("GET", f"/answers/{answer_id}/citations")[1]
    assert record["source_deleted"] and record["answer"] is None and record["citations"][0]["deleted"]
    audit = load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), AuditContext())
    assert audit == {"ok": True, "findings": 0, "repaired": 0}


def post_upload(created: dict, data: bytes) -> requests.Response:
    """What a browser or ``curl -F`` does with the form ``POST /documents`` returned."""
    form = created["upload"]
    return requests.post(form["url"], data=form["fields"], files={"file": ("upload", data)}, timeout=30)


def upload(aws, document_id: str, data: bytes, roles=("staff",), tenant: str = "northpier") -> str:
    """Register an upload through the API and send its bytes with the presigned POST; returns the key."""
    status, created = api("POST", "/documents", {"document_id": document_id, "allowed_roles": list(roles), "filename": document_id},
                          tenant=tenant)
    assert status == 201 and created["upload"]["url"] == "https://citewell-documents.s3.eu-west-1.amazonaws.com/", created
    key = raw_key(tenant, document_id, created["upload_id"])
    assert created["upload"]["fields"]["key"] == key
    aws.setdefault("forms", {})[key] = created
    resend(aws, key, data)
    return key


def resend(aws, key: str, data: bytes) -> None:
    """Send the form ``upload`` got for ``key`` (again: S3 takes a presigned POST until it expires)."""
    assert post_upload(aws["forms"][key], data).status_code in (200, 204)
    aws["calls"].made.append(("api", "s3", "PutObject", {"Bucket": "citewell-documents", "Key": key}))  # signed by the api's role


def test_upload_to_publish_to_search_answer_and_delete(aws):
    upload(aws, "handbook.md", HANDBOOK)
    delivered = pump(aws)
    assert [prefix for prefix, _ in delivered] == ["raw/", "parsed/", "chunks/", "embedded/"]

    status, found = api("POST", "/search", {"question": "annual leave days", "k": 5})
    assert status == 200 and found["hits"][0]["document_id"] == "handbook.md" and "27 days" in found["hits"][0]["text"]
    assert found["degraded"] == [] and all(h["lanes"]["bm25"] and h["lanes"]["vector"] for h in found["hits"]), found
    assert api("POST", "/search", {"question": "annual leave"}, tenant="bluefen")[1]["hits"] == []
    assert api("POST", "/search", {"question": "annual leave"}, groups="[hr]")[1]["hits"] == []
    assert api("POST", "/search", {"question": "annual leave"}, tenant=None)[0] == 403
    assert api("POST", "/search", {"question": "annual leave"}, groups="")[0] == 403

    status, answer = api("POST", "/query", {"question": "How many days of paid annual leave do full-time staff receive?"})
    assert status == 200 and not answer["refused"] and "27 days" in answer["answer"]
    status, record = api("GET", f"/answers/{answer['answer_id']}/citations")
    assert status == 200 and record["citations"][0]["document_id"] == "handbook.md"
    assert api("GET", f"/answers/{answer['answer_id']}/citations", tenant="bluefen")[0] == 404

    status, listed = api("GET", "/documents")
    assert [d["document_id"] for d in listed["documents"]] == ["handbook.md"] and listed["documents"][0]["status"] == "published"
    sick = next(h["section_id"] for h in api("POST", "/search", {"question": "report sickness"})[1]["hits"]
                if h["section_path"] == ["Sick leave"])
    status, one = api("GET", "/documents/handbook.md", query={"section": sick})
    assert status == 200 and one["text"].startswith("Sick leave") and one["revision"] == one["document"]["active_revision"]

    # S3 delivers at least once: the same notifications again change nothing.
    services = services_from_env()[1]
    revision = services.documents.get_document("northpier", "handbook.md").active_revision
    for prefix, event in delivered[:3]:
        assert aws["handlers"][prefix](event, LambdaContext()) == {"batchItemFailures": []}
    pump(aws)
    assert services.index.count("northpier", "handbook.md", revision) == 2
    assert services.documents.get_document("northpier", "handbook.md").active_revision == revision

    aws["proxy"].calls.clear()
    status, removed = api("DELETE", "/documents/handbook.md")
    assert status == 200 and removed["removed"]["documents"] == 1 and removed["removed"]["index_chunks"] == 2
    assert not [path for _, _, path in aws["proxy"].calls if "_forcemerge" in path]  # a delete never waits on a merge
    assert_no_residue(aws, answer["answer_id"])
    assert ("audit", "POST", "/citewell-chunks/_forcemerge") in aws["proxy"].calls  # the scheduled audit asks for it


def test_bad_files_and_bad_requests_are_4xx_and_recorded(aws):
    upload(aws, "scan.pdf", b"this is not a pdf")
    pump(aws)
    status, one = api("GET", "/documents/scan.pdf")
    assert status == 200 and one["document"]["status"] == "failed" and one["document"]["error"]["code"] == "type_mismatch"
    assert api("POST", "/documents", {"document_id": "x.md", "allowed_roles": ["hr"]})[0] == 403  # not a role the caller holds
    assert api("POST", "/documents", {"document_id": "bad#id", "allowed_roles": ["staff"]})[0] == 400
    assert api("POST", "/documents", {"allowed_roles": ["staff"]})[0] == 422  # the request model says what is missing
    assert api("POST", "/search", {"question": ""})[0] == 422
    assert api("GET", "/documents/absent.md")[0] == 404
    assert api("DELETE", "/documents/absent.md")[0] == 404
    assert api("GET", "/documents/scan.pdf", query={"section": "x"})[0] == 400


def test_the_parse_lambda_reads_a_gzipped_man_page_and_fails_a_cut_off_gzip_alone(aws):
    """The Lambda parse stage shares the CLI's reader: a page as /usr/share/man holds it is published
    under its own id; a gzip cut short is ``corrupt_file``."""
    from tests.parsers.test_gzipped_files import MAN_PAGE, gz

    upload(aws, "man/man1/widget.1.gz", gz(MAN_PAGE))
    upload(aws, "doc/widget/NEWS.gz", gz(MAN_PAGE)[:-40])
    pump(aws)
    status, page = api("GET", "/documents/man/man1/widget.1.gz")
    assert status == 200 and page["document"]["status"] == "published"
    assert page["document"]["title"] == "widget - frobnicate widgets in a working tree"
    status, news = api("GET", "/documents/doc/widget/NEWS.gz")
    assert status == 200 and news["document"]["status"] == "failed" and news["document"]["error"]["code"] == "corrupt_file"


def test_the_longest_document_id_is_published_found_answered_and_deleted(aws):
    """Every key built from a document id fits its store for the longest valid one (512 bytes, in
    the longest tenant), where its chunk ids become OpenSearch ``_id``s (512 bytes at most) and
    DynamoDB sort keys (1,024)."""
    tenant, document_id = "t" * 64, "handbooks/" + "h" * (MAX_DOCUMENT_ID_BYTES - len("handbooks/.md")) + ".md"
    assert len(document_id.encode()) == MAX_DOCUMENT_ID_BYTES and validate_document_id(document_id)
    upload(aws, document_id, HANDBOOK, tenant=tenant)
    assert [prefix for prefix, _ in pump(aws)] == ["raw/", "parsed/", "chunks/", "embedded/"]
    found = api("POST", "/search", {"question": "annual leave days"}, tenant=tenant)[1]["hits"]
    assert found and {h["document_id"] for h in found} == {document_id} and "27 days" in found[0]["text"]
    status, answer = api("POST", "/query", {"question": "How many days of paid annual leave do full-time staff receive?"}, tenant=tenant)
    assert status == 200 and not answer["refused"] and "27 days" in answer["answer"]
    upload(aws, document_id, HANDBOOK.replace(b"27 days", b"28 days"), tenant=tenant)  # the old revision is purged
    pump(aws)
    assert "28 days" in api("POST", "/search", {"question": "annual leave days"}, tenant=tenant)[1]["hits"][0]["text"]
    assert api("DELETE", f"/documents/{quote(document_id, safe='')}", tenant=tenant)[0] == 200
    services = services_from_env()[1]
    assert services.index.inventory() == [] and services.chunks.chunk_inventory() == []
    assert services.embeddings.embedding_identities() == {}  # no reference to its chunks was left to keep a vector


def removal_event(key: str) -> dict:
    """moto sends no ObjectRemoved notifications: the sample event, for this key, stands in for the one S3 sends."""
    event = json.loads((EVENTS / "sqs_s3_object_removed.json").read_text())
    body = json.loads(event["Records"][0]["body"])
    body["Records"][0]["s3"]["object"]["key"] = quote_plus(key, safe="/")
    event["Records"][0]["body"] = json.dumps(body)
    return event


def test_removing_the_upload_from_s3_deletes_the_document_everywhere(aws):
    key = upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    status, answer = api("POST", "/query", {"question": "How many days of paid annual leave do full-time staff receive?"})
    assert not answer["refused"]
    aws["s3"].delete_object(Bucket="citewell-documents", Key=key)  # a delete marker
    removal = removal_event(key)
    assert load_handler("delete")(removal, LambdaContext()) == {"batchItemFailures": []}
    assert load_handler("delete")(removal, LambdaContext()) == {"batchItemFailures": []}  # delivered twice: a no-op

    assert_no_residue(aws, answer["answer_id"])


def test_a_delete_s3_does_not_finish_is_not_reported_done(aws):
    """DeleteObjects answers 200 with the versions it kept in ``Errors``: the delete raises (the
    API answers 500), the document stays a tombstone that is never served, and a retry finishes."""
    from tests.contract.test_contract_objects import KeptVersions

    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    services = services_from_env()[1]
    KeptVersions(services.objects.client, times=3, code="AccessDenied")  # every try of the first object
    assert api("DELETE", "/documents/handbook.md")[0] == 500
    assert services.documents.get_document("northpier", "handbook.md").status.value == "deleting"
    assert api("POST", "/search", {"question": "annual leave days"})[1]["hits"] == []
    assert aws["s3"].list_object_versions(Bucket="citewell-documents").get("Versions", [])
    assert api("DELETE", "/documents/handbook.md")[0] == 200
    assert services.documents.get_document("northpier", "handbook.md") is None
    assert aws["s3"].list_object_versions(Bucket="citewell-documents").get("Versions", []) == []


def test_the_api_handler_imports_no_parser_model_runtime_or_cdk():
    """The query path's cold start stays small: nothing heavy is imported until it is needed."""
    import subprocess
    import sys

    heavy = ("filetype", "pypdf", "docx", "openpyxl", "selectolax", "markdown_it", "docutils", "onnxruntime", "aws_cdk", "sklearn")
    probe = f"import sys, app; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT / "functions" / "api", capture_output=True, text=True,
                          check=True, env={"PATH": "", "POWERTOOLS_TRACE_DISABLED": "1"})
    assert done.stdout.strip() == "[]"


def test_the_api_has_an_openapi_document():
    from citewell.lambdas.api import openapi_document

    spec = json.loads(openapi_document())
    assert set(spec["paths"]) == {"/documents", "/documents/{document_id}", "/search", "/query", "/answers/{answer_id}/citations",
                                  "/answers/{answer_id}/feedback", "/conversations", "/conversations/{conversation_id}", "/me"}
    body = spec["paths"]["/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["$ref"].endswith("SearchRequest")
    replies = {path: spec["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
               for path, method in (("/search", "post"), ("/query", "post"), ("/answers/{answer_id}/citations", "get"))}
    assert replies == {"/search": "#/components/schemas/SearchResult", "/query": "#/components/schemas/Answer",
                       "/answers/{answer_id}/citations": "#/components/schemas/AnswerRecord"}  # what a client can generate types from
    hit = spec["components"]["schemas"]["SearchHit"]["properties"]
    assert {"chunk_id", "document_id", "revision", "section_path", "text", "lanes"} <= set(hit)
