"""The fetch step on AWS (moto S3, SQS and DynamoDB): a URL upload's page lands in raw/ through the
guard, a refused address fails the document; the whole chain from ``POST /documents {"url"}``
through the fetch queue and function to parse and search; and the role the stack gives the
fetch function (tests/aws/test_aws_iam.py replays its calls against it)."""

from __future__ import annotations

import json
from dataclasses import replace
from urllib.parse import quote

import pytest

from benchmarks.loopback_site import Site, page, serving
from citewell.ingest.registration import register_upload
from citewell.keys import raw_key
from citewell.lambdas.fetching import fetch_message
from citewell.services import records
from tests.aws.test_aws_chain import api, aws, fetch_queued, knn_proxy, pump  # noqa: F401
from tests.aws_roles import granted_actions
from tests.conftest import make_services, moto_bucket, moto_dynamodb


@pytest.fixture
def aws_services(tmp_path, embedder, monkeypatch):
    services = make_services(tmp_path, embedder)
    with moto_bucket(monkeypatch) as objects, moto_dynamodb(monkeypatch) as metadata:
        yield replace(services, objects=objects, **records(metadata))


def queued(services, url: str) -> tuple[object, str]:
    upload = register_upload(services, document_id=url, tenant="northpier", allowed_roles=frozenset({"staff"}), source=url)
    return upload, json.dumps({"tenant": "northpier", "document_id": url, "upload_id": upload.upload_id})


def test_a_queued_url_is_fetched_into_the_upload_bucket_with_its_validators(aws_services, monkeypatch):
    monkeypatch.setenv("CITEWELL_FETCH_ALLOW", "127.0.0.1/32")
    with serving(Site(pages={"/leave.html": page("Annual leave", "Staff receive 27 days.")})) as site:
        upload, body = queued(aws_services, f"{site.url}/leave.html")
        assert fetch_message(aws_services, body) == "fetched"
    stored = aws_services.objects.get(raw_key("northpier", upload.document_id, upload.upload_id))
    assert b"27 days" in stored
    intent = aws_services.uploads.get_upload("northpier", upload.document_id, upload.upload_id)
    assert intent.fetched.etag == site.etag("/leave.html")


def test_a_refused_address_fails_the_document_and_stores_nothing(aws_services, monkeypatch):
    monkeypatch.setenv("CITEWELL_FETCH_ALLOW", "127.0.0.1/32")  # the operator's range: the metadata endpoint is not in it
    upload, body = queued(aws_services, "http://169.254.169.254/latest/meta-data/")
    assert fetch_message(aws_services, body) == "failed"
    document = aws_services.documents.get_document("northpier", upload.document_id)
    assert document.status.value == "failed" and document.error.code == "url_refused"
    assert list(aws_services.objects.list("raw/")) == []


def test_a_url_its_sites_robots_txt_disallows_fails_the_document_and_is_never_requested(aws_services, monkeypatch):
    """A URL sent to ``POST /documents`` is fetched as its site's robots.txt allows, like a crawl's pages."""
    monkeypatch.setenv("CITEWELL_FETCH_ALLOW", "127.0.0.1/32")
    pages = {"/private/pay.html": page("Pay", "Salaries."), "/leave.html": page("Annual leave", "Staff receive 27 days."),
             "/robots.txt": b"User-agent: *\nDisallow: /private/\n"}
    with serving(Site(pages=pages)) as site:
        upload, body = queued(aws_services, f"{site.url}/private/pay.html")
        assert fetch_message(aws_services, body) == "failed"
        _, allowed = queued(aws_services, f"{site.url}/leave.html")
        assert fetch_message(aws_services, allowed) == "fetched"
    document = aws_services.documents.get_document("northpier", upload.document_id)
    assert document.status.value == "failed" and document.error.code == "robots" and "robots.txt" in document.error.message
    assert [path for path, _ in site.requests] == ["/robots.txt", "/robots.txt", "/leave.html"]  # the private page never
    assert [key for key in aws_services.objects.list("raw/") if "pay.html" in key] == []


