"""The fetch function: a URL's upload, registered by the API, fetched into the upload bucket.

The API queues ``{"tenant", "document_id", "upload_id"}``; this step loads that upload intent and
runs :func:`citewell.ingest.fetch_stage.fetch_upload` against S3 and DynamoDB, through the same guard
as the CLI with the operator's ``CITEWELL_FETCH_ALLOW`` (the stack's, never the caller's). The
bytes land under the upload's ``raw/`` key, whose notification starts parse, as an upload form's
file does. A message for an upload no longer there (a newer upload or a delete came first) is done,
and so is one delivered again after its page was stored: the stages have it from there, and a
fetch that failed now would abandon an upload that is already under way.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from citewell.fetch.client import Fetcher
from citewell.ingest.fetch_stage import fetch_upload
from citewell.keys import raw_key
from citewell.services import Services
from citewell.settings import settings


class FetchMessage(BaseModel):
    tenant: str
    document_id: str
    upload_id: str


def fetch_message(services: Services, body: str) -> str:
    """What became of one queued URL upload: ``fetched``, ``failed`` (recorded), ``gone`` or ``done`` (already)."""
    message = FetchMessage.model_validate(json.loads(body))
    upload = services.uploads.get_upload(message.tenant, message.document_id, message.upload_id)
    if upload is None:
        return "gone"
    if upload.fetched is not None and services.objects.exists(raw_key(upload.tenant, upload.document_id, upload.upload_id)):
        # a redelivery: the page was stored (its validators first) and parse has it; fetching again could only fail it
        return "done"
    config = settings()
    with Fetcher.configured(config, services.max_bytes) as fetcher:
        return "fetched" if fetch_upload(services, fetcher, upload) is not None else "failed"


def fetch_handler() -> Any:
    """SQS-fed: partial batch failures for what raised (a store's error); a refused or failed
    fetch is recorded on the document and its message is done."""
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from citewell.lambdas.settings import services_from_env

    logger = Logger(service="citewell-fetch")
    processor = BatchProcessor(event_type=EventType.SQS)

    def record_handler(record: SQSRecord) -> None:
        _, services = services_from_env()
        logger.info(fetch_message(services, record.body), extra={"message_id": record.message_id})

    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context))

    return handler
