"""The embedded stores under contention and after crashes: a read never waits for a writer, a
write behind another says Busy, compaction admits a log it could not truncate, and a write
killed before its rename leaves a temporary that can be found and removed."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from citewell.errors import Busy, InvalidInput
from citewell.index.sqlite import SqliteSearchIndex
from citewell.metadata.sqlite import SqliteMetadataStore
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity
from citewell.objects.folder import FolderObjectStore
from citewell.settings import InvalidSetting
from tests.conftest import moto_bucket

MODEL = "all-MiniLM-L6-v2-int8-onnx@1.0.0:384"
STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))

# Holds BEGIN IMMEDIATE on every database named on the command line until stdin closes.
_HOLD_WRITE_LOCK = """
import sqlite3, sys
held = [sqlite3.connect(path, isolation_level=None) for path in sys.argv[1:]]
for conn in held:
    conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
"""

# Calls put() and is SIGKILLed by itself after the bytes are written, before the rename.
_KILLED_PUT = """
import os, signal, sys
from pathlib import Path
from citewell.objects.folder import FolderObjectStore

store = FolderObjectStore(Path(sys.argv[1]))

def die_before_rename(event, args):
    if event == "os.rename":  # os.replace raises this audit event before it renames
        os.kill(os.getpid(), signal.SIGKILL)

sys.addaudithook(die_before_rename)
store.put("raw/northpier/big.pdf", b"%PDF" * 1_000_000)
"""


@contextmanager
def write_lock(*paths: Path) -> Iterator[None]:
    """Another process holds the write lock on each database while the block runs."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITE_LOCK, *map(str, paths)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.communicate(timeout=10)


def chunk(n: int, text: str, doc: str = "handbook.md") -> Chunk:
    return Chunk(chunk_id=f"{doc}#0#{n}", document_id=doc, tenant="northpier", allowed_roles=frozenset({"staff"}), revision="r1",
                 title="Handbook", section_index=0, index=n, heading_path=["Leave"], start=0, end=len(text), body_start=0, text=text)


def load(index: SqliteSearchIndex) -> None:
    rows = [chunk(0, "Staff receive 27 days of annual leave."), chunk(1, "Carried days expire in March.")]
    index.upsert(rows, np.eye(len(rows), 384, dtype=np.float32), MODEL)
    index.flush()  # as an ingest does at the end of its batch


# -- 1. reads never write -------------------------------------------------------------------


def test_a_search_opens_and_reads_behind_a_long_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWELL_BUSY_SECONDS", "5")
    load(SqliteSearchIndex(tmp_path / "index.db"))
    SqliteMetadataStore(tmp_path / "metadata.db")
    with write_lock(tmp_path / "index.db", tmp_path / "metadata.db"):
        start = time.monotonic()
        index = SqliteSearchIndex(tmp_path / "index.db")
        assert index.lexical("annual leave", STAFF, 5)[0].chunk_id == "handbook.md#0#0"
        assert index.vector(np.eye(1, 384, dtype=np.float32)[0], MODEL, STAFF, 1)[0].chunk_id == "handbook.md#0#0"
        assert SqliteMetadataStore(tmp_path / "metadata.db").get_document("northpier", "handbook.md") is None
        assert time.monotonic() - start < 2  # WAL readers do not queue behind the writer


def test_rows_waiting_for_the_lexical_index_never_make_a_search_wait_for_a_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITEWELL_BUSY_SECONDS", "5")
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index)
    moorings = chunk(0, "Moorings at berth 4 are booked a week ahead.", doc="moorings.md")
    index.upsert([moorings], np.eye(1, 384, 5, dtype=np.float32), MODEL)  # published, not yet in the lexical index
    reader = SqliteSearchIndex(tmp_path / "index.db")
    with write_lock(tmp_path / "index.db"):
        start = time.monotonic()
        assert reader.lexical("annual leave", STAFF, 5)[0].chunk_id == "handbook.md#0#0"
        assert reader.vector(np.eye(1, 384, 5, dtype=np.float32)[0], MODEL, STAFF, 1)[0].document_id == "moorings.md"
        assert time.monotonic() - start < 2  # it could not write the waiting row, and did not wait to
    assert reader.lexical("moorings berth", STAFF, 1)[0].document_id == "moorings.md"  # the writer let go