def test_without_the_allow_list_loopback_is_refused_on_aws_too(aws_services, monkeypatch):
    monkeypatch.delenv("CITEWELL_FETCH_ALLOW", raising=False)
    with serving(Site(pages={"/": page("Home", "Welcome.")})) as site:
        upload, body = queued(aws_services, f"{site.url}/")
        assert fetch_message(aws_services, body) == "failed"
    assert site.requests == []


def test_the_fetch_function_may_write_raw_uploads_and_reach_no_search_domain(function_roles):
    fetch = granted_actions(function_roles["fetch"])
    assert "s3:PutObject" in fetch and not any(a.startswith(("es:", "bedrock:")) for a in fetch)
    assert not fetch & {"s3:DeleteObjectVersion", "dynamodb:BatchWriteItem", "dynamodb:Query"}  # it purges nothing
    assert "sqs:SendMessage" in granted_actions(function_roles["api"])
    puts = [s for d in function_roles["fetch"] for s in d["Statement"]
            if "s3:PutObject" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])]
    assert all(str(r).endswith(":::citewell-documents/raw/*") for s in puts
               for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]))


def test_a_url_goes_from_the_api_through_the_fetch_queue_and_function_to_parse_and_search(aws, monkeypatch):
    """API -> fetch queue -> fetch function (to a loopback server, through the operator's
    allow-list) -> raw/ -> S3's notification -> parse -> chunk -> embed -> publish -> search."""
    monkeypatch.setenv("CITEWELL_FETCH_ALLOW", "127.0.0.1/32")  # the stack's fetch_allow, on the fetch function
    site = Site(pages={"/leave.html": page("Annual leave", "Full-time staff receive 27 days of paid annual leave.")})
    with serving(site):
        url = f"{site.url}/leave.html"
        status, queued_page = api("POST", "/documents", {"url": url, "allowed_roles": ["staff"]})
        assert status == 202 and queued_page["fetching"] and queued_page["document_id"] == url, queued_page
        assert api("GET", f"/documents/{quote(url, safe='')}")[1]["document"]["status"] == "processing"
        (sent,) = fetch_queued(aws)
        assert [json.loads(r["body"]) for r in sent["Records"]] == [
            {"tenant": "northpier", "document_id": url, "upload_id": queued_page["upload_id"]}]
        assert [prefix for prefix, _ in pump(aws)] == ["raw/", "parsed/", "chunks/", "embedded/"]
        status, found = api("POST", "/search", {"question": "paid annual leave days"})
        assert status == 200 and found["hits"][0]["document_id"] == url and "27 days" in found["hits"][0]["text"]
        record = api("GET", f"/documents/{quote(url, safe='')}")[1]["document"]
        assert record["status"] == "published" and record["source"] == url and record["title"] == "Annual leave"

        # Again, unchanged: a conditional request, the served copy handed on, and nothing new published.
        assert api("POST", "/documents", {"url": url, "allowed_roles": ["staff"]})[0] == 202
        fetch_queued(aws)
        pump(aws)
        assert site.requests[-1][1].get("if-none-match") == site.etag("/leave.html")
        assert api("GET", f"/documents/{quote(url, safe='')}")[1]["document"]["active_revision"] == record["active_revision"]

    # The cloud's metadata endpoint is outside the allow-list: refused, recorded, and nothing stored.
    status, refused = api("POST", "/documents", {"url": "http://169.254.169.254/latest/meta-data/", "allowed_roles": ["staff"]})
    assert status == 202
    fetch_queued(aws)
    assert pump(aws) == []
    document = api("GET", f"/documents/{quote(refused['document_id'], safe='')}")[1]["document"]
    assert document["status"] == "failed" and document["error"]["code"] == "url_refused"
    assert api("POST", "/documents", {"url": url, "allowed_roles": ["staff"]}, groups="[staff]")[0] == 403  # a reader may not
