"""Lambda entry points built on Powertools; each function's ``app.py`` only picks one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes import S3Event
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from citewell.errors import EmbedderSwitched, IndexOverloaded
from citewell.lambdas import UNTRACED
from citewell.lambdas.forms import Notified
from citewell.lambdas.pipeline import resume_ocr, run_stage
from citewell.lambdas.settings import services_from_env
from citewell.ports import ExpungingIndex


def notified_objects(record: SQSRecord, events: tuple[str, ...]) -> list[Notified]:
    """The objects (key decoded, version and ETag as sent) of the S3 notifications of these
    event kinds in one SQS message. S3's ``s3:TestEvent``, sent when notifications are
    configured, carries none."""
    body = record.json_body
    if not isinstance(body, dict) or "Records" not in body:
        return []
    # S3 sends keys form-encoded ('+' for a space); the data class hands the raw value on.
    return [Notified(key=unquote_plus(o["key"]), version_id=o.get("versionId"), etag=o.get("eTag"))
            for o in (r.s3.get_object for r in S3Event(body).records if r.event_name.startswith(events))]


# A record is not started with less of the invocation left than this: it goes back to its queue
# (reported failed) instead of being cut off by the timeout, which would hand back the whole batch,
# the records already done included.
RESERVE_MS = 30_000


class NoTimeLeft(Exception):
    """The invocation is too near its timeout to start this record; the queue delivers it again."""


def check_time(lambda_context: Any, reserve_ms: int = RESERVE_MS) -> None:
    """Raise :class:`NoTimeLeft` when ``lambda_context`` has less than ``reserve_ms`` left (a
    context without a clock, as in a test's, has all the time it needs)."""
    clock = getattr(lambda_context, "get_remaining_time_in_millis", None)
    left = clock() if clock is not None else None
    if left is not None and left < reserve_ms:
        raise NoTimeLeft(f"{left} ms left of the invocation, under the {reserve_ms} ms a record is given")


def stage_handler(stage: str, events: tuple[str, ...] = ("ObjectCreated",)) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """An SQS-triggered step: S3 notifications of ``events`` in, partial batch failures out: each
    record succeeds or fails alone, and one not started for lack of time (:func:`check_time`) is
    handed back alone. The ingestion stages take ``ObjectCreated``; ``delete`` takes ``ObjectRemoved``."""
    logger = Logger(service=f"citewell-{stage}")
    tracer = Tracer(service=f"citewell-{stage}")
    metrics = Metrics(namespace="citewell", service=f"citewell-{stage}")
    processor = BatchProcessor(event_type=EventType.SQS)

    @tracer.capture_method(**UNTRACED)
    def record_handler(record: SQSRecord, lambda_context: Any = None) -> None:
        check_time(lambda_context)
        _, services = services_from_env()
        for notified in notified_objects(record, events):
            key = notified.key
            try:
                done = run_stage(services, stage, key, notified)
            except EmbedderSwitched as error:  # retried by the queue: said loudly, never dropped
                logger.error("the index was migrated to another embedder: redeploy with it; the queue retries this",
                             extra={"key": key, "message_id": record.message_id, "reason": error.message})
                metrics.add_metric(name="EmbedderSwitched", unit=MetricUnit.Count, value=1)
                raise
            except IndexOverloaded as error:  # the domain's write queues stayed full: the queue delivers it later
                logger.warning("the search domain refused rows as too many requests after backing off; the queue retries this",
                               extra={"key": key, "message_id": record.message_id, "reason": error.message})
                metrics.add_metric(name="IndexOverloaded", unit=MetricUnit.Count, value=1)
                raise
            logger.info(done, extra={"key": key, "message_id": record.message_id})
            metrics.add_metric(name="ObjectsProcessed", unit=MetricUnit.Count, value=1)

    @logger.inject_lambda_context
    @tracer.capture_lambda_handler(**UNTRACED)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context))

    return handler


def ocr_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """Textract's job completions (SNS, delivered raw to the OCR queue): each runs parse again for
    the upload its job read (:func:`citewell.lambdas.pipeline.resume_ocr`); partial batch failures out."""
    logger = Logger(service="citewell-ocr")
    tracer = Tracer(service="citewell-ocr")
    metrics = Metrics(namespace="citewell", service="citewell-ocr")
    processor = BatchProcessor(event_type=EventType.SQS)

    @tracer.capture_method(**UNTRACED)
    def record_handler(record: SQSRecord, lambda_context: Any = None) -> None:
        check_time(lambda_context)
        _, services = services_from_env()
        done = resume_ocr(services, record.body)
        logger.info(done, extra={"message_id": record.message_id})
        metrics.add_metric(name="OcrJobsResumed", unit=MetricUnit.Count, value=1)

    @logger.inject_lambda_context
    @tracer.capture_lambda_handler(**UNTRACED)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context))

    return handler


class PageUnfinished(Exception):
    """An audit page stopped for time without a step done, or with no queue to send the rest to:
    the queue hands it back after its visibility timeout, and it resumes at its checkpoint."""


# A page stopped for time sends itself again with this delay and is acknowledged: the queue
# delivers the rest in seconds, not after the 90-minute visibility timeout a failed item waits.
CONTINUE_DELAY_S = 5


