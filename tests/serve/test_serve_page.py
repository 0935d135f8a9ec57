"""The web page and text replies as a real ``citewell serve`` sends them: the page ready to paint
(its stylesheet inline and named in the CSP by hash, the demo's identities in it), its files
named by hash and cached, gzip where the client accepts it and not otherwise, and the answer's
server-sent events still arriving as they are written, uncompressed."""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
from pathlib import Path

import httpx
import pytest

from benchmarks.model_server import MODEL_NAME, serve
from benchmarks.standin_model import StandInModel
from citewell.serve.compression import accepts_gzip
from citewell.serve.page import PageError, WebPage
from tests.serving import CLEAN_EXIT, WRITE, Served

LEAVE = (b"# Leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n\n"
         + b"".join(b"## Rule %d\n\nRule %d of the leave policy says leave is booked %d days ahead.\n\n" % (n, n, n)
                    for n in range(1, 40)))
PLAIN = {"Accept-Encoding": "identity"}
GZIP = {"Accept-Encoding": "gzip, deflate, br"}


@pytest.fixture(scope="module")
def model():
    model = serve(StandInModel(fault_rate=0.0))
    yield model
    model.shutdown()


@pytest.fixture(scope="module")
def served(tmp_path_factory, model):
    server = Served(tmp_path_factory.mktemp("page") / "home", demo=True,
                    env={"CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": f"{model.url}/v1",
                         "CITEWELL_OPENAI_MODEL": MODEL_NAME})
    try:
        writer = server.token("northpier", ["staff", WRITE], subject="writer")
        assert server.upload(writer, "leave.md", LEAVE, ["staff"])["status"] == "published"
        yield server
    finally:
        assert server.stop() in CLEAN_EXIT, server.log.read_text()


def raw(server: Served, method: str, path: str, headers: dict[str, str], **kwargs) -> tuple[httpx.Response, bytes]:
    """The reply and its body as sent, not decoded."""
    with server.client.stream(method, path, headers=headers, **kwargs) as reply:
        return reply, b"".join(reply.iter_raw())


def csp_sources(policy: str, directive: str) -> list[str]:
    found = next(part.split()[1:] for part in policy.split(";") if part.split() and part.split()[0] == directive)
    return found


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_page_comes_ready_to_paint(served):
    reply, body = raw(served, "GET", "/", PLAIN)
    page = body.decode()
    assert reply.status_code == 200 and "content-encoding" not in reply.headers
    assert 'rel="stylesheet"' not in page  # nothing to fetch before the first paint
    style = re.search(r"<style>(.*?)</style>", page, re.S)[1]
    assert "--accent" in style
    policy = reply.headers["content-security-policy"]
    assert sha256_source(style) in csp_sources(policy, "style-src")
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert scripts and all(sha256_source(s) in csp_sources(policy, "script-src") for s in scripts)
    assert "'unsafe-inline'" not in policy
    # the demo's people are buttons in the page, shown, each pointing at its token by its place
    assert '<div id="demo" class="panel">' in page
    buttons = re.findall(r'<button type="button" class="identity" data-tenant="([a-z]+)" data-index="(\d)">', page)
    listed = served.client.get("/demo/identities").json()
    assert [(t, int(i)) for t, i in buttons] == [(identity["tenant"], n) for n, identity in enumerate(listed)]
    assert not any(identity["token"] in page for identity in listed)  # tokens only from /demo/identities
    assert 'data-refusal-word="NOT_IN_DOCUMENTS"' in page


