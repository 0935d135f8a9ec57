"""The audit on AWS, in pages: the schedule's invocation asks for the expunge first and queues
the run's pages; the audit function takes them from the queue in any order, each with its
own snapshot, and finds (and repairs) what the single pass finds; a page cut short resumes
at its checkpoint in DynamoDB, doing no step twice. Strict emulation as in test_aws_chain."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from citewell import audit_pages
from citewell.audit import audit
from citewell.keys import raw_key
from citewell.lambdas.settings import services_from_env
from citewell.models.conversations import Conversation, Turn
from tests.aws.test_aws_chain import (  # noqa: F401
    EVENTS,
    HANDBOOK,
    LambdaContext,
    api,
    aws,
    knn_proxy,
    load_handler,
    pump,
    sqs_event,
    upload,
)

DOCUMENTS = ("handbook.md", "guide.md", "policy.md", "rota.md")


class TimedContext(LambdaContext):
    """A Lambda context whose remaining time runs out after ``steps`` asks: then it reports no
    time left (``"stop"``: the page stops itself) or the function is killed (``"kill"``)."""

    def __init__(self, steps: int | None = None, mode: str = "stop") -> None:
        self.steps, self.mode, self.asked = steps, mode, 0

    def get_remaining_time_in_millis(self) -> int:
        self.asked += 1
        if self.steps is not None and self.asked > self.steps:
            if self.mode == "kill":
                raise TimeoutError("Task timed out after 900.00 seconds")
            return 1_000
        return 900_000


@pytest.fixture
def audit_queue(aws, monkeypatch):
    url = aws["sqs"].create_queue(QueueName="citewell-audit")["QueueUrl"]
    monkeypatch.setenv("CITEWELL_AUDIT_QUEUE_URL", url)  # as the stack sets it on the audit function
    services_from_env.cache_clear()
    return url


def queued(aws, url: str) -> list[dict]:
    """Every message on the audit queue, taken off it."""
    messages = []
    while batch := aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        messages += batch
        for message in batch:
            aws["sqs"].delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return messages


class Logged(logging.Handler):
    """The findings the audit function logs, as its Powertools logger hands them on (each
    finding's fields are the record's extras)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.findings: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "audit finding":
            self.findings.append({k: getattr(record, k) for k in ("kind", "tenant", "document_id", "detail", "repaired")})


@pytest.fixture
def logged():
    handler, logger = Logged(), logging.getLogger("citewell-audit")  # Powertools names its logger by service
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


def audit_through_queue(aws, url: str, reverse: bool = False) -> dict:
    """The schedule's invocation, then every page it queued delivered to the audit function
    (in reverse: the last planned first), each as its own invocation."""
    handler = load_handler("audit")
    started = handler(json.loads((EVENTS / "schedule.json").read_text()), TimedContext())
    messages = queued(aws, url)
    assert started["pages"] == len(messages) > 0
    for message in reversed(messages) if reverse else messages:
        assert handler(sqs_event([message]), TimedContext()) == {"batchItemFailures": []}
    return started


def served_corpus(aws) -> None:
    for document_id in DOCUMENTS:
        upload(aws, document_id, HANDBOOK.replace(b"Annual leave", document_id.encode()))
    pump(aws)


def planted(aws) -> None:
    """One inconsistency of most kinds a page check finds, across the documents."""
    services = services_from_env()[1]
    record = services.documents.get_document("northpier", "guide.md")
    chunks = services.chunks.get_chunks("northpier", "guide.md", record.active_revision)
    services.chunks.put_chunks([c.model_copy(update={"allowed_roles": frozenset({"hr"})}) for c in chunks])  # access
    stale = [c.model_copy(update={"revision": "0" * 64}) for c in chunks]
    services.index.upsert(stale, np.zeros((len(stale), 384), dtype=np.float32), services.embedder.identity)  # orphan rows
    rota = services.documents.get_document("northpier", "rota.md")
    aws["s3"].delete_object(Bucket="citewell-documents", Key=raw_key("northpier", "rota.md", rota.active_upload))
    for n in range(3):
        services.answers.put_cached_answer(f"key-{n}", "northpier", 0, f"gone-{n}")  # dangling caches
    services.embeddings.put_embeddings(services.embedder.identity, {f"{n:x}" * 64: np.zeros(384, dtype=np.float32)
                                                                   for n in (1, 9, 14)})  # unused, in three ranges
    conversation = Conversation(conversation_id="c1", tenant="northpier", subject="anna", roles=["staff"],
                                turns=[Turn(seq=1, answer_id="gone-0", asked="leave?", question="leave?")])
    services.conversations.save_conversation(conversation)  # a turn keeping the words of a missing answer


