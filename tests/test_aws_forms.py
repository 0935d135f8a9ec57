"""One-use upload forms on AWS: S3 takes a presigned POST again and again until it expires,
so parse admits one object per upload and refuses the rest (citewell.aws.forms).

Every send goes through the real form to moto, and every notification through the parse
handler: a replay after publication changes nothing served, a replay after a delete leaves
no byte behind, a replay sent before the first send was parsed loses to it, and the
at-least-once redelivery of the admitted object stays a no-op rather than a refused replay."""

from __future__ import annotations

import hashlib
import json

from citewell.aws.settings import services_from_env
from tests.test_aws_chain import EVENTS, LambdaContext, api, aws, knn_proxy, load_handler, pump, resend, upload  # noqa: F401

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
    report = load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), LambdaContext())
    assert report == {"ok": True, "findings": 0, "repaired": 0}, report


def test_a_replayed_form_does_not_replace_a_published_document(aws):
    key = upload(aws, "notice.md", NOTICE)
    pump(aws)
    services = services_from_env()[1]
    before = services.metadata.get_document("northpier", "notice.md")
    assert before.status.value == "published" and served() == ["Notice\n\nThe east gate closes at nine."]

    resend(aws, key, FORGED)  # no token needed: the form is all it takes
    delivered = pump(aws)
    assert served("east gate badge night") == ["Notice\n\nThe east gate closes at nine."]
    assert [prefix for prefix, _ in delivered] == ["raw/"]  # refused at parse: nothing went further
    after = services.metadata.get_document("northpier", "notice.md")
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
    from citewell.aws.forms import Notified
    from citewell.aws.pipeline import run_stage

    key = upload(aws, "notice.md", NOTICE)
    resend(aws, key, FORGED)
    messages = aws["sqs"].receive_message(QueueUrl=aws["queues"]["raw/"], MaxNumberOfMessages=10)["Messages"]
    for message in messages:
        aws["sqs"].delete_message(QueueUrl=aws["queues"]["raw/"], ReceiptHandle=message["ReceiptHandle"])
    bodies = [json.loads(m["Body"]) for m in messages]
    objects = [r["s3"]["object"] for b in bodies if "Records" in b for r in b["Records"]]
    assert [o["eTag"] for o in objects] == [etag(NOTICE), etag(FORGED)]
    services = services_from_env()[1]
    # The replay's notification first (SQS does not keep order): it is refused, not admitted for being early.
    assert run_stage(services, "parse", key, Notified(key=key, etag=etag(FORGED))).startswith("refused")
    assert run_stage(services, "parse", key, Notified(key=key, etag=etag(NOTICE))).startswith("parsed")
    pump(aws)
    assert served() == ["Notice\n\nThe east gate closes at nine."]
    assert versions(aws, key) == ([etag(NOTICE)], [])


def test_a_redelivered_notification_of_the_upload_is_not_a_replay(aws):
    from citewell.aws.forms import Notified
    from citewell.aws.pipeline import run_stage

    key = upload(aws, "notice.md", NOTICE)
    delivered = pump(aws)
    services = services_from_env()[1]
    revision = services.metadata.get_document("northpier", "notice.md").active_revision
    admitted = Notified(key=key, etag=etag(NOTICE))
    assert not run_stage(services, "parse", key, admitted).startswith("refused")  # S3 delivers at least once
    raw_event = next(event for prefix, event in delivered if prefix == "raw/")
    assert aws["handlers"]["raw/"](raw_event, LambdaContext()) == {"batchItemFailures": []}
    pump(aws)
    document = services.metadata.get_document("northpier", "notice.md")
    assert document.status.value == "published" and document.active_revision == revision
    assert versions(aws, key) == ([etag(NOTICE)], [])
    assert served() == ["Notice\n\nThe east gate closes at nine."]
