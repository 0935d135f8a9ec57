"""The HTTP API: documents, search, query and citations, behind a JWT authorizer."""

from citewell.lambdas.api import handler as lambda_handler

__all__ = ["lambda_handler"]
