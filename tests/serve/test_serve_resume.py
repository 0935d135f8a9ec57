"""Uploads left behind by a killed server: started again on the same home, ``citewell serve``
publishes an upload that was stored but not yet published, once, and never runs a finished one
again; a deletion it had begun (the document already ``deleting``) is finished, to the last
byte; uploads and deletions of processes still running, or of another host, are left to their owners.

The kill lands mid-ingest for certain: the test holds the home's write lock (as another
process's long write would), so the worker, once it has parsed the file, waits to write its
chunk records and cannot publish before ``kill -9``. A deletion's first write, its tombstone,
is written as the killed server would have left it, with that server's lease.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from citewell import leases
from citewell.embedders.minilm import MiniLMEmbedder
from citewell.ingest.orphans import _take, _take_deletion, adopt_orphans
from citewell.ingest.registration import register_upload
from citewell.keys import parsed_key, raw_key
from citewell.leases import Lease
from citewell.metadata.sqlite import SqliteMetadataStore
from citewell.models.documents import Document, DocumentStatus
from citewell.objects.folder import FolderObjectStore
from citewell.records import update_document
from citewell.serve.worker import IngestWorker
from tests.conftest import make_services
from tests.integrity.test_deletion import traces
from tests.serving import WRITE, Served

MOORINGS = (b"# Mooring rules\n\n## Night berths\n\nNight berths at the east quay cost 14 euros a night and are booked at "
            b"the harbour master's window.\n")
ENV = {"CITEWELL_BUSY_SECONDS": "600"}  # the blocked write waits for the lock, it does not give up first


@contextmanager
def write_lock(home: Path) -> Iterator[None]:
    """The home's record store held by a writer in another process: reads go on, writes wait."""
    conn = sqlite3.connect(home / "metadata.db", isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def audit(home: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "citewell", "audit", "--home", str(home), "--json"],
                          capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout)


def logged(server: Served, line: str) -> str:
    """The server's log once it holds ``line``."""
    deadline = time.monotonic() + 60
    while line not in (log := server.log.read_text()):
        assert time.monotonic() < deadline, log
        time.sleep(0.05)
    return log


def scanned(server: Served) -> str:
    """The server's log once its worker has looked for uploads left unfinished (its first work)."""
    return logged(server, "uploads left unfinished by ended processes:")


def test_an_upload_stored_before_a_kill_is_published_once_after_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = Served(home, env=ENV)
    writer, reader = first.token("northpier", ["staff", WRITE]), first.token("northpier", ["staff"])
    created = first.call("POST", "/documents", writer, {"document_id": "moorings.md", "allowed_roles": ["staff"],
                                                        "filename": "moorings.md"})
    assert created.status_code == 201, created.text
    upload_id, form = created.json()["upload_id"], created.json()["upload"]
    objects = FolderObjectStore(home / "objects")
    try:
        with write_lock(home):
            sent = httpx.post(form["url"], data=form["fields"], files={"file": ("moorings.md", MOORINGS)}, timeout=60)
            assert sent.status_code == 204, sent.text
            deadline = time.monotonic() + 60
            while not objects.exists(parsed_key("northpier", "moorings.md", upload_id)):  # parsed; now it waits to write
                assert time.monotonic() < deadline, first.log.read_text()
                time.sleep(0.05)
            assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        first.stop()

    left = SqliteMetadataStore(home / "metadata.db").get_document("northpier", "moorings.md")
    assert left is not None and left.status is DocumentStatus.PROCESSING and left.active_revision is None
    assert left.lease is not None and left.lease.pid == first.process.pid and leases.is_dead(left.lease)
    assert objects.exists(raw_key("northpier", "moorings.md", upload_id))  # stored, never published

    second = Served(home, env=ENV)
    try:
        document = second.settled(reader, "moorings.md")
        assert document["status"] == "published", document
        found = second.call("POST", "/search", reader, {"question": "How much is a night berth at the east quay?", "k": 10})
        hits = [hit for hit in found.json()["hits"] if hit["document_id"] == "moorings.md"]
        assert hits and "14 euros" in hits[0]["text"]
        assert {hit["revision"] for hit in hits} == {document["active_revision"]}
        assert len({hit["chunk_id"] for hit in hits}) == len(hits)  # indexed once, not once per attempt
        log = scanned(second)
        assert "ended processes: 1 resumed, 0 failed" in log, log
        assert log.count("resuming the upload of moorings.md") == 1, log
        assert log.count("ingest moorings.md: published") == 1, log
        assert second.stop(signal.SIGKILL) == -signal.SIGKILL  # now killed with nothing in flight
    finally:
        second.stop()

    third = Served(home, env=ENV)
    try:
        log = scanned(third)
        assert "ended processes: 0 resumed, 0 failed" in log and "ingest moorings.md" not in log, log
        again = third.call("GET", "/documents/moorings.md", reader).json()["document"]
        assert again == document  # the record was not touched: not one more write, let alone an ingest
    finally:
        third.stop()
    report = audit(home)
    assert report["ok"], report  # the interrupted attempt left nothing behind


