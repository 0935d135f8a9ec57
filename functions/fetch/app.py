"""The fetch step: a URL's upload, queued by the API, fetched into the upload bucket (raw/)."""

from citewell.lambdas.fetching import fetch_handler

lambda_handler = fetch_handler()
