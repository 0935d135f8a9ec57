"""The chunk stage: SQS-delivered S3 notifications in, partial batch failures out."""

from citewell.lambdas.handlers import stage_handler

lambda_handler = stage_handler("chunk")
