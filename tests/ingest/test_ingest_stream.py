"""Searchable as it goes: a document is published by words as soon as it is chunked and its vectors
follow; small files never wait for a large one; Ctrl-C keeps what was published.

Real stores, the real model, real `citewell ingest` processes and signals. The one instrument is a
gate around the real model that holds the first call embedding the large file, so the test looks
at the home at that moment instead of guessing when it comes.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from citewell.answers.service import ask
from citewell.deployments import open_local
from citewell.errors import CitewellError, EmbedderUnavailable
from citewell.index.sqlite import SqliteSearchIndex
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.chunks import Chunk
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.search import search
from tests.conftest import make_services

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
MODEL = "all-MiniLM-L6-v2-int8-onnx@1.0.0:384"
SMALL = {
    "canteen.md": "# Canteen\n\nThe canteen serves quillaby soup on Thursdays.\n",
    "parking.md": "# Parking\n\nThe garnet car park closes at ten in the evening.\n",
    "leave.md": "# Leave\n\nStaff receive 27 days of annual leave, booked through the rota office.\n",
}


def large_text(sentences: int = 2500) -> str:
    topics = ["crane", "quay", "reefer", "gantry", "berth", "lashing", "spreader", "twistlock"]
    return " ".join(f"Report {n} says the {topics[n % 8]} crew checked item {n * 7 % 1000} in shift {n % 3}."
                    for n in range(sentences))


class GatedModel:
    """The real model, held at the first call that embeds text of the large file until released."""

    def __init__(self, inner, word: str) -> None:
        self.inner, self.identity, self.word = inner, inner.identity, word
        self.reached, self.release = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.word in t for t in texts) and not self.release.is_set():
            self.reached.set()
            assert self.release.wait(600), "the test never released the model"
        return self.inner.embed(texts)


class DownModel:
    """A model service that is down for texts of the large file."""

    def __init__(self, inner, word: str) -> None:
        self.inner, self.identity, self.word = inner, inner.identity, word

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.word in t for t in texts):
            raise EmbedderUnavailable("the embedding service answered 503")
        return self.inner.embed(texts)


def requests_smallest_first(folder: Path) -> list[IngestRequest]:
    """As `citewell ingest FOLDER` sends them."""
    files = sorted(folder.iterdir(), key=lambda p: p.stat().st_size)
    return [IngestRequest(document_id=p.name, tenant="northpier", allowed_roles=frozenset({"staff"}), data=p.read_bytes(),
                          filename=p.name, source=p.resolve().as_uri()) for p in files]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "handbook"
    folder.mkdir()
    for name, text in SMALL.items():
        (folder / name).write_text(text)
    (folder / "shift-reports.txt").write_text(large_text())
    return folder


def test_small_files_are_found_while_the_large_one_is_still_embedding(tmp_path, embedder, folder):
    home = tmp_path / "home"
    gated = GatedModel(embedder, "twistlock")
    outcomes: list = []
    worker = threading.Thread(target=lambda: outcomes.extend(ingest(make_services(home, embedder, gated),
                                                                    requests_smallest_first(folder))))
    worker.start()
    try:
        assert gated.reached.wait(300), "the ingest never reached the large file's vectors"
        reader = make_services(home, embedder)  # another reader of the home, as a second process is
        for word, name in (("quillaby", "canteen.md"), ("garnet", "parking.md"), ("rota", "leave.md")):
            found = search(reader, STAFF, f"{word}", k=3)
            assert found.hits and found.hits[0].document_id == name, (word, found)
            assert any(d.startswith("vector index not ready") for d in found.degraded), found.degraded
        # The large file is published by words too, and citeable; the vector lane does not hold it yet.
        assert search(reader, STAFF, "twistlock crew", k=3, lanes=("bm25",)).hits[0].document_id == "shift-reports.txt"
        assert all(h.document_id != "shift-reports.txt" for h in search(reader, STAFF, "twistlock crew", k=10, lanes=("vector",)).hits)
        record = reader.documents.get_document("northpier", "shift-reports.txt")
        assert record.status is DocumentStatus.PUBLISHED and record.chunk_count > 128
        # Who may not read the documents is told nothing about them, not even that they wait.
        outsider = search(reader, Identity(tenant="northpier", roles=frozenset({"hr"})), "quillaby")
        assert outsider.hits == [] and outsider.degraded == []
        assert search(reader, Identity(tenant="bluefen", roles=frozenset({"staff"})), "quillaby").degraded == []
    finally:
        gated.release.set()
        worker.join(600)
    assert {o.document_id: (o.status, o.vectors_pending) for o in outcomes} == {
        **{name: ("published", 0) for name in SMALL}, "shift-reports.txt": ("published", 0)}
    reader = make_services(home, embedder)
    done = search(reader, STAFF, "twistlock crew", k=10, lanes=("vector",))
    assert done.degraded == [] and any(h.document_id == "shift-reports.txt" for h in done.hits)
    assert reader.index.vectorless() == []


def test_a_model_that_fails_leaves_documents_found_by_words_and_the_next_ingest_embeds_them(tmp_path, embedder, folder):
    home = tmp_path / "home"
    outcomes = {o.document_id: o for o in ingest(make_services(home, embedder, DownModel(embedder, "twistlock")),
                                                 requests_smallest_first(folder))}
    big = outcomes["shift-reports.txt"]
    assert big.status == "published" and big.vectors_pending > 0
    assert big.error.code == "embedder_unavailable" and "search by words only" in big.error.message
    reader = make_services(home, embedder)
    assert search(reader, STAFF, "twistlock crew", k=3, lanes=("bm25",)).hits[0].document_id == "shift-reports.txt"
    # ask says so too, and cites by words (the model failed on the slice the small files shared with it)
    answered = ask(reader, STAFF, "Which crew checked the twistlock?")
    assert "vector index not ready: lexical results only for 4 documents still being embedded" in answered.degraded
    assert not answered.refused and {c.document_id for c in answered.citations} == {"shift-reports.txt"}
    again = ingest(make_services(home, embedder), requests_smallest_first(folder))  # the model is back
    assert {o.status for o in again} == {"unchanged"} and reader.index.vectorless() == []
    assert any(h.document_id == "shift-reports.txt" for h in search(reader, STAFF, "twistlock crew", lanes=("vector",)).hits)


def test_a_document_waiting_for_its_vectors_is_not_ranked_below_others_for_being_new(tmp_path, embedder):
    """Fused by RRF, a row found by both lanes beat a row only the lexical lane could hold: a new
    upload whose every word the question asked for came second to an older page that shares one
    (seen by CI: the uploaded 'quillfeather allowance' document under the handbook's allowances).
    A row waiting for its vector stands in the vector lane at its lexical rank."""
    home, folder = tmp_path / "home", tmp_path / "handbook"
    folder.mkdir()
    (folder / "allowances.md").write_text("# Allowances\n\nThe travel allowance is paid monthly. The meal allowance "
                                          "is paid with the travel allowance. Every allowance is claimed in the portal.\n")
    (folder / "quillfeather.md").write_text("# Leave\n\nThe quillfeather allowance is 31 days.\n")
    older, new = sorted(requests_smallest_first(folder), key=lambda r: r.document_id)
    assert [o.vectors_pending for o in ingest(make_services(home, embedder), [older])] == [0]
    assert [o.vectors_pending for o in ingest(make_services(home, embedder, DownModel(embedder, "quillfeather")), [new])] == [1]
    reader = make_services(home, embedder)
    found = search(reader, STAFF, "quillfeather allowance", k=2)
    assert [h.document_id for h in found.hits] == ["quillfeather.md", "allowances.md"], found.hits
    assert found.hits[0].lanes.vector is None  # the lanes' own ranks are shown: it was not found by meaning
    assert any(d.startswith("vector index not ready") for d in found.degraded)


def test_vectors_go_only_to_rows_still_there(tmp_path):
    """The second step updates; it never inserts: a revision deleted (or replaced) before its
    vectors came gets none, and nothing of it comes back."""

    def chunk(n: int, revision: str, tenant: str = "northpier") -> Chunk:
        text = f"Pallet {n} of revision {revision} waits at gate {n}."
        return Chunk(chunk_id=f"log.md#0#{n}", document_id="log.md", tenant=tenant, allowed_roles=frozenset({"staff"}),
                     revision=revision, title="Log", section_index=0, index=n, heading_path=[], start=0, end=len(text),
                     body_start=0, text=text)

    index = SqliteSearchIndex(tmp_path / "index.db")
    rows = [chunk(0, "r1"), chunk(1, "r1")]
    unit = np.eye(2, 384, dtype=np.float32)
    index.upsert(rows, np.zeros((2, 384), dtype=np.float32), MODEL, pending={"log.md#0#0", "log.md#0#1"})
    assert index.vectorless() == [("northpier", "log.md", "r1", 2)]
    assert index.vectorless_documents(STAFF) == 1 and index.vectorless_documents(Identity(tenant="northpier", roles=frozenset({"hr"}))) == 0
    assert [h.chunk_id for h in index.lexical("pallet", STAFF, 5)] and index.vector(unit[0], MODEL, STAFF, 5) == []
    assert index.set_vectors("northpier", "log.md", "r1", {"log.md#0#0": unit[0]}) == 1
    assert [h.chunk_id for h in index.vector(unit[0], MODEL, STAFF, 5)] == ["log.md#0#0"]  # the other still waits
    assert index.set_vectors("northpier", "log.md", "r2", {"log.md#0#1": unit[1]}) == 0  # another revision's rows: none
    index.delete_revision("northpier", "log.md", "r1")
    assert index.set_vectors("northpier", "log.md", "r1", {"log.md#0#1": unit[1]}) == 0
    assert index.inventory() == [] and index.vectorless() == [] and index.vector(unit[1], MODEL, STAFF, 5) == []


def command(home: Path, *argv: str) -> list[str]:
    return [sys.executable, "-m", "citewell", "--home", str(home), *argv]


def hear_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as tests/cli/test_interrupts.py says: a background job ignores it


def test_ctrl_c_keeps_every_document_already_published(tmp_path, folder):
    """SIGINT to a real `citewell ingest` once the small files are published: they stay
    published and searchable; the large one is either published by words (its vectors made by the
    next ingest) or failed `interrupted`; the audit names only what still waits for its vectors, and after the
    next ingest nothing."""
    home = tmp_path / "home"
    argv = command(home, "ingest", str(folder), "--tenant", "northpier", "--allow-roles", "staff", "--json")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=hear_ctrl_c)
    published: set[str] = set()
    while published != set(SMALL) and process.poll() is None:
        time.sleep(0.05)  # polling the home, as an operator's second shell would
        if (home / "metadata.db").exists():
            try:
                documents = open_local(home, existing=True).documents.list_documents("northpier")
            except (CitewellError, sqlite3.Error):  # the home is still being created by the ingest
                continue
            published = {d.document_id.removeprefix("handbook/") for d in documents
                         if d.status is DocumentStatus.PUBLISHED and d.document_id.removeprefix("handbook/") in SMALL}
    assert process.poll() is None, "the ingest ended before the test could stop it: make the large file larger"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130 and err.decode().startswith("citewell: interrupted"), err.decode()
    payload = json.loads(out)
    statuses = {d["document_id"]: d for d in payload["documents"]}
    assert all(statuses[f"handbook/{name}"]["status"] == "published" for name in SMALL)
    services = open_local(home, existing=True)
    big = services.documents.get_document("northpier", "handbook/shift-reports.txt")
    assert big is not None
    if big.status is DocumentStatus.FAILED:
        assert big.error.code == "interrupted" and statuses["handbook/shift-reports.txt"]["error"]["code"] == "interrupted"
    else:
        assert big.status is DocumentStatus.PUBLISHED
    for word, name in (("quillaby", "handbook/canteen.md"), ("garnet", "handbook/parking.md")):
        assert search(services, STAFF, word, k=3).hits[0].document_id == name
    # The audit names what waits for its vectors (the stop came between the two steps), and nothing else.
    waiting = {d for _, d, _, _ in services.index.vectorless()}
    audit = json.loads(subprocess.run(command(home, "audit", "--json"), capture_output=True, check=False).stdout)
    assert {(f["kind"], f["document_id"]) for f in audit["findings"]} == {("vectors_pending", d) for d in waiting}
    assert audit["ok"] == (not waiting)
    again = subprocess.run(argv, capture_output=True, check=True)  # the same ingest again finishes the rest
    assert {d["status"] for d in json.loads(again.stdout)["documents"]} <= {"published", "unchanged"}
    assert open_local(home, existing=True).index.vectorless() == []
    assert json.loads(subprocess.run(command(home, "audit", "--json"), capture_output=True, check=False).stdout) == {
        "ok": True, "findings": []}
