"""``citewell serve`` publishes as the CLI does: an upload is searchable by words as soon as it is
chunked and its vectors follow, so a small file uploaded while a large one embeds is found at once
(search saying the vector index is not ready); a server killed between the two steps leaves the
document published, and the next one started on the home brings its vectors, each row its own.

The first test runs the worker in-process with the real model behind a gate that holds the first
call embedding the large file, so it looks at the stores at that moment instead of guessing when
it comes. The second runs real ``citewell serve`` processes and ``kill -9``, the kill landing
while the test holds the home's write lock, so the worker cannot have written the last vectors.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import time
from pathlib import Path

import numpy as np

from citewell import leases
from citewell.embedders.minilm import MiniLMEmbedder
from citewell.errors import EmbedderUnavailable
from citewell.index.sqlite import SqliteSearchIndex
from citewell.ingest.registration import register_upload
from citewell.keys import raw_key
from citewell.metadata.sqlite import SqliteMetadataStore
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.search import search
from citewell.serve.worker import IngestWorker
from citewell.services import Services
from tests.conftest import make_services
from tests.ingest.test_ingest_stream import SMALL, GatedModel, large_text
from tests.local.test_local_storage import write_lock as index_write_lock
from tests.serve.test_serve_resume import ENV, audit, logged, write_lock
from tests.serving import CLEAN_EXIT, WRITE, Served

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
BIG = "shift-reports.txt"


def submit(worker: IngestWorker, services: Services, document_id: str, data: bytes) -> None:
    """What ``POST /documents`` and the upload form do: register the upload, store its bytes, queue it."""
    upload = register_upload(services, document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                             filename=document_id, lease=leases.current())
    services.objects.put(raw_key("northpier", document_id, upload.upload_id), data)
    worker.submit(upload)


def own_vectors(home: Path, document_id: str) -> tuple[set[str], int]:
    """The revisions ``document_id`` has rows of in the index, and how many rows hold a vector other
    than the model's for their own chunk (their revision's chunk record, in the embedding cache)."""
    metadata = SqliteMetadataStore(home / "metadata.db")
    index = sqlite3.connect(home / "index.db")
    rows = index.execute("SELECT chunk_id, revision, vector FROM chunks WHERE document_id = ?", (document_id,)).fetchall()
    index.close()
    revisions = {revision for _, revision, _ in rows}
    chunks = {(c.chunk_id, c.revision): c for revision in revisions
              for c in metadata.get_chunks("northpier", document_id, revision)}
    cached = metadata.get_embeddings(MiniLMEmbedder().identity, {c.content_hash for c in chunks.values()})
    wrong = sum(1 for chunk_id, revision, vector in rows
                if not np.allclose(np.frombuffer(vector, dtype=np.float32), cached[chunks[chunk_id, revision].content_hash]))
    return revisions, wrong


def test_a_small_upload_is_found_while_a_large_one_embeds_and_a_replacement_takes_only_its_own_vectors(tmp_path, embedder):
    home = tmp_path / "home"
    gated = GatedModel(embedder, "twistlock")
    services = make_services(home, embedder, gated)
    worker = IngestWorker(services)
    worker.start()
    try:
        submit(worker, services, BIG, large_text().encode())
        assert gated.reached.wait(300), "the worker never reached the large file's vectors"
        reader = make_services(home, embedder)  # a request's view of the home
        first = reader.documents.get_document("northpier", BIG)
        assert first.status is DocumentStatus.PUBLISHED and first.chunk_count > 128  # by words, before its vectors
        for name, text in SMALL.items():
            submit(worker, services, name, text.encode())
        # The worker is held inside the large file's first slice: the small files wait only for it.
        # A replacement of the large file, queued behind them, must never get the old text's vectors.
        submit(worker, services, BIG, large_text(1600).replace("twistlock", "bollard").encode())
        gated.release.set()
        deadline = time.monotonic() + 300
        while any(reader.documents.get_document("northpier", name).status is not DocumentStatus.PUBLISHED for name in SMALL):
            assert time.monotonic() < deadline, "the small files were not published"
            time.sleep(0.05)
        waiting = {document_id for _, document_id, _, _ in reader.index.vectorless()}
        assert BIG in waiting, "the small files waited for the large file's vectors"
        found = search(reader, STAFF, "quillaby", k=3)
        assert found.hits[0].document_id == "canteen.md"
        assert any(d.startswith("vector index not ready") for d in found.degraded), found.degraded
        outsider = search(reader, Identity(tenant="northpier", roles=frozenset({"hr"})), "quillaby")
        assert outsider.hits == [] and outsider.degraded == []  # nothing said of documents it may not read
        while reader.index.vectorless():
            assert time.monotonic() < deadline, reader.index.vectorless()
            time.sleep(0.1)
    finally:
        gated.release.set()
        worker.stop(300)
    statuses = [(o.document_id, o.status) for o in worker.outcomes]
    assert statuses == [(BIG, "published"), *[(name, "published") for name in SMALL], (BIG, "published")]
    served = reader.documents.get_document("northpier", BIG)
    assert served.active_revision != first.active_revision
    revisions, wrong = own_vectors(home, BIG)
    assert revisions == {served.active_revision} and wrong == 0  # the old revision is gone, not one row has its vector
    meaning = search(reader, STAFF, "bollard crew checked the item", k=10, lanes=("vector",))
    assert meaning.degraded == [] and any(h.document_id == BIG for h in meaning.hits)
    assert all(h.revision == served.active_revision for h in meaning.hits if h.document_id == BIG)


def test_an_upload_said_published_is_found_by_words_while_another_process_writes(tmp_path, embedder):
    """A search meeting another writer does not wait to commit rows waiting for the lexical
    index: the worker commits them before the record says published. Before, the upload was
    `published` and not found (a search while the worker wrote its vectors)."""
    home = tmp_path / "home"
    gated = GatedModel(embedder, "quillaby")
    services = make_services(home, embedder, gated)
    worker = IngestWorker(services)
    worker.start()
    try:
        submit(worker, services, "canteen.md", SMALL["canteen.md"].encode())
        assert gated.reached.wait(120), "the worker never reached the upload's vectors"
        reader = make_services(home, embedder)
        assert reader.documents.get_document("northpier", "canteen.md").status is DocumentStatus.PUBLISHED
        with index_write_lock(home / "index.db"):
            found = search(reader, STAFF, "quillaby soup", k=3, lanes=("bm25",))
        assert [h.document_id for h in found.hits] == ["canteen.md"]
    finally:
        gated.release.set()
        worker.stop(60)
    assert [(o.document_id, o.status) for o in worker.outcomes] == [("canteen.md", "published")]


def vectorless(home: Path) -> dict[str, int]:
    rows = SqliteSearchIndex(home / "index.db").vectorless()
    return {document_id: count for _, document_id, _, count in rows}


def test_a_server_killed_between_the_two_steps_leaves_the_upload_published_and_the_next_brings_its_vectors(tmp_path):
    home = tmp_path / "home"
    first = Served(home, env=ENV)
    writer, reader = first.token("northpier", ["staff", WRITE]), first.token("northpier", ["staff"])
    try:
        big = first.upload(writer, BIG, large_text(4000).encode(), ["staff"])  # settled: published by words
        assert big["status"] == "published" and vectorless(home).get(BIG), vectorless(home)
        small = first.upload(writer, "canteen.md", SMALL["canteen.md"].encode(), ["staff"])
        assert small["status"] == "published"
        left = vectorless(home).get(BIG, 0)
        assert left, "the small file waited for the large file's vectors"
        found = first.call("POST", "/search", reader, {"question": "quillaby soup", "k": 3}).json()
        assert found["hits"][0]["document_id"] == "canteen.md"
        assert any(d.startswith("vector index not ready") for d in found["degraded"]), found["degraded"]
        with write_lock(home):  # the worker's next write of vectors waits: the kill lands between the two steps
            assert vectorless(home).get(BIG), vectorless(home)
            assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        first.stop()
    record = SqliteMetadataStore(home / "metadata.db").get_document("northpier", BIG)
    assert record.status is DocumentStatus.PUBLISHED and leases.is_dead(record.lease)

    second = Served(home)
    try:
        log = logged(second, "documents that an ended process left without a vector")
        assert "ended processes: 0 resumed, 0 failed" in log, log  # published: nothing to run again
        deadline = time.monotonic() + 600
        while vectorless(home):
            assert time.monotonic() < deadline, vectorless(home)
            time.sleep(0.2)
        found = second.call("POST", "/search", reader, {"question": "twistlock crew checked the item", "k": 10}).json()
        assert found["degraded"] == [] and found["hits"][0]["document_id"] == BIG
        assert {h["revision"] for h in found["hits"] if h["document_id"] == BIG} == {big["active_revision"]}
        assert second.call("GET", f"/documents/{BIG}", reader).json()["document"] == big  # the record, untouched
        assert second.stop() in CLEAN_EXIT
    finally:
        second.stop()
    assert own_vectors(home, BIG) == ({big["active_revision"]}, 0)
    assert re.search(r"ingest \S+: ", second.log.read_text()) is None  # no upload was run again
    report = audit(home)
    assert report["ok"], report  # nothing left behind by the killed attempt


class OutageModel:
    """The real model behind a service that answers 503 to its first ``failures`` calls."""

    def __init__(self, inner, failures: int) -> None:
        self.inner, self.identity, self.failures = inner, inner.identity, failures

    def embed(self, texts):
        if self.failures:
            self.failures -= 1
            raise EmbedderUnavailable("the embedding service answered 503")
        return self.inner.embed(texts)


def test_a_model_outage_leaves_the_upload_found_by_words_and_the_idle_worker_tries_again(tmp_path, embedder, monkeypatch, caplog):
    from citewell.serve import worker as serving_worker

    monkeypatch.setattr(serving_worker, "SWEEP_SECONDS", 0.2)  # the idle minute, shortened
    home = tmp_path / "home"
    services = make_services(home, embedder, OutageModel(embedder, failures=1))
    worker = IngestWorker(services)
    worker.start()
    try:
        with caplog.at_level("WARNING", logger="citewell.serve"):
            submit(worker, services, "canteen.md", SMALL["canteen.md"].encode())
            deadline = time.monotonic() + 120
            while services.documents.get_document("northpier", "canteen.md").status is DocumentStatus.PROCESSING:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert search(services, STAFF, "quillaby", k=3, lanes=("bm25",)).hits[0].document_id == "canteen.md"
            while services.index.vectorless():  # the first slice failed; a later one, after the idle wait, succeeds
                assert time.monotonic() < deadline, services.index.vectorless()
                time.sleep(0.05)
    finally:
        worker.stop(30)
    assert [m for m in caplog.messages if "embedding published chunks failed (the embedding service answered 503)" in m]
    assert [(o.document_id, o.status) for o in worker.outcomes] == [("canteen.md", "published")]
    assert search(services, STAFF, "soup on Thursdays", k=3, lanes=("vector",)).hits[0].document_id == "canteen.md"