@pytest.mark.parametrize("round_", range(20))  # the race is narrow: many rounds make a miss rare
def test_first_opens_of_a_new_file_all_succeed(tmp_path: Path, round_: int) -> None:
    path, errors = tmp_path / "index.db", []
    barrier = threading.Barrier(8)

    def open_and_load() -> None:
        try:
            barrier.wait()
            load(SqliteSearchIndex(path))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=open_and_load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert SqliteSearchIndex(path).count("northpier", "handbook.md", "r1") == 2


def test_a_file_in_another_format_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "index.db")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(InvalidInput, match="storage format 99"):
        SqliteSearchIndex(tmp_path / "index.db")


# -- 2. a busy database says so -------------------------------------------------------------


def test_a_write_behind_another_write_is_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWELL_BUSY_SECONDS", "0.2")
    index, metadata = SqliteSearchIndex(tmp_path / "index.db"), SqliteMetadataStore(tmp_path / "metadata.db")
    with write_lock(tmp_path / "index.db", tmp_path / "metadata.db"):
        start = time.monotonic()
        with pytest.raises(Busy, match=r"is busy with another write .*; try again") as raised:
            load(index)
        assert raised.value.code == "busy" and str(tmp_path) in raised.value.message
        with pytest.raises(Busy):
            metadata.delete_document("northpier", "handbook.md")  # a single statement, no transaction
        assert time.monotonic() - start < 3
    load(index)  # the lock is gone: the same store writes again
    assert index.count("northpier", "handbook.md", "r1") == 2


