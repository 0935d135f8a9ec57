"""``citewell serve`` under concurrency: requests in many threads never see each other's caller, the
embedded stores take concurrent transactions, reads during an ingest see the old revision or the
new one and never a mix, and SIGTERM during an upload finishes it or fails it cleanly."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from citewell.api.resolver import IsolatedHttpResolver
from citewell.index.sqlite import SqliteSearchIndex
from citewell.keys import parsed_key
from citewell.metadata.sqlite import SqliteMetadataStore
from citewell.models.chunks import Chunk
from citewell.models.documents import Document
from citewell.objects.folder import FolderObjectStore
from citewell.records import update_document
from tests.serve.test_serve_resume import ENV, write_lock
from tests.serving import CLEAN_EXIT, EVENTS_DIR, WRITE, Served


def _event(tenant: str) -> dict:
    event = json.loads((EVENTS_DIR / "api_request.json").read_text())
    event.update(routeKey="GET /whoami", rawPath="/whoami", body=None)
    event["requestContext"]["http"].update(method="GET", path="/whoami")
    event["requestContext"]["authorizer"]["jwt"]["claims"]["custom:tenant"] = tenant
    return event


def _resolve_in_pairs(resolver_for_thread) -> list[tuple[str, str]]:
    """Two threads resolve at once; each route waits until both are inside, then reads its event."""
    inside = threading.Barrier(2, timeout=10)
    local = threading.local()

    def resolver():
        if not hasattr(local, "app"):
            app = local.app = resolver_for_thread()

            @app.get("/whoami")
            def whoami() -> dict:
                inside.wait()  # the other thread's resolve has started by now
                time.sleep(0.05)
                return {"tenant": app.current_event.request_context.authorizer.jwt_claim["custom:tenant"]}
        return local.app

    def ask(tenant: str) -> tuple[str, str]:
        reply = resolver().resolve(_event(tenant), None)
        return tenant, json.loads(reply["body"])["tenant"]

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(ask, ["northpier", "bluefen"]))


def test_a_resolver_per_thread_never_reads_another_requests_event():
    for asked, seen in _resolve_in_pairs(IsolatedHttpResolver):
        assert asked == seen
    # The reason for it: Powertools keeps the current event on its class, so the plain resolver
    # hands one thread the other's caller even with an instance per thread.
    assert any(asked != seen for asked, seen in _resolve_in_pairs(APIGatewayHttpResolver))


def test_the_embedded_stores_take_transactions_from_many_threads(tmp_path):
    metadata, index = SqliteMetadataStore(tmp_path / "metadata.db"), SqliteSearchIndex(tmp_path / "index.db")
    documents = [Document(document_id=f"d{i}.md", tenant="t", allowed_roles=frozenset({"staff"}), title="", source="") for i in range(4)]
    for document in documents:
        metadata.save_document(document)
    rounds = 25

    def work(worker: int) -> None:
        document = documents[worker % len(documents)]
        for step in range(rounds):
            update_document(metadata, "t", document.document_id, lambda d, step=step: d.model_copy(update={"title": f"{worker}-{step}"}))
            metadata.bump_epoch("t")
            chunk = Chunk(chunk_id=f"w{worker}#0#{step}", document_id=f"w{worker}", revision=f"r{step}", tenant="t",
                          allowed_roles=frozenset({"staff"}), title="t", heading_path=[], section_index=0, index=step,
                          start=0, end=1, body_start=0, text=f"word{worker} step{step}")
            index.upsert([chunk], np.ones((1, 4), dtype=np.float32), "model@1:4")
            assert metadata.get_document("t", document.document_id) is not None

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))  # re-raises any thread's error
    assert metadata.tenant_epoch("t") == 8 * rounds
    assert sum(d.version for d in metadata.list_documents("t")) == 8 * rounds + len(documents)
    assert sum(n for *_, n in index.inventory()) == 8 * rounds


def _long_text(word: str, paragraphs: int) -> bytes:
    body = "\n\n".join(f"## Part {i}\n\nThe {word} procedure step {i} says the crew checks the mooring lines, logs the "
                       f"{word} reading and reports any fault to the harbour office before the tide turns." for i in range(paragraphs))
    return f"# Harbour procedures\n\n{body}\n".encode()


@pytest.fixture
def served(tmp_path):
    server = Served(tmp_path / "home", env={"CITEWELL_GRACE_SECONDS": "60"})
    yield server
    server.stop()


def test_reads_during_an_ingest_see_the_old_or_the_new_revision_never_a_mix(served):
    writer, reader = served.token("northpier", ["staff", WRITE]), served.token("northpier", ["staff"])
    old, new = _long_text("alpha", 30), _long_text("omega", 60)
    served.upload(writer, "procedures.md", old, ["staff"])
    old_text = served.call("GET", "/documents/procedures.md", reader).json()["text"]
    seen: dict[str, set[str]] = {"search": set(), "document": set()}
    failures: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            found = served.call("POST", "/search", reader, {"question": "mooring lines procedure step reading", "k": 50})
            if found.status_code != 200:
                failures.append(f"search {found.status_code} {found.text[:200]}")
                continue
            hits = found.json()["hits"]
            revisions = {h["revision"] for h in hits}
            words = {w for h in hits for w in ("alpha", "omega") if w in h["text"]}
            if len(revisions) > 1 or len(words) > 1:
                failures.append(f"a mixed page: {revisions} {words}")
            seen["search"] |= words
            one = served.call("GET", "/documents/procedures.md", reader)
            text = one.json()["text"] if one.status_code == 200 else ""
            if one.status_code != 200 or ("alpha" in text) == ("omega" in text):
                failures.append(f"document {one.status_code}: {text[:100]!r}")
            seen["document"] |= {w for w in ("alpha", "omega") if w in text}

    def until_read(word: str) -> None:
        """Until both kinds of read have returned ``word``'s revision (a busy machine may take
        longer than any fixed pause to answer the first reads)."""
        deadline = time.monotonic() + 60
        while not (word in seen["search"] and word in seen["document"]) and not failures and time.monotonic() < deadline:
            time.sleep(0.05)

    readers = [threading.Thread(target=read) for _ in range(6)]
    for thread in readers:
        thread.start()
    try:
        until_read("alpha")
        served.upload(writer, "procedures.md", new, ["staff"], wait=False)
        document = served.settled(writer, "procedures.md")
        until_read("omega")
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    assert not failures, failures[:5]
    assert document["status"] == "published"
    assert seen["search"] == {"alpha", "omega"} and seen["document"] == {"alpha", "omega"}  # both sides were read
    new_text = served.call("GET", "/documents/procedures.md", reader).json()["text"]
    assert "omega" in new_text and "alpha" not in new_text and new_text != old_text


def _audit(home: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "citewell", "--home", str(home), "audit", "--json"],
                          capture_output=True, text=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("grace, outcome", [(60, "published"), (1, "failed")])
def test_sigterm_during_an_upload_finishes_it_or_fails_it_cleanly(tmp_path, grace, outcome):
    """SIGTERM lands while the worker, having parsed the upload, waits to write its chunk records
    (the test holds the home's write lock, as another process's long write would); the lock is
    let go after the grace has run out (1 s) or well within it (60 s)."""
    home = tmp_path / "home"
    server = Served(home, env={"CITEWELL_GRACE_SECONDS": str(grace), **ENV})
    writer = server.token("northpier", ["staff", WRITE])
    try:
        first = server.upload(writer, "procedures.md", _long_text("alpha", 3), ["staff"])
        server.vectors_ready(writer)  # else the worker would wait for the lock writing the first one's vectors
        created = server.call("POST", "/documents", writer, {"document_id": "procedures.md", "allowed_roles": ["staff"],
                                                              "filename": "procedures.md"}).json()
        with write_lock(home):
            form = created["upload"]
            sent = httpx.post(form["url"], data=form["fields"], files={"file": ("procedures.md", _long_text("omega", 400))})
            assert sent.status_code == 204, sent.text
            parsed = FolderObjectStore(home / "objects")
            deadline = time.monotonic() + 120
            while not parsed.exists(parsed_key("northpier", "procedures.md", created["upload_id"])):
                assert time.monotonic() < deadline, server.log.read_text()
                time.sleep(0.05)
            server.process.send_signal(signal.SIGTERM)
            time.sleep(2)  # past a grace of 1 s; well within one of 60
        code = server.process.wait(180)
    finally:
        server.stop()
    assert code in CLEAN_EXIT, server.log.read_text()

    after = Served(home)
    try:
        reader = after.token("northpier", ["staff"])
        document = after.call("GET", "/documents/procedures.md", reader).json()
        assert document["document"]["status"] == outcome, document["document"]
        text = after.call("POST", "/search", reader, {"question": "mooring lines reading", "k": 5}).json()
        if outcome == "published":
            assert "omega" in document["text"] and "alpha" not in document["text"]
        else:  # the previous revision is still served, and the record says why the new one is not
            assert document["document"]["error"]["code"] == "server_stopped"
            assert document["document"]["active_revision"] == first["active_revision"]
            assert "alpha" in document["text"] and "omega" not in json.dumps(text)
    finally:
        after.stop()
    report = _audit(home)
    # nothing left behind by the stopped upload; vectors a stop did not wait for are work the next start resumes
    assert {f["kind"] for f in report["findings"]} <= {"vectors_pending"}, report
    if report["findings"]:
        subprocess.run([sys.executable, "-m", "citewell", "--home", str(home), "audit", "--repair", "--json"],
                       capture_output=True, timeout=120)
        assert _audit(home)["ok"]
