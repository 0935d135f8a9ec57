"""``citewell serve``: the HTTP API of AWS on one machine, its upload form, and the web page.

The routes are :mod:`citewell.api.routes`, the same as the Lambda's. This package adds what
API Gateway and S3 do there: verifying the bearer token (:mod:`.tokens`), accepting the
upload form (:mod:`.uploads`) and running the ingest in a background worker (:mod:`.worker`).
"""
