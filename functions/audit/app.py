"""The scheduled revision audit, with repair."""

from citewell.aws.handlers import audit_handler

lambda_handler = audit_handler()
