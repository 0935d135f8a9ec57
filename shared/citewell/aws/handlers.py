"""Lambda entry points built on Powertools; each function's ``app.py`` only picks one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from citewell.aws.pipeline import object_keys, run_stage
from citewell.aws.settings import services_from_env


def stage_handler(stage: str, events: tuple[str, ...] = ("ObjectCreated",)) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """An SQS-triggered step: S3 notifications of ``events`` in, partial batch failures out.
    The ingestion stages take ``ObjectCreated``; ``delete`` takes ``ObjectRemoved``."""
    logger = Logger(service=f"citewell-{stage}")
    tracer = Tracer(service=f"citewell-{stage}")
    metrics = Metrics(namespace="citewell", service=f"citewell-{stage}")
    processor = BatchProcessor(event_type=EventType.SQS)

    @tracer.capture_method
    def record_handler(record: SQSRecord) -> None:
        _, services = services_from_env()
        for key in object_keys(record.body, events):
            logger.info(run_stage(services, stage, key), extra={"key": key})
            metrics.add_metric(name="ObjectsProcessed", unit=MetricUnit.Count, value=1)

    @logger.inject_lambda_context
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context))

    return handler


def audit_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The scheduled revision audit, repairing what it safely can."""
    from citewell.audit import audit

    logger = Logger(service="citewell-audit")

    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        _, services = services_from_env()
        report = audit(services, repair=True)
        for finding in report.findings:
            logger.warning("audit finding", extra=finding.model_dump())
        return {"ok": report.ok, "findings": len(report.findings), "repaired": sum(f.repaired for f in report.findings)}

    return handler
