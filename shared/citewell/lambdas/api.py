"""The HTTP API on AWS: API Gateway HTTP API with a JWT authorizer, and this Lambda handler.

The routes are :mod:`citewell.api.routes` (the same ones ``citewell serve`` answers); here
they get their settings and services from the function's environment, built once per
container on first use, and uploads go to S3 through a presigned POST.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from citewell.api.dependencies import ApiBackend
from citewell.api.events import check_body, handle, one_id_segment
from citewell.api.routes import build_resolver, openapi_document
from citewell.lambdas import UNTRACED
from citewell.lambdas.settings import services_from_env

__all__ = ["app", "check_body", "handler", "one_id_segment", "openapi_document"]

logger = Logger(service="citewell-api")
tracer = Tracer(service="citewell-api")


def aws_backend() -> ApiBackend:
    settings, services = services_from_env()
    objects: Any = services.objects

    def upload_form(key: str, max_bytes: int, expires_in: int, event: APIGatewayProxyEventV2) -> dict[str, Any]:
        return objects.upload_form(key, max_bytes, expires_in)  # S3 refuses the body outside 1..max_bytes itself

    return ApiBackend(settings=settings, services=services, upload_form=upload_form, fetch_page=fetch_queue())


def fetch_queue() -> Any:
    """A URL's upload goes to the fetch function through its queue (``citewell.lambdas.fetching``);
    a stack without one takes no URLs (400)."""
    from citewell.settings import settings

    queue_url = settings().fetch_queue_url
    if not queue_url:
        return None
    import json

    import boto3

    client = boto3.client("sqs")

    def send(upload: Any) -> None:
        client.send_message(QueueUrl=queue_url, MessageBody=json.dumps(
            {"tenant": upload.tenant, "document_id": upload.document_id, "upload_id": upload.upload_id}))

    return send


app = build_resolver(aws_backend)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler(**UNTRACED)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(app, event, context)


if __name__ == "__main__":
    print(openapi_document())
