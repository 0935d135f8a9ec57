"""Every function's calls are allowed by the role the stack synthesizes for it, and it is
granted nothing it does not call.

The chain runs every path a function can take (a typed failure; an upload superseded at each
stage; the same text again; every batch delivered twice, and late, after a newer upload; a
delete before and while each stage runs; search and answers; a replacement; a replayed form;
a web page fetched (its message delivered twice), fetched again unchanged, refused, and deleted
before its fetch; a delete
through the API and a removal from S3; the audit) while every boto3 call and every
OpenSearch request is recorded with the function that made it, S3 and DynamoDB answering as
strictly as AWS (tests.strict_aws). Each call is then turned into the IAM action and resource
AWS checks for it, and evaluated against that function's policies from the synthesized
template (tests.aws_roles). A read of a key S3 found absent counts as a use of s3:ListBucket:
S3 checks it to answer 404 rather than 403."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from urllib.parse import quote

from moto.textract.models import TextractBackend

from benchmarks.loopback_site import Site, serving
from benchmarks.loopback_site import page as web_page
from citewell.lambdas.settings import services_from_env
from tests.aws.test_aws_audit_pages import audit_through_queue
from tests.aws.test_aws_chain import (  # noqa: F401
    EVENTS,
    HANDBOOK,
    AuditContext,
    LambdaContext,
    api,
    aws,
    deliver,
    fetch_queued,
    knn_proxy,
    load_handler,
    pump,
    removal_event,
    resend,
    sqs_event,
    step,
    upload,
)
from tests.aws.test_aws_textract import READ
from tests.aws.test_aws_textract_jobs import receive, resume, textract  # noqa: F401
from tests.aws_roles import BUCKET, granted_actions, needs, refusals
from tests.fake_textract import scanned
from tests.parsers.test_ocr import MEMO, encoded, page

FUNCTIONS = ("parse", "chunk", "embed", "publish", "delete", "api", "audit", "fetch", "ocr")
# What the Lambda service itself does with a function's role (poll its queue, send traces, write
# logs): granted by the stack for the platform, never called by our code.
PLATFORM = {"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage",
            "sqs:GetQueueAttributes", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
# Granted for paths this life does not walk, each with the reason. The test embeds with the
# packaged model, so Bedrock is checked in test_infra (granted only where configured).
BEDROCK = {"bedrock:InvokeModel"}
UNWALKED = {
    "audit": BEDROCK | {
        "s3:PutObject",  # a repair re-ingests a served upload by copying it in raw/ (test_aws_audit_repairs)
        "s3:DeleteObjectVersion", "s3:ListBucketVersions",  # a repair purges objects
        "s3:AbortMultipartUpload",  # a repair aborts an unfinished multipart upload
        "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
        "dynamodb:BatchWriteItem",  # repairs change records
        "es:ESHttpPut",  # a repair re-publishes into a missing index
    },
    "api": BEDROCK | {"s3:AbortMultipartUpload"},  # a delete aborts an unfinished multipart upload of the document
    "delete": {"s3:AbortMultipartUpload"},
    "embed": BEDROCK, "publish": set(), "parse": set(), "chunk": set(), "fetch": set(),
    "ocr": set(),  # it runs parse for an upload whose job ended: the scans walk its paths
}


NOTICE, NEWER = b"# Notice\n\nThe gate closes at nine.\n", b"# Notice\n\nThe gate closes at ten.\n"
STAGE_PREFIXES = ["raw/", "parsed/", "chunks/", "embedded/"]


def superseded_at(aws, document_id: str, stages: list[str]) -> None:
    """An upload goes through ``stages``; then a newer upload of the document makes it stale."""
    upload(aws, document_id, NOTICE)
    for prefix in stages:
        step(aws, prefix)
    upload(aws, document_id, NEWER)
    pump(aws)


def redelivered_late(aws, document_id: str, stages: list[str], late: str) -> None:
    """An upload goes through ``stages``, each batch delivered twice; a newer upload is sent; then
    the batches of stage ``late`` come again: it meets a superseded upload with all it wrote
    (artifacts, chunk records, cached vectors). Then the newer upload goes through."""
    upload(aws, document_id, NOTICE)
    batches = {}
    for prefix in stages:
        batches[prefix] = step(aws, prefix)
        for event in batches[prefix]:
            deliver(aws, prefix, event)  # at least once means sometimes twice
    upload(aws, document_id, NEWER)
    for event in batches[late]:
        deliver(aws, late, event)
    pump(aws)


def deleted_during(aws, document_id: str, stages: list[str], call: tuple[str, str] | None = None) -> None:
    """An upload goes through ``stages``; its document is deleted through the API before the next
    stage runs or, with ``call`` (function, operation), while it runs, just before it makes that call."""
    upload(aws, document_id, NOTICE)
    for prefix in stages:
        step(aws, prefix)

    def delete() -> None:
        assert api("DELETE", f"/documents/{document_id}")[0] == 200

    if call is None:
        delete()
    else:
        aws["calls"].interject(*call, delete)
    pump(aws)
    assert aws["calls"].pending == [], f"{call} was never made"


def web_pages(aws) -> None:
    """Every path of a URL's upload: fetched and published; fetched again, unchanged (a 304: the
    served copy handed on); refused by the guard (the upload failed and cleaned up); and queued
    for a document deleted before the fetch function ran."""
    site = Site(pages={"/rota.html": web_page("Rota", "The rota office publishes shifts four weeks ahead.")})
    with serving(site):
        url = f"{site.url}/rota.html"
        for n in range(2):
            assert api("POST", "/documents", {"url": url, "allowed_roles": ["staff"]})[0] == 202
            sent = fetch_queued(aws)
            if n == 0:
                step(aws, "raw/")
                asked = len(site.requests)
                for event in sent:  # delivered again once parse has the page: done, nothing fetched again
                    assert load_handler("fetch")(event, LambdaContext()) == {"batchItemFailures": []}
                assert len(site.requests) == asked
            pump(aws)
        assert site.requests[-1][1].get("if-none-match")  # the second was conditional
        assert api("POST", "/documents", {"url": f"{site.url}/gone.html", "allowed_roles": ["staff"]})[0] == 202
        assert api("DELETE", f"/documents/{quote(site.url + '/gone.html', safe='')}")[0] == 200
        assert fetch_queued(aws)  # its upload is gone: done, nothing fetched
    assert not any(path == "/gone.html" for path, _ in site.requests)
    assert api("POST", "/documents", {"url": "http://169.254.169.254/latest/meta-data/", "allowed_roles": ["staff"]})[0] == 202
    assert fetch_queued(aws)
    assert pump(aws) == []


def scans(aws, textract) -> None:
    """Scanned PDFs, each read by a Textract job whose completion the OCR function takes: one read
    and published, one Textract fails (recorded failed), one replaced while its job ran (its
    completion removes what is left of it), one whose job id Textract forgot (a new job)."""
    fake = textract["fake"]
    upload(aws, "survey.pdf", scanned(3))
    upload(aws, "poster.pdf", scanned(1, side_points=3600))
    upload(aws, "replaced", scanned(2))
    pump(aws)
    upload(aws, "replaced", NOTICE)
    pump(aws)
    fake.finish()
    assert resume(aws, textract) == [{"batchItemFailures": []}]
    pump(aws)
    assert api("GET", "/documents/survey.pdf")[1]["document"]["status"] == "published"
    assert api("GET", "/documents/poster.pdf")[1]["document"]["status"] == "failed"
    assert api("GET", "/documents/replaced")[1]["document"]["status"] == "published"
    upload(aws, "forgotten.pdf", scanned(2))
    pump(aws)
    (job,) = fake.finish()
    fake.forget(job.job_id)
    resume(aws, textract)
    fake.finish()
    resume(aws, textract)
    pump(aws)
    assert api("GET", "/documents/forgotten.pdf")[1]["document"]["status"] == "published"
    upload(aws, "late", scanned(2))
    pump(aws)
    fake.finish()
    done = receive(aws, textract["inbox"])
    assert load_handler("ocr")(done, LambdaContext()) == {"batchItemFailures": []}
    step(aws, "parsed/")
    step(aws, "chunks/")  # chunked and embedded, not published yet
    upload(aws, "late", NOTICE)  # a newer upload; then the completion comes again, late: it purges the old revision
    assert load_handler("ocr")(done, LambdaContext()) == {"batchItemFailures": []}
    pump(aws)
    assert api("GET", "/documents/late")[1]["document"]["status"] == "published"


def life(aws, textract, monkeypatch) -> None:
    """Everything each function does in a document's life."""
    upload(aws, "scan.pdf", b"this is not a pdf")  # a typed failure is recorded
    pump(aws)
    upload(aws, "memo.png", encoded(page(MEMO, size=(1000, 400)), "PNG"))  # an image: parse sends it to Textract
    pump(aws)
    assert api("GET", "/documents/memo.png")[1]["document"]["status"] == "published"
    scans(aws, textract)
    for n, stages in enumerate([[], ["raw/"], ["raw/", "parsed/"], ["raw/", "parsed/", "chunks/"]]):
        superseded_at(aws, f"notice-{n}.md", stages)  # each stage meets a stale upload
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    upload(aws, "handbook.md", HANDBOOK)  # the same text again: unchanged
    pump(aws)
    assert api("POST", "/search", {"question": "annual leave days"})[0] == 200
    status, answer = api("POST", "/query", {"question": "How many days of paid annual leave do full-time staff receive?"})
    assert status == 200
    assert api("GET", f"/answers/{answer['answer_id']}/citations")[0] == 200
    status, follow = api("POST", "/query", {"question": "and for part-time staff?", "conversation_id": answer["conversation_id"]})
    assert status == 200 and follow["question"]  # a follow-up, rewritten, in the same conversation
    assert api("POST", f"/answers/{answer['answer_id']}/feedback", {"helpful": False, "comment": "not what I asked"})[0] == 200
    assert api("GET", "/conversations")[0] == 200 and api("GET", f"/conversations/{answer['conversation_id']}")[0] == 200
    assert api("GET", "/documents")[0] == 200 and api("GET", "/documents/handbook.md")[0] == 200
    for n, late in enumerate(STAGE_PREFIXES):  # the index is there now: a late batch of a superseded upload purges
        redelivered_late(aws, f"late-{n}.md", STAGE_PREFIXES[:3] if late != "embedded/" else STAGE_PREFIXES, late)
    for n in range(4):
        deleted_during(aws, f"deleted-{n}.md", STAGE_PREFIXES[:n])  # deleted before each stage
    for n, call in enumerate([("parse", "GetObject"), ("chunk", "GetObject"), ("embed", "BatchWriteItem"),
                              ("publish", "ListObjectsV2")]):
        deleted_during(aws, f"deleted-in-{n}.md", STAGE_PREFIXES[:n], call)  # and while each stage runs
    replaced = upload(aws, "handbook.md", HANDBOOK.replace(b"27 days", b"28 days"))  # a replacement purges the old revision
    pump(aws)
    resend(aws, replaced, HANDBOOK)  # a replayed form: parse refuses it and removes its version
    pump(aws)
    assert api("DELETE", "/documents/handbook.md")[0] == 200
    resend(aws, replaced, HANDBOOK)  # and after the delete: parse removes what has no upload
    pump(aws)
    web_pages(aws)
    key = upload(aws, "guide.md", HANDBOOK)
    pump(aws)
    aws["s3"].delete_object(Bucket=BUCKET, Key=key)
    assert load_handler("delete")(removal_event(key), LambdaContext()) == {"batchItemFailures": []}
    audit = load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), AuditContext())
    assert audit["ok"], audit
    # and as the stack runs it: its pages through its queue
    monkeypatch.setenv("CITEWELL_AUDIT_QUEUE_URL", aws["sqs"].create_queue(QueueName="citewell-audit")["QueueUrl"])
    services_from_env.cache_clear()
    audit_through_queue(aws, os.environ["CITEWELL_AUDIT_QUEUE_URL"])