def small_pages(monkeypatch, items: int = 1) -> None:
    monkeypatch.setitem(audit_pages.PAGE_ITEMS, "live", items)
    monkeypatch.setitem(audit_pages.PAGE_ITEMS, "caches", items)
    monkeypatch.setitem(audit_pages.PAGE_ITEMS, "conversations", items)
    for kind in audit_pages.STEP_ITEMS:
        monkeypatch.setitem(audit_pages.STEP_ITEMS, kind, 1)


def test_pages_fanned_out_find_what_the_single_pass_finds_and_repair_it(aws, audit_queue, monkeypatch, logged):
    served_corpus(aws)
    planted(aws)
    services = services_from_env()[1]
    single = sorted((f.kind, f.tenant, f.document_id, f.detail) for f in audit(services).findings)
    assert {k for k, *_ in single} == {"access_mismatch", "orphan_index_chunks", "missing_raw_upload", "dangling_cache",
                                       "unused_embeddings", "withdrawn_turn"}
    small_pages(monkeypatch)
    started = audit_through_queue(aws, audit_queue, reverse=True)
    assert started["pages"] >= len(DOCUMENTS) + 3 + 1 + 16  # a page per document, cache entry, conversation, hash range
    fanned = logged.findings
    assert sorted((f["kind"], f["tenant"], f["document_id"], f["detail"]) for f in fanned) == single
    assert all(f["repaired"] for f in fanned if f["kind"] != "missing_raw_upload")  # no repair brings a lost upload back
    assert [f.kind for f in audit(services).findings] == ["missing_raw_upload"]
    assert ("audit", "POST", "/citewell-chunks/_forcemerge") in aws["proxy"].calls


@pytest.mark.parametrize("mode", ["stop", "kill"])
def test_a_page_cut_short_resumes_at_its_checkpoint_and_repeats_no_step(aws, audit_queue, monkeypatch, logged, mode):
    served_corpus(aws)
    small_pages(monkeypatch, items=len(DOCUMENTS))  # one page of the live check, a document a step
    handler = load_handler("audit")
    handler(json.loads((EVENTS / "schedule.json").read_text()), TimedContext())
    messages = queued(aws, audit_queue)
    (live,) = [m for m in messages if json.loads(m["Body"])["kind"] == "live"]
    page = json.loads(live["Body"])
    aws["calls"].made.clear()

    reply = handler(sqs_event([live]), TimedContext(steps=2, mode=mode))  # time runs out after two steps
    assert reply == {"batchItemFailures": [{"itemIdentifier": live["MessageId"]}]}  # the queue hands it back
    services = services_from_env()[1]
    assert services.documents.audit_progress(page["run_id"], page["number"]) == 2
    assert handler(sqs_event([live]), TimedContext()) == {"batchItemFailures": []}  # redelivered: the rest
    assert services.documents.audit_progress(page["run_id"], page["number"]) == len(DOCUMENTS)
    assert handler(sqs_event([live]), TimedContext()) == {"batchItemFailures": []}  # once more: nothing left to do
    heads = [p["Key"] for caller, service, op, p in aws["calls"].made if (caller, service, op) == ("audit", "s3", "HeadObject")]
    assert sorted(heads) == sorted(raw_key("northpier", d, services.documents.get_document("northpier", d).active_upload)
                                   for d in DOCUMENTS)  # each document's upload looked at once, none missed
    for message in messages:
        if message is not live:
            assert handler(sqs_event([message]), TimedContext()) == {"batchItemFailures": []}
    assert logged.findings == [] and audit(services).findings == []


def test_the_expunge_is_asked_first_even_when_the_pages_outlast_the_time(aws):
    served_corpus(aws)
    aws["proxy"].calls.clear()
    report = load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), TimedContext(steps=0))
    assert ("audit", "POST", "/citewell-chunks/_forcemerge") in aws["proxy"].calls
    assert report["unfinished"] > 0 and report["findings"] == 0  # no queue: every page stopped for time, none ran
    assert load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), TimedContext()) == {
        "ok": True, "findings": 0, "repaired": 0}
