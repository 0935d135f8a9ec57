"""The scheduled revision audit, with repair."""

from citewell.lambdas.handlers import audit_handler

lambda_handler = audit_handler()
