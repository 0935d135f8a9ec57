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
from citewell.lambdas import handlers
from citewell.lambdas.settings import services_from_env
from citewell.models.answers import AnswerRecord, Citation
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
            fields = ("kind", "tenant", "document_id", "detail", "repaired", "started")
            self.findings.append({k: getattr(record, k) for k in fields})


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


def answer(answer_id: str, *sources: tuple[str, str]) -> AnswerRecord:
    """An answer citing each ``(document_id, revision)``."""
    return AnswerRecord(answer_id=answer_id, tenant="northpier", roles=["staff"], question="leave?", answer="27 days [S1]",
                        refused=False, generator="extractive",
                        citations=[Citation(ref=f"S{n + 1}", chunk_id=f"{d}#0#0", document_id=d, revision=r, quote="27 days")
                                   for n, (d, r) in enumerate(sources)])


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
        services.answer_cache.put_cached_answer(f"key-{n}", "northpier", 0, f"gone-{n}")  # dangling caches
    services.embeddings.put_embeddings(services.embedder.identity, {f"{n:x}" * 64: np.zeros(384, dtype=np.float32)
                                                                   for n in (1, 9, 14)})  # unused, in three ranges
    conversation = Conversation(conversation_id="c1", tenant="northpier", subject="anna", roles=["staff"],
                                turns=[Turn(seq=1, answer_id="gone-0", asked="leave?", question="leave?")])
    services.conversations.save_conversation(conversation)  # a turn keeping the words of a missing answer
    served = services.documents.get_document("northpier", "policy.md").active_revision
    services.answers.put_answer(answer("cites-old", ("policy.md", served), ("handbook.md", "1" * 64)))  # dangling citations:
    services.answers.put_answer(answer("cites-gone", ("gone.md", "2" * 64)))  # of a replaced revision, of no document


def small_pages(monkeypatch, items: int = 1) -> None:
    monkeypatch.setitem(audit_pages.PAGE_ITEMS, "live", items)
    monkeypatch.setitem(audit_pages.PAGE_ITEMS, "citations", items)
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
                                       "unused_embeddings", "withdrawn_turn", "dangling_citation"}
    assert sorted((d, detail.split()[1]) for k, _, d, detail in single if k == "dangling_citation") == [
        ("gone.md", "cites-gone"), ("handbook.md", "cites-old")]  # not the answer's citation of policy.md's served revision
    small_pages(monkeypatch)
    started = audit_through_queue(aws, audit_queue, reverse=True)
    # a page per document, cited document (handbook, policy, gone), cache entry, conversation, hash range
    assert started["pages"] >= len(DOCUMENTS) + 3 + 3 + 1 + 16
    fanned = logged.findings
    assert sorted((f["kind"], f["tenant"], f["document_id"], f["detail"]) for f in fanned) == single
    assert all(f["repaired"] for f in fanned if f["kind"] != "missing_raw_upload")  # no repair brings a lost upload back
    assert [f.kind for f in audit(services).findings] == ["missing_raw_upload"]
    assert ("audit", "POST", "/citewell-chunks/_forcemerge") in aws["proxy"].calls


