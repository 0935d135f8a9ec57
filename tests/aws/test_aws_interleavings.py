"""The AWS chain under late, repeated and reordered messages: the real handlers, the real S3
notifications on moto queues, delivered in orders drawn from a seed.

A message of an upload that is no longer current (a newer upload, or a delete, came first)
is acknowledged as a no-op: never a retry, never a dead letter, never a rollback."""

from __future__ import annotations

import json
import random

import pytest

from citewell.keys import raw_key
from citewell.lambdas.settings import services_from_env
from tests.aws.test_aws_chain import AuditContext, LambdaContext, api, aws, knn_proxy, sqs_event  # noqa: F401

WRITER = "[staff hr citewell:write]"


def put(aws, document_id: str, text: str, roles: list[str], tenant: str = "northpier") -> str:
    status, created = api("POST", "/documents", {"document_id": document_id, "allowed_roles": roles, "filename": "notice.md"},
                          tenant=tenant, groups=WRITER)
    assert status == 201, created
    key = raw_key(tenant, document_id, created["upload_id"])
    aws["s3"].put_object(Bucket="citewell-documents", Key=key, Body=text.encode())
    return key


def collect(aws) -> list[tuple[str, dict]]:
    """Every object notification now queued, taken off its queue: ``(prefix, message)``. S3's
    test event (sent when notifications are configured) is handed to the stage at once."""
    found = []
    for prefix, url in aws["queues"].items():
        while messages := aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            for message in messages:
                aws["sqs"].delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                if "Records" in json.loads(message["Body"]):
                    found.append((prefix, message))
                else:
                    deliver(aws, prefix, message)
    return found


def deliver(aws, prefix: str, message: dict) -> None:
    reply = aws["handlers"][prefix](sqs_event([message]), LambdaContext())
    assert reply == {"batchItemFailures": []}, f"{prefix} message was not acknowledged: {reply}"


def hits(question: str, tenant: str = "northpier", groups: str = "[staff]") -> list[dict]:
    status, found = api("POST", "/search", {"question": question, "k": 10}, tenant=tenant, groups=groups)
    assert status == 200, found
    return found["hits"]


def test_a_late_message_of_an_older_upload_changes_nothing(aws):
    put(aws, "notice.md", "# Notice\n\nThe quorvalent gate closes at nine.\n", ["staff"])
    held = []
    for _ in range(4):  # v1 goes as far as its publish message, which is held back
        for prefix, message in collect(aws):
            if prefix == "embedded/":
                held.append((prefix, message))
            else:
                deliver(aws, prefix, message)
    assert [p for p, _ in held] == ["embedded/"]
    first_parse = None
    put(aws, "notice.md", "# Notice\n\nThe quorvalent gate now closes at ten.\n", ["staff"])
    for _ in range(4):
        for prefix, message in collect(aws):
            first_parse = first_parse or (prefix, message)
            deliver(aws, prefix, message)
    assert [h["text"] for h in hits("quorvalent gate")] == ["Notice\n\nThe quorvalent gate now closes at ten."]
    deliver(aws, *held[0])  # v1's publish arrives late: acknowledged, and v2 stays
    deliver(aws, *first_parse)  # and v2's own parse, delivered twice
    assert [h["text"] for h in hits("quorvalent gate")] == ["Notice\n\nThe quorvalent gate now closes at ten."]
    record = services_from_env()[1].documents.get_document("northpier", "notice.md")
    assert record.status.value == "published" and record.chunk_count == 1


@pytest.mark.parametrize("seed", [11, 12])
def test_random_delivery_orders_uploads_and_deletes(aws, seed):
    rng = random.Random(seed)
    documents = [("northpier", "notice.md"), ("northpier", "guide/notice.md"), ("bluefen", "notice.md")]
    pool: list[tuple[str, dict]] = []
    delivered: list[tuple[str, dict]] = []
    words = []
    for step in range(60):
        roll = rng.random()
        if roll < 0.3 or not pool:
            tenant, document_id = rng.choice(documents)
            word = f"quor{seed}x{step}"
            words.append(word)
            roles = rng.choice([["staff"], ["hr"], ["staff", "hr"]])
            put(aws, document_id, f"# Notice\n\nThe {word} gate closes at nine.\n", roles, tenant=tenant)
        elif roll < 0.38:
            tenant, document_id = rng.choice(documents)
            status, _ = api("DELETE", f"/documents/{document_id.replace('/', '%2F')}", tenant=tenant, groups=WRITER)
            assert status in (200, 404)
        elif roll < 0.45 and delivered:
            deliver(aws, *rng.choice(delivered))  # at least once means sometimes twice
        else:
            message = pool.pop(rng.randrange(len(pool)))
            deliver(aws, *message)
            delivered.append(message)
        pool += collect(aws)
        check(words)
    while pool:  # everything still queued arrives, in any order
        deliver(aws, *pool.pop(rng.randrange(len(pool))))
        pool += collect(aws)
        check(words)
    services = services_from_env()[1]
    for tenant, document_id in documents:
        record = services.documents.get_document(tenant, document_id)
        assert record is None or record.status.value in ("published", "failed"), record
        if record is not None:
            api("DELETE", f"/documents/{document_id.replace('/', '%2F')}", tenant=tenant, groups=WRITER)
    pool = collect(aws)
    assert all(prefix == "raw/" for prefix, _ in pool) is True or pool == []
    for message in pool:
        deliver(aws, *message)
    assert services.index.inventory() == [] and services.chunks.chunk_inventory() == []
    assert services.uploads.upload_inventory() == [] and services.documents.all_documents() == []
    versions = aws["s3"].list_object_versions(Bucket="citewell-documents")
    assert versions.get("Versions", []) == [] and versions.get("DeleteMarkers", []) == []
    from tests.aws.test_aws_chain import EVENTS, load_handler

    audit = load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), AuditContext())
    assert audit == {"ok": True, "findings": 0, "repaired": 0}


def check(words: list[str]) -> None:
    """Whatever is queued or in flight, search serves only what each record serves, to whom it may."""
    services = services_from_env()[1]
    word = words[-1] if words else "gate"
    for tenant in ("northpier", "bluefen"):
        for groups in ("[staff]", "[hr]"):
            for hit in hits(f"{word} gate", tenant=tenant, groups=groups):
                record = services.documents.get_document(tenant, hit["document_id"])
                roles = set(groups.strip("[]").split())
                assert record is not None and record.active_revision == hit["revision"], hit
                assert roles & record.allowed_roles, (hit, record.allowed_roles)
                chunks = services.chunks.get_chunks(tenant, hit["document_id"], hit["revision"])
                assert hit["text"] in [c.text for c in chunks] and all(c.allowed_roles == record.allowed_roles for c in chunks)
