"""Every repair the audit makes on AWS, made by the audit function under the role the stack
synthesizes for it (tests.aws_roles replays each of its calls; S3 and DynamoDB answer as
strictly as AWS, tests.strict_aws). Each case plants one kind of damage in a served corpus, runs
the scheduled audit through its handler, and checks what it reported (repaired, or a re-ingest
started and left to the ingestion chain), that the corpus is whole again afterwards, and that
the audit's role allowed every call it made."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import numpy as np
import pytest

from citewell.answers.service import ask
from citewell.keys import parsed_key
from citewell.lambdas.settings import services_from_env
from citewell.models.conversations import Conversation, Turn
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.models.values import utcnow
from citewell.records import update_document
from tests.aws.test_aws_audit_pages import logged  # noqa: F401
from tests.aws.test_aws_chain import (  # noqa: F401
    EVENTS,
    HANDBOOK,
    AuditContext,
    LambdaContext,
    aws,
    knn_proxy,
    load_handler,
    pump,
    step,
    upload,
)
from tests.aws.test_aws_iam import NOTICE
from tests.aws.test_aws_textract_jobs import resume, textract  # noqa: F401
from tests.aws_roles import BUCKET, refusals
from tests.fake_textract import scanned

TENANT = "northpier"
STAFF = Identity(tenant=TENANT, roles=frozenset({"staff"}))
OLD = utcnow() - timedelta(days=1)


def served(aws, document_id: str = "handbook.md", data: bytes = HANDBOOK) -> None:
    upload(aws, document_id, data)
    pump(aws)
    assert services().documents.get_document(TENANT, document_id).status is DocumentStatus.PUBLISHED


def services():
    return services_from_env()[1]


def active(document_id: str = "handbook.md") -> str:
    return services().documents.get_document(TENANT, document_id).active_revision


def aged(document_id: str, **fields: object) -> None:
    """The record changed as ``fields`` say, and last touched a day ago (past the stuck limit)."""
    update_document(services().documents, TENANT, document_id,
                    lambda d: d.model_copy(update={**fields, "updated_at": OLD}))


# -- the damage, one kind a case -------------------------------------------------------


def orphan_index_rows(aws) -> None:
    chunks = services().chunks.get_chunks(TENANT, "handbook.md", active())
    stale = [c.model_copy(update={"revision": "0" * 64}) for c in chunks]
    services().index.upsert(stale, np.zeros((len(stale), 384), dtype=np.float32), services().embedder.identity)


def index_rows_lost(aws) -> None:
    services().index.delete_revision(TENANT, "handbook.md", active())


def index_rows_and_chunk_records_lost(aws) -> None:
    services().index.delete_revision(TENANT, "handbook.md", active())
    services().chunks.delete_chunks(TENANT, "handbook.md", active())


def access_changed(aws) -> None:
    chunks = services().chunks.get_chunks(TENANT, "handbook.md", active())
    services().chunks.put_chunks([c.model_copy(update={"allowed_roles": frozenset({"hr"})}) for c in chunks])


def delete_cut_short(aws) -> None:
    aged("handbook.md", status=DocumentStatus.DELETING)


def switch_never_made(aws) -> None:
    """A replacement indexed in full whose publish died before the switch."""
    upload(aws, "handbook.md", NOTICE)
    for prefix in ("raw/", "parsed/", "chunks/"):
        step(aws, prefix)
    aws["sqs"].purge_queue(QueueUrl=aws["queues"]["embedded/"])  # publish never ran
    s = services()
    revision = next(r for t, d, r, _ in s.chunks.chunk_inventory() if (t, d) == (TENANT, "handbook.md") and r != active())
    chunks = s.chunks.get_chunks(TENANT, "handbook.md", revision)
    vectors = s.embeddings.get_embeddings(s.embedder.identity, [c.content_hash for c in chunks])
    s.index.upsert(chunks, np.stack([vectors[c.content_hash] for c in chunks]), s.embedder.identity)
    aged("handbook.md")


def parse_died(aws) -> None:
    """A replacement parsed, then nothing: chunk never ran."""
    upload(aws, "handbook.md", NOTICE)
    step(aws, "raw/")
    aws["sqs"].purge_queue(QueueUrl=aws["queues"]["parsed/"])
    aged("handbook.md")


def record_lost(aws) -> None:
    """An upload sent, then its document's record lost without the delete's cascade: its intent
    and raw object belong to nothing."""
    upload(aws, "lost.md", NOTICE)
    aws["sqs"].purge_queue(QueueUrl=aws["queues"]["raw/"])
    services().documents.delete_document(TENANT, "lost.md")


def orphan_chunk_records(aws) -> None:
    chunks = services().chunks.get_chunks(TENANT, "handbook.md", active())
    services().chunks.put_chunks([c.model_copy(update={"revision": "1" * 64}) for c in chunks])


def orphan_objects(aws) -> None:
    aws["s3"].put_object(Bucket=BUCKET, Key=parsed_key(TENANT, "handbook.md", "2" * 32), Body=b"{}")
    aws["s3"].create_multipart_upload(Bucket=BUCKET, Key=parsed_key(TENANT, "handbook.md", "3" * 32))


def stale_citation_and_cache(aws) -> None:
    s = services()
    answer = ask(s, STAFF, "How many days of paid annual leave do full-time staff receive?")
    assert not answer.refused
    record = s.answers.get_answer(TENANT, answer.answer_id)
    moved = {"revision": "5" * 64}
    s.answers.put_answer(record.model_copy(update={"citations": [c.model_copy(update=moved) for c in record.citations],
                                                   "considered": [c.model_copy(update=moved) for c in record.considered]}))
    s.answer_cache.put_cached_answer("key-gone", TENANT, 0, "gone")


def foreign_and_unused_embeddings(aws) -> None:
    s = services()
    s.embeddings.put_embeddings("another-model@3:384", {"abc": np.zeros(384, dtype=np.float32)})
    s.embeddings.put_embeddings(s.embedder.identity, {"f" * 64: np.zeros(384, dtype=np.float32)})


def purge_cut_short(aws) -> None:
    orphan_chunk_records(aws)
    aged("handbook.md", purging=["1" * 64])


def withdrawn_turn(aws) -> None:
    services().conversations.save_conversation(Conversation(
        conversation_id="c1", tenant=TENANT, subject="anna", roles=["staff"],
        turns=[Turn(seq=1, answer_id="gone", asked="leave?", question="leave?")]))


def leave_is_served(aws) -> None:
    s, revision = services(), active()
    record = s.documents.get_document(TENANT, "handbook.md")
    assert record.status is DocumentStatus.PUBLISHED
    assert s.index.count(TENANT, "handbook.md", revision) == record.chunk_count > 0


def failed_still_served(aws) -> None:
    """The stuck replacement failed; the revision served before it still is."""
    s, revision = services(), active()
    record = s.documents.get_document(TENANT, "handbook.md")
    assert record.status is DocumentStatus.FAILED and record.error.code == "stuck"
    assert s.index.count(TENANT, "handbook.md", revision) == record.chunk_count > 0


def notice_is_served(aws) -> None:
    assert services().documents.get_document(TENANT, "handbook.md").title is not None
    assert b"gate closes" in b"".join(c.text.encode() for c in services().chunks.get_chunks(TENANT, "handbook.md", active()))


def gone(document_id: str) -> Callable[[object], None]:
    def check(aws: object) -> None:
        assert services().documents.get_document(TENANT, document_id) is None

    return check


# (damage, kinds it makes, kinds whose repair only starts (the chain finishes it), what holds after)
CASES: dict[str, tuple[Callable, set[str], set[str], Callable]] = {
    "orphan_index_chunks": (orphan_index_rows, {"orphan_index_chunks"}, set(), leave_is_served),
    "missing_revision_reindexed": (index_rows_lost, {"missing_revision"}, set(), leave_is_served),
    "missing_revision_reingested": (index_rows_and_chunk_records_lost, {"missing_revision", "unused_embeddings"},
                                    {"missing_revision"},
                                    leave_is_served),
    "access_mismatch": (access_changed, {"access_mismatch"}, set(), leave_is_served),
    "stuck_deleting": (delete_cut_short, {"stuck"}, set(), gone("handbook.md")),
    "unswitched_upload": (switch_never_made, {"unswitched_upload"}, set(), notice_is_served),
    "stuck_processing": (parse_died, {"stuck"}, set(), failed_still_served),
    "orphan_upload": (record_lost, {"orphan_upload"}, set(), gone("lost.md")),
    "orphan_chunk_records": (orphan_chunk_records, {"orphan_chunk_records"}, set(), leave_is_served),
    "orphan_object": (orphan_objects, {"orphan_object", "leftover_temporary"}, set(), leave_is_served),
    "dangling_citation": (stale_citation_and_cache, {"dangling_citation", "dangling_cache"}, set(), leave_is_served),
    "embeddings": (foreign_and_unused_embeddings, {"foreign_embeddings", "unused_embeddings"}, set(), leave_is_served),
    "unfinished_purge": (purge_cut_short, {"unfinished_purge", "orphan_chunk_records"}, set(), leave_is_served),
    "withdrawn_turn": (withdrawn_turn, {"withdrawn_turn"}, set(), leave_is_served),
}


@pytest.fixture
def run_audit(aws, logged):
    """The schedule's invocation of the audit function (one module, as one container keeps it);
    the findings it logs are in ``logged``."""
    handler = load_handler("audit")

    def run() -> dict:
        logged.findings.clear()
        return handler(json.loads((EVENTS / "schedule.json").read_text()), AuditContext())

    return run


def audit_refusals(aws, function_roles) -> list[str]:
    return refusals(function_roles, [c for c in aws["calls"].all() if c[0] == "audit"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_repair_is_made_under_the_audit_role(aws, logged, run_audit, function_roles, monkeypatch, case):
    damage, kinds, started, after = CASES[case]
    served(aws)
    damage(aws)
    monkeypatch.setenv("CITEWELL_STUCK_MINUTES", "0")  # what the damage left in flight is judged dead now
    aws["calls"].made.clear()
    aws["proxy"].calls.clear()
    reply = run_audit()
    assert audit_refusals(aws, function_roles) == []
    assert {f["kind"] for f in logged.findings} == kinds, logged.findings
    assert not any("repair failed" in f["detail"] for f in logged.findings), logged.findings
    assert {f["kind"] for f in logged.findings if not f["repaired"]} == started
    assert all(f["started"] for f in logged.findings if f["kind"] in started)
    assert reply["ok"] and reply["repaired"] == len(logged.findings) - len(started)
    assert reply.get("started", 0) == len([f for f in logged.findings if f["started"]])
    pump(aws)  # what a repair handed to the ingestion chain
    after(aws)
    assert run_audit() == {"ok": True, "findings": 0, "repaired": 0}, logged.findings


def test_a_served_scan_whose_records_are_gone_is_read_again_by_a_textract_job(aws, textract, logged, run_audit, function_roles,
                                                                              monkeypatch):
    """A scan longer than the page-by-page route takes (CITEWELL_OCR_MAX_PAGES, lowered here to 2 for
    a 3-page scan): the audit starts its re-ingest and the chain reads it as any upload is read, by
    one asynchronous Textract job (the audit itself calls no Textract)."""
    monkeypatch.setenv("CITEWELL_OCR_MAX_PAGES", "2")
    fake = textract["fake"]
    upload(aws, "survey.pdf", scanned(3))
    pump(aws)
    fake.finish()
    resume(aws, textract)
    pump(aws)
    s = services()
    revision = active("survey.pdf")
    s.index.delete_revision(TENANT, "survey.pdf", revision)
    s.chunks.delete_chunks(TENANT, "survey.pdf", revision)
    aws["calls"].made.clear()
    reply = run_audit()
    assert audit_refusals(aws, function_roles) == []
    (finding,) = [f for f in logged.findings if f["kind"] == "missing_revision"]
    assert finding["started"] and not finding["repaired"] and "repair started: upload" in finding["detail"]
    assert {f["kind"] for f in logged.findings} == {"missing_revision", "unused_embeddings"}  # the records' vectors
    assert reply == {"ok": True, "findings": 2, "repaired": 1, "started": 1}
    assert not any(service == "textract" for caller, service, *_ in aws["calls"].made if caller == "audit")
    pump(aws)
    (job,) = fake.finish()
    resume(aws, textract)
    pump(aws)
    record = services().documents.get_document(TENANT, "survey.pdf")
    assert record.status is DocumentStatus.PUBLISHED and record.active_revision != revision
    assert services().index.count(TENANT, "survey.pdf", record.active_revision) == record.chunk_count > 0
    assert run_audit() == {"ok": True, "findings": 0, "repaired": 0}, logged.findings


def test_the_audit_writes_raw_only_by_copying_what_raw_holds(function_roles):
    """The one raw/ grant of the audit: a copy of a stored upload. A put of its own bytes, or a
    copy of a stage's artifact into raw/, is refused; and it writes no stage's output."""
    from tests.aws_roles import permitted

    audit, key = function_roles["audit"], f"arn:aws:s3:::{BUCKET}/raw/{TENANT}/handbook.md/{'6' * 32}"
    assert permitted(audit, "s3:PutObject", key, {"s3:x-amz-copy-source": f"{BUCKET}/raw/{TENANT}/handbook.md/{'7' * 32}"})
    assert not permitted(audit, "s3:PutObject", key)
    assert not permitted(audit, "s3:PutObject", key, {"s3:x-amz-copy-source": f"{BUCKET}/parsed/{TENANT}/handbook.md/{'7' * 32}"})
    assert not permitted(audit, "s3:PutObject", key, {"s3:x-amz-copy-source": f"elsewhere/raw/{TENANT}/handbook.md/{'7' * 32}"})
    for prefix in ("parsed", "chunks", "embedded", "ocr"):
        assert not permitted(audit, "s3:PutObject", f"arn:aws:s3:::{BUCKET}/{prefix}/{TENANT}/handbook.md/{'6' * 32}")
    assert not permitted(audit, "textract:DetectDocumentText", "*")


def test_a_re_ingest_is_not_sent_again_for_a_document_whose_latest_upload_failed(aws, logged, run_audit, function_roles):
    """A re-ingest the chain failed (or any failed upload) leaves the record failed: the next audit
    does not send the served file round again every run, it says it could not repair it."""
    from citewell.models.documents import ErrorInfo

    served(aws)
    index_rows_and_chunk_records_lost(aws)
    aged("handbook.md", status=DocumentStatus.FAILED, error=ErrorInfo(code="parse_error", message="unreadable"))
    aws["calls"].made.clear()
    reply = run_audit()
    assert audit_refusals(aws, function_roles) == []
    (finding,) = [f for f in logged.findings if f["kind"] == "missing_revision"]
    assert not finding["repaired"] and not finding["started"] and "latest upload failed (parse_error)" in finding["detail"]
    assert not reply["ok"] and "started" not in reply
    assert not any(op == "CopyObject" for caller, _, op, _ in aws["calls"].made if caller == "audit")


def test_nothing_is_sent_when_the_served_upload_is_gone_too(aws, logged, run_audit, function_roles):
    """Chunk records and the stored file both lost: the audit says it cannot re-ingest, registers
    no upload and leaves the record as it was."""
    served(aws)
    before = services().documents.get_document(TENANT, "handbook.md")
    index_rows_and_chunk_records_lost(aws)
    aws["s3"].delete_object(Bucket=BUCKET, Key=f"raw/{TENANT}/handbook.md/{before.active_upload}")
    reply = run_audit()
    assert audit_refusals(aws, function_roles) == []
    (finding,) = [f for f in logged.findings if f["kind"] == "missing_revision"]
    assert not finding["repaired"] and not finding["started"] and "raw object is gone" in finding["detail"]
    assert not reply["ok"]
    after = services().documents.get_document(TENANT, "handbook.md")
    assert (after.status, after.upload_seq, after.version) == (before.status, before.upload_seq, before.version)


def test_a_copy_of_a_missing_object_is_not_found(aws):
    from citewell.errors import NotFound
    from citewell.objects.s3 import S3ObjectStore

    store = S3ObjectStore(BUCKET, aws["s3"])
    store.put("raw/t/d/" + "8" * 32, b"stored")
    store.copy("raw/t/d/" + "8" * 32, "raw/t/d/" + "9" * 32)
    assert store.get("raw/t/d/" + "9" * 32) == b"stored"
    with pytest.raises(NotFound):
        store.copy("raw/t/d/" + "a" * 32, "raw/t/d/" + "b" * 32)