def ended_process_lease() -> Lease:
    """The lease of a process that has run and ended on this host."""
    done = subprocess.run([sys.executable, "-c", "from citewell import leases; print(leases.current().model_dump_json())"],
                          capture_output=True, text=True, check=True, timeout=120)
    return Lease.model_validate_json(done.stdout)


def test_only_uploads_of_ended_processes_are_taken_and_each_once(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    services = make_services(tmp_path, embedder)
    documents, objects = services.documents, services.objects
    dead, alive = ended_process_lease(), leases.current()
    assert leases.is_dead(dead) and not leases.is_dead(alive)
    owners = {"stored.md": dead, "never-sent.md": dead, "running.md": alive,
              "elsewhere.md": dead.model_copy(update={"host": dead.host + "-elsewhere"})}
    uploads = {}
    for document_id, owner in owners.items():
        upload = register_upload(services, document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                 filename=document_id, lease=owner)
        if document_id != "never-sent.md":
            objects.put(raw_key("northpier", document_id, upload.upload_id), MOORINGS)
        uploads[document_id] = upload
    before = {document_id: documents.get_document("northpier", document_id) for document_id in owners}
    other_adopter = before["stored.md"]  # what a second server read before the first took the upload over

    adopted = adopt_orphans(services, alive)
    assert [u.document_id for u in adopted.resumed] == ["stored.md"]
    assert [u.document_id for u in adopted.failed] == ["never-sent.md"]
    taken = documents.get_document("northpier", "stored.md")
    assert taken is not None and taken.lease == alive and taken.status is DocumentStatus.PROCESSING
    failed = documents.get_document("northpier", "never-sent.md")
    assert failed is not None and failed.status is DocumentStatus.FAILED and failed.error is not None
    assert failed.error.code == "upload_missing" and "ended" in failed.error.message
    for document_id in ("running.md", "elsewhere.md"):  # their owners may still finish them
        assert documents.get_document("northpier", document_id) == before[document_id]

    assert not _take(services, other_adopter, uploads["stored.md"], ended_process_lease())  # a second taker loses
    again = adopt_orphans(services, alive)
    assert again.resumed == [] and again.failed == []

    worker = IngestWorker(services)
    worker.start()
    worker.submit(adopted.resumed[0])
    worker.stop(120)
    assert [(o.document_id, o.status) for o in worker.outcomes] == [("stored.md", "published")]
    published = documents.get_document("northpier", "stored.md")
    assert published is not None and published.status is DocumentStatus.PUBLISHED
    assert adopt_orphans(services, alive).resumed == []  # finished: never run again


class FailingDisk(FolderObjectStore):
    """A folder whose one file cannot be read (EIO): the disk fails, not citewell."""

    def exists(self, key: str) -> bool:
        if "/broken.md/" in key:
            raise OSError(5, "Input/output error")
        return super().exists(key)


def test_one_document_the_store_fails_on_leaves_the_others_taken_over(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    services = make_services(tmp_path, embedder)
    services.objects = FailingDisk(tmp_path / "objects")
    dead, alive = ended_process_lease(), leases.current()
    for document_id in ("broken.md", "stored.md"):
        upload = register_upload(services, document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                 filename=document_id, lease=dead)
        services.objects.put(raw_key("northpier", document_id, upload.upload_id), MOORINGS)
    adopted = adopt_orphans(services, alive)
    assert [u.document_id for u in adopted.resumed] == ["stored.md"]  # "broken.md" sorts first and fails first


TIDES = (b"# Tide table\n\nThe slipway at the west basin floods two hours before high water; launch small boats "
         b"from the pontoon instead.\n")
SECRET = b"east quay cost 14 euros"  # only the deleted document holds it


def tombstone(home: Path, document_id: str, owner: Lease) -> None:
    """What ``delete_document`` writes first, before removing anything, as a killed process leaves it."""
    def mark(d: Document) -> Document:
        return d.model_copy(update={"status": DocumentStatus.DELETING, "active_revision": None, "error": None, "lease": owner})

    assert update_document(SqliteMetadataStore(home / "metadata.db"), "northpier", document_id, mark) is not None


def test_a_deletion_begun_before_a_kill_is_finished_after_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = Served(home, env=ENV)
    writer, reader = first.token("northpier", ["staff", WRITE]), first.token("northpier", ["staff"])
    try:
        for document_id, data in (("moorings.md", MOORINGS), ("tides.md", TIDES), ("abroad.md", TIDES)):
            assert first.upload(writer, document_id, data, ["staff"])["status"] == "published"
        assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        first.stop()
    killed = SqliteMetadataStore(home / "metadata.db").get_document("northpier", "tides.md")
    assert killed is not None and killed.lease is not None and killed.lease.pid == first.process.pid
    assert leases.is_dead(killed.lease)
    # The killed server had begun deleting moorings.md; this test process is deleting tides.md (a live owner);
    # a process on another host abroad.md (its lease proves nothing here).
    tombstone(home, "moorings.md", killed.lease)
    tombstone(home, "tides.md", leases.current())
    tombstone(home, "abroad.md", killed.lease.model_copy(update={"host": killed.lease.host + "-elsewhere"}))
    assert traces(home, [SECRET])  # the text is still on disk before the restart
    others = {d: SqliteMetadataStore(home / "metadata.db").get_document("northpier", d) for d in ("tides.md", "abroad.md")}

    second = Served(home, env=ENV)
    try:
        log = deletions_scanned(second)
        assert "deletions left unfinished by ended processes: 1 finished, 0 failed" in log, log
        assert log.count("finished the deletion of moorings.md") == 1 and "deletion of tides.md" not in log, log
        gone = second.call("GET", "/documents/moorings.md", reader)
        assert gone.status_code == 404, gone.text
        found = second.call("POST", "/search", reader, {"question": "How much is a night berth at the east quay?", "k": 10})
        assert all(hit["document_id"] != "moorings.md" for hit in found.json()["hits"])
        for document_id, before in others.items():  # their owners may still finish them
            assert SqliteMetadataStore(home / "metadata.db").get_document("northpier", document_id) == before
        assert second.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        second.stop()
    assert traces(home, [SECRET, b"moorings"]) == []  # not one byte of its text, nor its name, in any file

    third = Served(home, env=ENV)
    try:
        log = deletions_scanned(third)
        assert "deletions left unfinished by ended processes: 0 finished, 0 failed" in log, log
    finally:
        third.stop()
    report = audit(home)
    assert report["ok"], report


def deletions_scanned(server: Served) -> str:
    """The server's log once its worker has finished the deletions it took over (its first work, after uploads)."""
    return logged(server, "deletions left unfinished by ended processes:")


def test_a_deletion_of_an_ended_process_is_taken_once_and_a_live_ones_never(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    services = make_services(tmp_path, embedder)
    dead, alive = ended_process_lease(), leases.current()
    for document_id, owner in (("ended.md", dead), ("running.md", alive)):
        register_upload(services, document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                        filename=document_id, lease=owner)
        assert update_document(services.documents, "northpier", document_id, lambda d, owner=owner: d.model_copy(
            update={"status": DocumentStatus.DELETING, "lease": owner})) is not None
    seen = services.documents.get_document("northpier", "ended.md")  # what a second server read before the first took it
    running = services.documents.get_document("northpier", "running.md")

    adopted = adopt_orphans(services, alive)
    assert [d.document_id for d in adopted.deleting] == ["ended.md"] and adopted.resumed == adopted.failed == []
    taken = services.documents.get_document("northpier", "ended.md")
    assert taken is not None and taken.lease == alive and taken.status is DocumentStatus.DELETING
    assert seen is not None and not _take_deletion(services, seen, ended_process_lease())  # a second taker loses
    assert adopt_orphans(services, alive).deleting == []
    assert services.documents.get_document("northpier", "running.md") == running


def test_an_upload_whose_form_expired_unused_fails_while_the_server_idles(
        tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch) -> None:
    """A page closed mid-upload left its document `processing` for as long as the server ran."""
    from citewell.serve import worker as idle

    monkeypatch.setattr(idle, "FORM_SECONDS", 0)  # every form has expired
    monkeypatch.setattr(idle, "SWEEP_SECONDS", 0.1)
    services = make_services(tmp_path, embedder)
    mine, theirs = leases.current(), leases.current().model_copy(update={"host": "another-host"})
    for document_id, owner in (("never-sent.md", mine), ("sent.md", mine), ("elsewhere.md", theirs)):
        upload = register_upload(services, document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                 filename=document_id, lease=owner)
        if document_id == "sent.md":  # its file came: it is the queue's to run, not expired
            services.objects.put(raw_key("northpier", document_id, upload.upload_id), MOORINGS)
    worker = IngestWorker(services, mine)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while services.documents.get_document("northpier", "never-sent.md").status is DocumentStatus.PROCESSING:
            assert time.monotonic() < deadline, "the expired upload was not failed"
            time.sleep(0.05)
    finally:
        worker.stop(5)
    failed = services.documents.get_document("northpier", "never-sent.md")
    assert failed.status is DocumentStatus.FAILED and failed.error.code == "upload_missing" and "expired" in failed.error.message
    for document_id in ("sent.md", "elsewhere.md"):
        assert services.documents.get_document("northpier", document_id).status is DocumentStatus.PROCESSING