def audit_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The revision audit, repairing what it safely can. The schedule's invocation first asks
    the search domain to expunge deleted rows from its segments (never inside a delete; first,
    so a run whose pages outlast the time left still asks), then plans the run and sends its
    pages to the audit queue (``CITEWELL_AUDIT_QUEUE_URL``), which feeds them back to this
    function, a few at once; without a queue it runs the pages itself, as far as its time goes.
    Pages keep their progress in the table (:mod:`citewell.audit_pages`); a page stopped for
    time after a step queues itself again (:data:`CONTINUE_DELAY_S`) and resumes at its checkpoint."""
    from citewell.audit_checks import Checks, Finding, stuck_after
    from citewell.audit_pages import AuditPage, MemoryCheckpoints, plan, run_page
    from citewell.models.values import new_token
    from citewell.ports import AuditCheckpoints
    from citewell.settings import settings

    logger = Logger(service="citewell-audit")
    tracer = Tracer(service="citewell-audit")
    metrics = Metrics(namespace="citewell", service="citewell-audit")
    # A page is a batch of one: a page stopped for time is that batch failing, answered as such
    # (the queue hands it back) rather than as the invocation's error.
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def checkpoints(services: Any) -> AuditCheckpoints:
        store = services.documents
        return store if isinstance(store, AuditCheckpoints) else MemoryCheckpoints()

    def reported(findings: list[Finding]) -> int:
        for finding in findings:
            logger.warning("audit finding", extra=finding.model_dump())
        repaired = sum(f.repaired for f in findings)
        metrics.add_metric(name="AuditFindings", unit=MetricUnit.Count, value=len(findings))
        metrics.add_metric(name="AuditRepairs", unit=MetricUnit.Count, value=repaired)
        started = sum(f.started for f in findings)  # handed to the chain: not done yet (always sent: the alarm's
        metrics.add_metric(name="AuditRepairsStarted", unit=MetricUnit.Count, value=started)  # math needs it)
        return repaired

    def expunge(services: Any) -> None:
        if isinstance(services.index, ExpungingIndex):
            try:
                services.index.expunge()
            except Exception:  # the next run asks again; the audit's own result stands
                logger.exception("the index could not start expunging deleted rows")
                metrics.add_metric(name="ExpungeFailed", unit=MetricUnit.Count, value=1)

    time_left: Callable[[], float] | None = None  # the invocation's, set by the handler

    @tracer.capture_method(**UNTRACED)
    def page_handler(record: SQSRecord) -> None:
        _, services = services_from_env()
        page = AuditPage.model_validate_json(record.body)
        checks = Checks(services, page.repair, stuck_after())
        store = checkpoints(services)
        before = store.audit_progress(page.run_id, page.number)
        try:
            finished = run_page(checks, page, store, time_left)
        finally:  # what a page found before it stopped is said, and not found again on resuming
            reported(checks.findings)
        if finished:
            return
        where = {"run": page.run_id, "page": page.number, "kind": page.kind}
        queue_url = settings().audit_queue_url
        # Only a page that moved on is sent again: one that cannot take a step in a whole
        # invocation goes back as a failure, so the queue's receive count ends it in the DLQ.
        if queue_url and store.audit_progress(page.run_id, page.number) > before:
            continue_page(queue_url, record.body)
            logger.info("audit page stopped for time; the rest is queued", extra=where)
            return
        logger.info("audit page stopped for time", extra=where)
        raise PageUnfinished(f"page {page.number} of run {page.run_id} resumes at its checkpoint")

    def start(services: Any, time_left: Callable[[], float] | None) -> dict[str, Any]:
        expunge(services)
        checks = Checks(services, True, stuck_after())
        run_id = new_token()
        pages = plan(checks, run_id)
        if queue_url := settings().audit_queue_url:
            sent = send_pages(queue_url, [p.model_dump_json() for p in pages])
            logger.info("audit run planned", extra={"run": run_id, "pages": sent})
            return {"run": run_id, "pages": sent}
        store = checkpoints(services)
        unfinished = sum(not run_page(checks, page, store, time_left) for page in pages)
        repaired = reported(checks.findings)
        report = {"ok": all(f.repaired or f.started for f in checks.findings), "findings": len(checks.findings),
                  "repaired": repaired}
        if started := sum(f.started for f in checks.findings):  # repairs the chain finishes: not counted as done
            report["started"] = started
        return {**report, "unfinished": unfinished} if unfinished else report

    @logger.inject_lambda_context
    @tracer.capture_lambda_handler(**UNTRACED)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        nonlocal time_left
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        time_left = (lambda: remaining() / 1000) if callable(remaining) else None
        if "Records" in event:  # pages from the audit queue
            return dict(process_partial_response(event=event, record_handler=page_handler, processor=processor,
                                                 context=context))
        return start(services_from_env()[1], time_left)

    return handler


def continue_page(queue_url: str, body: str) -> None:
    """Send the rest of a page stopped for time: the same page (its checkpoint says where it
    stands), delayed by :data:`CONTINUE_DELAY_S`. A failure to send raises, and the page goes
    back as a failed item instead; a send whose acknowledgement is lost is at worst the page
    delivered twice, which resumes at the same checkpoint."""
    import boto3

    boto3.client("sqs").send_message(QueueUrl=queue_url, MessageBody=body, DelaySeconds=CONTINUE_DELAY_S)


def send_pages(queue_url: str, bodies: list[str]) -> int:
    """Send each page as a message, up to 10 a SendMessageBatch and within its 256 KB."""
    import boto3

    client = boto3.client("sqs")
    batch: list[dict[str, str]] = []

    def flush() -> None:
        if batch:
            reply = client.send_message_batch(QueueUrl=queue_url, Entries=batch)
            if reply.get("Failed"):
                raise RuntimeError(f"the audit queue refused {len(reply['Failed'])} pages: {reply['Failed'][0]}")
            batch.clear()

    for n, body in enumerate(bodies):
        if len(batch) == 10 or sum(len(e["MessageBody"]) for e in batch) + len(body) > 240_000:
            flush()
        batch.append({"Id": str(n), "MessageBody": body})
    flush()
    return len(bodies)