def test_text_is_gzipped_when_the_client_accepts_it_and_not_otherwise(served):
    token = served.token("northpier", ["staff"])
    bearer = {"Authorization": f"Bearer {token}"}
    for method, path, extra in [("GET", "/", {}), ("GET", "/openapi.json", {}),
                                ("POST", "/search", {"json": {"question": "leave booked ahead", "k": 20}})]:
        zipped, zipped_body = raw(served, method, path, {**GZIP, **bearer}, **extra)
        plain, plain_body = raw(served, method, path, {**PLAIN, **bearer}, **extra)
        refused, refused_body = raw(served, method, path, {"Accept-Encoding": "gzip;q=0, identity", **bearer}, **extra)
        assert zipped.status_code == plain.status_code == 200, (path, plain_body[:200])
        assert zipped.headers["content-encoding"] == "gzip", path
        assert int(zipped.headers["content-length"]) == len(zipped_body) < len(plain_body) / 2, path
        assert "content-encoding" not in plain.headers and "content-encoding" not in refused.headers, path
        assert int(plain.headers["content-length"]) == len(plain_body), path
        for reply in (zipped, plain, refused):
            assert "accept-encoding" in reply.headers["vary"].lower(), path
        if path != "/search":  # a search's reply names its own timing
            assert gzip.decompress(zipped_body) == plain_body == refused_body, path
        else:
            assert gzip.decompress(zipped_body).startswith(b'{"hits"')
    small, small_body = raw(served, "GET", "/me", {**GZIP, **bearer})  # a few bytes: not worth it
    assert small.status_code == 200 and "content-encoding" not in small.headers and small_body.startswith(b"{")


def test_the_pages_files_are_named_by_their_hash_and_kept(served):
    page = served.client.get("/", headers=PLAIN).text
    script = re.search(r'<script src="(/static/app\.js\?v=[0-9a-f]{12})" defer>', page)[1]
    named = served.client.get(script, headers=GZIP)
    assert named.status_code == 200 and named.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert named.headers["content-encoding"] == "gzip" and "use strict" in named.text
    unnamed = served.client.get("/static/app.js", headers=GZIP)
    assert unnamed.headers["cache-control"] == "no-cache" and unnamed.content == named.content
    again = served.client.get("/static/app.js", headers={**GZIP, "If-None-Match": unnamed.headers["etag"]})
    assert again.status_code == 304 and not again.content
    page_again = served.client.get("/", headers={"If-None-Match": served.client.get("/").headers["etag"]})
    assert page_again.status_code == 304
    assert served.client.get("/static/%2e%2e/index.html").status_code == 404
    assert served.client.get("/static/.hidden.js").status_code == 404
    assert served.client.get("/static/nothing.js").status_code == 404


def test_the_answers_events_still_arrive_as_they_are_written(served, model):
    """With gzip accepted, the events go uncompressed and at once: the first draft arrives while
    the model is still writing (a word a second), before the rest of the answer exists."""
    token = served.token("northpier", ["staff"])
    model.token_seconds = 1.0
    try:
        with served.client.stream("POST", "/query", json={"question": "How many days of paid annual leave do full-time staff get?"},
                                  headers={**GZIP, "Accept": "text/event-stream", "Authorization": f"Bearer {token}"}) as reply:
            assert reply.status_code == 200 and "content-encoding" not in reply.headers
            assert reply.headers["content-type"].startswith("text/event-stream")
            chunks = reply.iter_raw()
            first = next(chunks)
            model.token_seconds = 0.0
            rest = b"".join(chunks)
    finally:
        model.token_seconds = 0.005
    assert first.startswith(b"event: draft\n") and b"event: final" not in first
    assert b"event: final" in rest and b"27 days" in rest


@pytest.mark.parametrize("header, accepted", [
    ("gzip", True), ("GZIP", True), ("x-gzip", True), ("br, gzip;q=0.5", True), ("*", True), ("deflate, *;q=0.1", True),
    ("", False), ("identity", False), ("br", False), ("gzip;q=0", False), ("gzip;q=0.0, *", False), ("*;q=0", False),
    ("gzip;q=nonsense", False),
])
def test_accept_encoding_is_read_as_rfc_9110_says(header, accepted):
    assert accepts_gzip(header) is accepted


def test_a_page_without_the_pieces_the_server_fills_in_is_refused(tmp_path: Path):
    (tmp_path / "app.css").write_text("body { margin: 0 }")
    (tmp_path / "index.html").write_text("<html><head></head><body></body></html>")
    with pytest.raises(PageError, match="stylesheet"):
        WebPage(tmp_path).built()