def test_each_function_may_make_every_call_it_makes_and_no_other(aws, textract, function_roles, monkeypatch):
    # the textract fixture sets CITEWELL_OCR and the completion channel as the stack sets them for parse
    monkeypatch.setenv("CITEWELL_FETCH_ALLOW", "127.0.0.1/32")  # the stack's fetch_allow: the test's pages are on loopback
    monkeypatch.setattr(TextractBackend, "BLOCKS", READ)  # what moto's Textract answers
    monkeypatch.setattr(TextractBackend, "PAGES", 1)
    aws["calls"].containers = True
    life(aws, textract, monkeypatch)
    calls = [(caller, service, op, params) for caller, service, op, params in aws["calls"].all() if caller != "test"]
    assert {caller for caller, *_ in calls} == set(FUNCTIONS)
    assert set(function_roles) == set(FUNCTIONS)
    refused = refusals(function_roles, calls)
    assert not refused, "refused by the synthesized role:\n" + "\n".join(refused)
    used = defaultdict(set)
    for caller, service, operation, params in calls:
        used[caller] |= {action for action, _, _ in needs(service, operation, {**params, "caller": caller})}
    extra = {name: sorted(granted_actions(function_roles[name]) - used[name] - PLATFORM - UNWALKED[name]) for name in FUNCTIONS}
    assert not any(extra.values()), f"granted but never called: {extra}; called: { {n: sorted(u) for n, u in used.items()} }"


def test_a_query_role_may_search_and_delete_rows_but_never_write_them(function_roles):
    """The API and the delete function read and delete rows through the alias; a ``_bulk`` (which
    indexes text and vectors) is refused them, and granted to the indexers (publish, the audit)."""
    from tests.aws_roles import DOMAIN_ARN, permitted

    bulk = f"{DOMAIN_ARN}/citewell-chunks/_bulk"
    for name in ("api", "delete"):
        assert not permitted(function_roles[name], "es:ESHttpPost", bulk), name
        for operation in ("_search", "_msearch", "_count", "_delete_by_query"):
            assert permitted(function_roles[name], "es:ESHttpPost", f"{DOMAIN_ARN}/citewell-chunks/{operation}"), (name, operation)
    for name in ("publish", "audit"):
        assert permitted(function_roles[name], "es:ESHttpPost", bulk), name
