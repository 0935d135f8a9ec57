"""The Lambda runtime: the functions' handlers (the stages, the API, the fetch step, the audit, the
index migration), the stage pipeline, the upload form, and the function's settings and the services
built from them once per container (:func:`citewell.lambdas.settings.services_from_env`, through
:func:`citewell.deployments.open_aws`, beside :func:`~citewell.deployments.open_local`). It runs on
the AWS adapters (:mod:`citewell.objects.s3`, :mod:`citewell.metadata.dynamodb`,
:mod:`citewell.index.opensearch`, :mod:`citewell.ocr.textract`); ``functions/*/app.py`` pick its handlers."""

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
