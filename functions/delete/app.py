"""S3 removal of an upload: the deletion cascade for its document."""

from citewell.lambdas.handlers import stage_handler

lambda_handler = stage_handler("delete", events=("ObjectRemoved",))
