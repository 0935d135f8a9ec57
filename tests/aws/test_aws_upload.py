"""Uploads: a presigned POST signed with SigV4 for the bucket's regional endpoint, its size
limit in the signed policy, and parse refusing an oversized object from its HeadObject length
before reading a byte of it."""

from __future__ import annotations

import base64
import json

from citewell.keys import raw_key
from citewell.lambdas.settings import services_from_env
from citewell.objects.s3 import S3ObjectStore, regional_client
from tests.aws.test_aws_chain import api, aws, knn_proxy, pump  # noqa: F401


def created(document_id: str = "handbook.md") -> dict:
    status, body = api("POST", "/documents", {"document_id": document_id, "allowed_roles": ["staff"], "filename": document_id})
    assert status == 201, body
    return body


def check_form(form: dict, region: str, max_bytes: int) -> None:
    assert form["url"] == f"https://citewell-documents.s3.{region}.amazonaws.com/"
    fields = form["fields"]
    assert fields["x-amz-algorithm"] == "AWS4-HMAC-SHA256"
    assert fields["x-amz-credential"].endswith(f"/{region}/s3/aws4_request")
    policy = json.loads(base64.b64decode(fields["policy"]))
    assert ["content-length-range", 1, max_bytes] in policy["conditions"]
    assert {"key": fields["key"]} in policy["conditions"]


def test_the_upload_form_is_sigv4_on_the_regional_endpoint_with_a_size_limit(aws):
    check_form(created()["upload"], "eu-west-1", services_from_env()[1].max_bytes)
    # us-east-1 is where a default client signs for the global endpoint; the stores' client does not.
    store = S3ObjectStore("citewell-documents", regional_client("us-east-1"))
    check_form(store.upload_form("raw/northpier/a/b", 1000, 900), "us-east-1", 1000)


def test_an_object_over_the_limit_is_refused_before_it_is_read(aws, monkeypatch):
    monkeypatch.setenv("CITEWELL_MAX_BYTES", "64")
    services_from_env.cache_clear()
    body = created()
    assert body["max_bytes"] == 64
    policy = json.loads(base64.b64decode(body["upload"]["fields"]["policy"]))
    assert ["content-length-range", 1, 64] in policy["conditions"]
    key = raw_key("northpier", "handbook.md", body["upload_id"])
    # S3 enforces the signed range on the POST; an object put past it (another writer) is still refused.
    aws["s3"].put_object(Bucket="citewell-documents", Key=key, Body=b"# Leave\n\n" + b"words " * 40)
    pump(aws)
    status, one = api("GET", "/documents/handbook.md")
    assert status == 200 and one["document"]["status"] == "failed" and one["document"]["error"]["code"] == "too_large"
    reads = [(op, p.get("Key")) for caller, service, op, p in aws["calls"].made if caller == "parse" and service == "s3"]
    assert ("HeadObject", key) in reads and ("GetObject", key) not in reads, reads
