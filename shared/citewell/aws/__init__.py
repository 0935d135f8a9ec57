"""Cloud adapters of the ports (boto3): S3 today; DynamoDB, OpenSearch and Bedrock embeddings with the AWS issue."""

from typing import TypedDict


class Capture(TypedDict):
    """Tracer.capture_method's and capture_lambda_handler's keywords (typed, so ``**`` spreads them
    into those overloaded decorators as keywords only)."""

    capture_response: bool
    capture_error: bool


# What every traced handler tells Powertools' Tracer: X-Ray keeps what a traced function returns
# or raises unless told not to (the default records both), and responses and exception objects
# carry passages, answers and whole texts.
UNTRACED: Capture = {"capture_response": False, "capture_error": False}