@pytest.mark.parametrize("mode", ["stop", "kill"])
def test_a_page_cut_short_resumes_at_its_checkpoint_and_repeats_no_step(aws, audit_queue, monkeypatch, logged, mode):
    """Stopped for time, the page queues its rest (delivered in seconds) and is acknowledged;
    killed by the timeout, it is handed back whole (the queue delivers it again after its
    visibility timeout: here at once, as if that had passed)."""
    served_corpus(aws)
    small_pages(monkeypatch, items=len(DOCUMENTS))  # one page of the live check, a document a step
    handler = load_handler("audit")
    handler(json.loads((EVENTS / "schedule.json").read_text()), TimedContext())
    messages = queued(aws, audit_queue)
    (live,) = [m for m in messages if json.loads(m["Body"])["kind"] == "live"]
    page = json.loads(live["Body"])
    aws["calls"].made.clear()

    reply = handler(sqs_event([live]), TimedContext(steps=2, mode=mode))  # time runs out after two steps
    services = services_from_env()[1]
    assert services.documents.audit_progress(page["run_id"], page["number"]) == 2
    if mode == "stop":
        assert reply == {"batchItemFailures": []}  # acknowledged: its rest is a new message
        assert aws["sqs"].receive_message(QueueUrl=audit_queue).get("Messages", []) == []  # delayed a few seconds
        rest = aws["sqs"].receive_message(QueueUrl=audit_queue, WaitTimeSeconds=handlers.CONTINUE_DELAY_S + 5)["Messages"]
        assert [json.loads(m["Body"]) for m in rest] == [page]
        aws["sqs"].delete_message(QueueUrl=audit_queue, ReceiptHandle=rest[0]["ReceiptHandle"])
        again = rest[0]
    else:
        assert reply == {"batchItemFailures": [{"itemIdentifier": live["MessageId"]}]}  # the queue hands it back
        again = live
    assert handler(sqs_event([again]), TimedContext()) == {"batchItemFailures": []}  # the rest
    assert services.documents.audit_progress(page["run_id"], page["number"]) == len(DOCUMENTS)
    assert handler(sqs_event([again]), TimedContext()) == {"batchItemFailures": []}  # once more: nothing left to do
    heads = [p["Key"] for caller, service, op, p in aws["calls"].made if (caller, service, op) == ("audit", "s3", "HeadObject")]
    assert sorted(heads) == sorted(raw_key("northpier", d, services.documents.get_document("northpier", d).active_upload)
                                   for d in DOCUMENTS)  # each document's upload looked at once, none missed
    assert queued(aws, audit_queue) == []  # nothing else was queued
    for message in messages:
        if message is not live:
            assert handler(sqs_event([message]), TimedContext()) == {"batchItemFailures": []}
    assert logged.findings == [] and audit(services).findings == []


def test_a_page_that_takes_no_step_in_an_invocation_goes_back_to_the_queue(aws, audit_queue, monkeypatch):
    """Sent again only when it moved on: a page that cannot take a step is handed back as a
    failure, so its receive count still ends it in the dead-letter queue."""
    served_corpus(aws)
    small_pages(monkeypatch, items=len(DOCUMENTS))
    handler = load_handler("audit")
    handler(json.loads((EVENTS / "schedule.json").read_text()), TimedContext())
    (live,) = [m for m in queued(aws, audit_queue) if json.loads(m["Body"])["kind"] == "live"]
    assert handler(sqs_event([live]), TimedContext(steps=0)) == {"batchItemFailures": [{"itemIdentifier": live["MessageId"]}]}
    assert queued(aws, audit_queue) == []
    page = json.loads(live["Body"])
    assert services_from_env()[1].documents.audit_progress(page["run_id"], page["number"]) == 0


def test_a_citations_page_reads_its_documents_stale_citations_only(aws, audit_queue, monkeypatch, logged):
    """Each document's answers on its served revision are left unread (a key range around
    them), so a page reads what it may find, however many answers rest on what is served."""
    served_corpus(aws)
    services = services_from_env()[1]
    served = services.documents.get_document("northpier", "handbook.md").active_revision
    for n in range(30):
        services.answers.put_answer(answer(f"now-{n:02d}", ("handbook.md", served)))
    for n in range(2):
        services.answers.put_answer(answer(f"old-{n}", ("handbook.md", "0" * 64)))
    small_pages(monkeypatch)
    handler = load_handler("audit")
    handler(json.loads((EVENTS / "schedule.json").read_text()), TimedContext())
    pages = [m for m in queued(aws, audit_queue) if json.loads(m["Body"])["kind"] == "citations"]
    assert [json.loads(m["Body"])["keys"] for m in pages] == [[["northpier", "handbook.md"]]]
    read: list[int] = []

    def counted(parsed: dict, model, **_: object) -> None:
        if model.name == "Query":
            read.append(len(parsed.get("Items", [])))

    services.documents.client.meta.events.register("after-call.dynamodb.Query", counted)
    assert handler(sqs_event(pages), TimedContext()) == {"batchItemFailures": []}
    assert sum(read) == 2  # the two stale entries, none of the 30 served
    assert sorted(f["detail"].split()[1] for f in logged.findings) == ["old-0", "old-1"]
    assert all(f["repaired"] for f in logged.findings)


def test_the_expunge_is_asked_first_even_when_the_pages_outlast_the_time(aws):
    served_corpus(aws)
    aws["proxy"].calls.clear()
    report = load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), TimedContext(steps=0))
    assert ("audit", "POST", "/citewell-chunks/_forcemerge") in aws["proxy"].calls
    assert report["unfinished"] > 0 and report["findings"] == 0  # no queue: every page stopped for time, none ran
    assert load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), TimedContext()) == {
        "ok": True, "findings": 0, "repaired": 0}
