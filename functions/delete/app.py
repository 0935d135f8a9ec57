"""S3 removal of an upload: the deletion cascade for its document."""

from citewell.aws.handlers import removal_handler

lambda_handler = removal_handler()