def test_the_busy_timeout_must_be_a_number(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWELL_BUSY_SECONDS", "soon")
    with pytest.raises(InvalidSetting, match="CITEWELL_BUSY_SECONDS"):
        SqliteSearchIndex(tmp_path / "index.db")


# -- 3. checkpoint results are not ignored --------------------------------------------------


def test_compact_reports_a_log_pinned_by_a_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWELL_BUSY_SECONDS", "0.2")
    path = tmp_path / "index.db"
    wal = Path(f"{path}-wal")
    index = SqliteSearchIndex(path)
    load(index)
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM chunks").fetchone()  # a snapshot that pins the log
    index.delete_document("northpier", "handbook.md")
    assert index.compact(removed=True) is False
    assert wal.stat().st_size > 0
    reader.execute("COMMIT")
    assert index.compact(removed=True) is True
    assert wal.stat().st_size == 0
    reader.close()


# -- 4. unfinished object writes are visible ------------------------------------------------


def test_a_put_killed_before_its_rename_leaves_a_visible_temporary(tmp_path: Path) -> None:
    root = tmp_path / "objects"
    killed = subprocess.run([sys.executable, "-c", _KILLED_PUT, str(root)], timeout=60)
    assert killed.returncode == -signal.SIGKILL
    store = FolderObjectStore(root)
    assert list(store.list("raw/")) == []
    [(key, age)] = store.temporaries("raw/")
    assert key.startswith("raw/northpier/.tmp-") and 0 <= age < 60
    assert store.get(key) == b"%PDF" * 1_000_000  # the raw bytes a killed write leaves behind
    assert store.delete(key) == 1
    assert store.temporaries() == [] and not any(root.rglob(".tmp-*"))


def test_temporaries_have_an_age_and_honour_the_prefix(tmp_path: Path) -> None:
    store = FolderObjectStore(tmp_path / "objects")
    store.put("raw/northpier/leave.md", b"done")
    store.put("parsed/northpier/leave.md/abc.json", b"{}")
    folder = tmp_path / "objects" / "raw" / "northpier"
    fd, name = tempfile.mkstemp(dir=folder, prefix=".tmp-")  # exactly what put() leaves when killed
    os.write(fd, b"half")
    os.close(fd)
    hour_ago = time.time() - 3600
    os.utime(name, (hour_ago, hour_ago))
    [(key, age)] = store.temporaries()
    assert key == f"raw/northpier/{Path(name).name}" and 3590 < age < 3700
    assert store.temporaries("raw/northpier/") == [(key, pytest.approx(age, abs=10))]
    assert store.temporaries("parsed/") == [] and store.temporaries("raw/nobody/") == []
    assert list(store.list("raw/")) == ["raw/northpier/leave.md"]


def test_listing_a_missing_folder_returns_nothing(tmp_path: Path) -> None:
    store = FolderObjectStore(tmp_path / "objects")
    store.put("raw/northpier/leave.md", b"done")
    assert list(store.list("raw/nobody/")) == []
    assert list(store.list("raw/northpier/leave.md/below")) == []  # through a file
    shutil.rmtree(tmp_path / "objects")
    assert list(store.list("")) == [] and store.temporaries() == []


def test_listing_survives_folders_removed_while_it_walks(tmp_path: Path) -> None:
    store = FolderObjectStore(tmp_path / "objects")
    stop, failures = threading.Event(), []

    def churn() -> None:  # documents come and go, as deletions run beside an audit
        while not stop.is_set():
            for n in range(20):
                store.put(f"raw/northpier/d{n}/sub/leave.md", b"x")
            shutil.rmtree(tmp_path / "objects" / "raw" / "northpier", ignore_errors=True)

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            try:
                list(store.list("raw/"))
                store.temporaries("raw/")
            except OSError as error:
                failures.append(error)
    finally:
        stop.set()
        worker.join()
    assert failures == []


def test_delete_leaves_no_folder_named_after_the_document(tmp_path: Path) -> None:
    store = FolderObjectStore(tmp_path / "objects")
    store.put("chunks/northpier/quokka-memo.md/u1.json", b"[]")
    store.put("chunks/northpier/handbook.md/u1.json", b"[]")
    assert store.delete("chunks/northpier/quokka-memo.md/u1.json") == 1
    assert not (tmp_path / "objects" / "chunks" / "northpier" / "quokka-memo.md").exists()
    assert (tmp_path / "objects" / "chunks" / "northpier" / "handbook.md").is_dir()
    assert store.delete("chunks/northpier/handbook.md/u1.json") == 1
    assert list((tmp_path / "objects").iterdir()) == []  # the root itself stays


def test_puts_and_deletes_in_one_folder_race_safely(tmp_path: Path) -> None:
    store, failures = FolderObjectStore(tmp_path / "objects"), []

    def churn(name: str) -> None:  # a delete may empty and remove the folder another put is entering
        try:
            for _ in range(300):
                store.put(f"raw/northpier/memo.md/{name}", b"x")
                store.delete(f"raw/northpier/memo.md/{name}")
        except OSError as error:
            failures.append(error)

    workers = [threading.Thread(target=churn, args=(f"u{n}.md",)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failures == [] and store.temporaries() == [] and list(store.list("")) == []


def test_s3_unfinished_multipart_uploads_are_listed_and_aborted(monkeypatch: pytest.MonkeyPatch) -> None:
    with moto_bucket(monkeypatch, "citewell-uploads") as s3:
        client = s3.client
        upload = client.create_multipart_upload(Bucket="citewell-uploads", Key="raw/northpier/big.pdf")
        client.upload_part(Bucket="citewell-uploads", Key="raw/northpier/big.pdf", UploadId=upload["UploadId"],
                           PartNumber=1, Body=b"%PDF" * 256)
        client.create_multipart_upload(Bucket="citewell-uploads", Key="parsed/northpier/big.pdf/abc.json")
        assert list(s3.list("raw/")) == []
        [(key, age)] = s3.temporaries("raw/")
        assert key == f"raw/northpier/big.pdf?uploadId={upload['UploadId']}" and age >= 0
        assert s3.delete(key) == 1
        assert s3.temporaries("raw/") == [] and len(s3.temporaries()) == 1
        assert s3.delete(key) == 0


def test_space_that_deletions_freed_goes_back_to_the_disk_once_it_is_most_of_the_file(tmp_path):
    """A 20 MB file deleted mid-ingest left metadata.db at 164 MB, 99.5% of it free pages."""
    store = SqliteMetadataStore(tmp_path / "metadata.db")
    vectors = {f"{i:064x}": np.full(384, i, dtype=np.float32) for i in range(14_000)}  # about 21 MB
    store.put_embeddings("model@1", vectors)
    store.put_embeddings("model@1", {"kept": np.ones(384, dtype=np.float32)})
    store.compact(removed=False)
    full = (tmp_path / "metadata.db").stat().st_size
    store.delete_embeddings("model@1", set(vectors))
    assert store.compact(removed=False)
    assert (tmp_path / "metadata.db").stat().st_size < full / 4
    assert set(store.get_embeddings("model@1", ["kept", "0" * 64])) == {"kept"}


def test_a_removal_leaves_no_copy_of_its_text_in_the_unused_space_of_live_pages(tmp_path: Path) -> None:
    """``secure_delete`` zeroes a deleted cell, not the copy a b-tree rebalance left on the page
    the row moved from: after churn like an ingest's (rows in, states updated, documents out)
    deleted words stayed on live leaf pages. The compaction after a removal rewrites the file."""
    import random
    import string

    from citewell.sqlite import compact_file, connect

    conn = connect(tmp_path / "churn.db")
    conn.execute("CREATE TABLE chunks (id TEXT PRIMARY KEY, doc TEXT, state TEXT, body TEXT)")
    conn.execute("CREATE INDEX chunks_doc ON chunks (doc, state)")
    conn.execute("CREATE TABLE answers (id TEXT PRIMARY KEY, question TEXT, answer TEXT)")
    rng = random.Random(7)  # a churn that leaves five deleted markers behind on this SQLite

    def word(n: int) -> str:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))

    live: dict[str, str] = {}
    deleted: list[str] = []
    for _ in range(3000):
        roll = rng.random()
        if roll < 0.3:
            doc, marker = word(6), "mk" + word(14)
            live[doc] = marker
            for _ in range(rng.randint(1, 6)):
                body = " ".join(word(rng.randint(3, 9)) for _ in range(rng.randint(10, 900)))
                conn.execute("INSERT INTO chunks VALUES (?, ?, 'pending', ?)", (word(20), doc, f"{body} {marker}"))
            conn.execute("INSERT INTO answers VALUES (?, ?, ?)", (word(12), f"what {marker}", f"answer {marker}"))
        elif roll < 0.6 and live:
            conn.execute("UPDATE chunks SET state = ? WHERE doc = ?", (rng.choice(["embedded", "published"]), rng.choice(list(live))))
        elif roll < 0.75 and live:
            doc = rng.choice(list(live))
            marker = live.pop(doc)
            conn.execute("DELETE FROM chunks WHERE doc = ?", (doc,))
            conn.execute("DELETE FROM answers WHERE answer = ?", (f"answer {marker}",))
            deleted.append(marker)

    def left() -> list[str]:
        data = (tmp_path / "churn.db").read_bytes()
        return [m for m in deleted if m.encode() in data]

    assert compact_file(conn, removed=False)  # the log only: what secure_delete alone leaves
    assert left(), "this churn no longer leaves stale copies: the test no longer shows the hole"
    assert compact_file(conn, removed=True)
    assert left() == []
    assert {m for (m,) in conn.execute("SELECT substr(answer, 8) FROM answers")} == set(live.values())
