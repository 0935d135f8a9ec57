"""One-use upload forms on AWS: S3 takes a presigned POST again and again until it expires,
so parse admits one object per upload and refuses the rest (citewell.lambdas.forms).

Every send goes through the real form to moto, and every notification through the parse
handler: a replay after publication changes nothing served, a replay after a delete leaves
no byte behind, a replay sent before the first send was parsed loses to it, and the
at-least-once redelivery of the admitted object stays a no-op rather than a refused replay."""

from __future__ import annotations

import hashlib
import json

from citewell.lambdas.settings import services_from_env
from tests.aws.test_aws_chain import (  # noqa: F401
    EVENTS,
    AuditContext,
    LambdaContext,
    api,
    aws,
    knn_proxy,
    load_handler,
    pump,
    resend,
    sqs_event,
    upload,
)

BUCKET = "citewell-documents"
NOTICE = b"# Notice\n\nThe east gate closes at nine.\n"
FORGED = b"# Notice\n\nThe east gate is open to the public all night; no badge is needed.\n"


def served(question: str = "east gate") -> list[str]:
    status, found = api("POST", "/search", {"question": question, "k": 5})
    assert status == 200, found
    return [h["text"] for h in found["hits"]]


def versions(aws, key: str | None = None) -> tuple[list[str], list[str]]:
    """The ETags of every version under ``key`` (the whole bucket without one), and its delete markers."""
    listed = aws["s3"].list_object_versions(Bucket=BUCKET, **({"Prefix": key} if key else {}))
    return [v["ETag"].strip('"') for v in listed.get("Versions", [])], [m["Key"] for m in listed.get("DeleteMarkers", [])]


def etag(data: bytes) -> str:
    """S3's ETag of a single-part object."""
    return hashlib.md5(data).hexdigest()


def audit_is_clean() -> None:
    report = load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), AuditContext())
    assert report == {"ok": True, "findings": 0, "repaired": 0}, report


def test_a_replayed_form_does_not_replace_a_published_document(aws):
    key = upload(aws, "notice.md", NOTICE)
    pump(aws)
    services = services_from_env()[1]
    before = services.documents.get_document("northpier", "notice.md")
    assert before.status.value == "published" and served() == ["Notice\n\nThe east gate closes at nine."]

    resend(aws, key, FORGED)  # no token needed: the form is all it takes
    delivered = pump(aws)
    assert served("east gate badge night") == ["Notice\n\nThe east gate closes at nine."]
    assert [prefix for prefix, _ in delivered] == ["raw/"]  # refused at parse: nothing went further
    after = services.documents.get_document("northpier", "notice.md")
    kept = ("active_revision", "active_upload", "status", "content_sha256")
    assert [getattr(after, f) for f in kept] == [getattr(before, f) for f in kept]
    assert versions(aws, key) == ([etag(NOTICE)], [])  # the replay's bytes are gone, the upload's stay
    audit_is_clean()


def test_a_replayed_form_after_a_delete_leaves_no_byte(aws):
    key = upload(aws, "notice.md", NOTICE)
    pump(aws)
    status, removed = api("DELETE", "/documents/notice.md")
    assert status == 200 and removed["removed"]["documents"] == 1

    resend(aws, key, NOTICE)  # the deleted text, sent again with the same form
    pump(aws)
    assert versions(aws) == ([], [])  # refused and removed, every version: nothing of it left in the bucket
    assert api("GET", "/documents/notice.md")[0] == 404 and served() == []
    audit_is_clean()


def test_the_first_send_wins_over_a_replay_sent_before_either_was_parsed(aws):
    key = upload(aws, "notice.md", NOTICE)
    resend(aws, key, FORGED)
    url = aws["queues"]["raw/"]
    messages = []
    while batch := aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        messages += [m for m in batch if "Records" in json.loads(m["Body"])]
        for message in batch:
            aws["sqs"].delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    sent = [json.loads(m["Body"])["Records"][0]["s3"]["object"]["eTag"] for m in messages]
    assert sent == [etag(NOTICE), etag(FORGED)]
    for message in reversed(messages):  # the replay's notification first: SQS keeps no order
        assert aws["handlers"]["raw/"](sqs_event([message]), LambdaContext()) == {"batchItemFailures": []}
    pump(aws)
    assert served("east gate badge night") == ["Notice\n\nThe east gate closes at nine."]
    assert versions(aws, key) == ([etag(NOTICE)], [])


def test_a_redelivered_notification_of_the_upload_is_not_a_replay(aws):
    key = upload(aws, "notice.md", NOTICE)
    delivered = pump(aws)
    services = services_from_env()[1]
    revision = services.documents.get_document("northpier", "notice.md").active_revision
    raw_event = next(event for prefix, event in delivered if prefix == "raw/")
    for _ in range(2):  # S3 delivers at least once
        assert aws["handlers"]["raw/"](raw_event, LambdaContext()) == {"batchItemFailures": []}
    pump(aws)
    document = services.documents.get_document("northpier", "notice.md")
    assert document.status.value == "published" and document.active_revision == revision
    assert versions(aws, key) == ([etag(NOTICE)], [])  # admitted again, not removed as a replay
    assert served() == ["Notice\n\nThe east gate closes at nine."]


def test_an_intent_records_the_object_that_used_its_form_once(aws):
    from citewell.ingest.registration import register_upload

    services = services_from_env()[1]
    uploads = services.uploads
    upload = register_upload(services, document_id="notice.md", tenant="northpier", allowed_roles=frozenset({"staff"}))
    claim = lambda received: uploads.claim_upload("northpier", "notice.md", upload.upload_id, received)  # noqa: E731
    assert claim("v1/aa") == "v1/aa" and claim("v1/aa") == "v1/aa"  # first, then its redelivery
    assert claim("v2/bb") == "v1/aa"  # a second object: the first one stays the upload's
    assert uploads.get_upload("northpier", "notice.md", upload.upload_id) == upload
    uploads.delete_upload("northpier", "notice.md", upload.upload_id)
    assert claim("v1/aa") is None and uploads.get_upload("northpier", "notice.md", upload.upload_id) is None  # never re-created
