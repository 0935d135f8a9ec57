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

from citewell.errors import EmbedderSwitched
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


def audit_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The scheduled revision audit, repairing what it safely can, then asking the search
    domain to expunge deleted rows from its segments (never inside a delete)."""
    from citewell.audit import audit

    logger = Logger(service="citewell-audit")
    tracer = Tracer(service="citewell-audit")
    metrics = Metrics(namespace="citewell", service="citewell-audit")

    @logger.inject_lambda_context
    @tracer.capture_lambda_handler(**UNTRACED)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        _, services = services_from_env()
        report = audit(services, repair=True)
        for finding in report.findings:
            logger.warning("audit finding", extra=finding.model_dump())
        repaired = sum(f.repaired for f in report.findings)
        metrics.add_metric(name="AuditFindings", unit=MetricUnit.Count, value=len(report.findings))
        metrics.add_metric(name="AuditRepairs", unit=MetricUnit.Count, value=repaired)
        if isinstance(services.index, ExpungingIndex):
            try:
                services.index.expunge()
            except Exception:  # the next run asks again; the audit's own result stands
                logger.exception("the index could not start expunging deleted rows")
                metrics.add_metric(name="ExpungeFailed", unit=MetricUnit.Count, value=1)
        return {"ok": report.ok, "findings": len(report.findings), "repaired": repaired}

    return handler
