"""POST /documents with {"url": ...} on a real citewell serve: the server fetches the page through
the guard with the operator's allow-list (CITEWELL_FETCH_ALLOW), never the caller's."""

from __future__ import annotations

import pytest

from benchmarks.loopback_site import Site, page, serving
from tests.serving import WRITE, Served


@pytest.fixture(scope="module")
def site():
    pages = {"/docs/leave.html": page("Annual leave", "Staff receive 27 days of paid annual leave."),
             "/docs/cranes.html": page("Cranes", "Error E1027 means the crane lost its heartbeat.")}
    with serving(Site(pages=pages)) as running:
        yield running


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("home"), env={"CITEWELL_FETCH_ALLOW": "127.0.0.1/32"})
    yield server
    server.stop()


def test_a_writer_adds_a_page_by_its_url_and_a_second_add_is_a_conditional_no_op(served, site):
    writer = served.token("northpier", ["staff", WRITE])
    url = f"{site.url}/docs/leave.html#annual"
    created = served.call("POST", "/documents", writer, {"url": url, "allowed_roles": ["staff"]})
    assert created.status_code == 202, created.text
    document_id = created.json()["document_id"]
    assert document_id == f"{site.url}/docs/leave.html" and created.json()["fetching"] is True
    document = served.settled(writer, document_id)
    assert document["status"] == "published" and document["title"] == "Annual leave" and document["source"] == document_id
    hits = served.call("POST", "/search", served.token("northpier", ["staff"]), {"question": "paid annual leave"}).json()["hits"]
    assert hits[0]["document_id"] == document_id
    again = served.call("POST", "/documents", writer, {"url": url, "allowed_roles": ["staff"]})
    assert again.status_code == 202
    settled = served.settled(writer, document_id)
    assert settled["status"] == "published" and settled["active_revision"] == document["active_revision"]
    assert site.requests[-1][0] == "/docs/leave.html" and "if-none-match" in site.requests[-1][1]


def test_a_refused_address_fails_the_document_with_its_reason_and_nothing_is_fetched(served, site):
    writer = served.token("northpier", ["staff", WRITE])
    before = len(site.requests)
    for url in ("http://169.254.169.254/latest/meta-data/", f"http://[::1]:{site.port}/docs/cranes.html",
                "http://10.0.0.8/"):
        created = served.call("POST", "/documents", writer, {"url": url, "allowed_roles": ["staff"]})
        assert created.status_code == 202, created.text
        document = served.settled(writer, created.json()["document_id"])
        assert document["status"] == "failed" and document["error"]["code"] == "url_refused"
    assert len(site.requests) == before


@pytest.mark.parametrize("body, status, code", [
    ({"url": "file:///etc/passwd", "allowed_roles": ["staff"]}, 400, "url_refused"),
    ({"url": "ftp://example.com/a", "allowed_roles": ["staff"]}, 400, "url_refused"),
    ({"url": "http://admin:pw@127.0.0.1/", "allowed_roles": ["staff"]}, 400, "url_refused"),
    ({"url": "http://127.0.0.1/", "source": "elsewhere", "allowed_roles": ["staff"]}, 422, None),
    ({"allowed_roles": ["staff"]}, 422, None),
])
def test_urls_that_are_not_fetched_are_a_4xx_with_a_message(served, body, status, code):
    reply = served.call("POST", "/documents", served.token("northpier", ["staff", WRITE]), body)
    assert reply.status_code == status, reply.text
    assert reply.json()["error"]["message"]
    if code:
        assert reply.json()["error"]["code"] == code


def test_a_reader_cannot_make_the_server_fetch(served, site):
    before = len(site.requests)
    reply = served.call("POST", "/documents", served.token("northpier", ["staff"]),
                        {"url": f"{site.url}/docs/cranes.html", "allowed_roles": ["staff"]})
    assert reply.status_code == 403 and len(site.requests) == before
