"""The vector lane's rows in memory follow the index's writes through its change log, and a
process kept current that way ranks exactly as one that read every row: the same rows, the
same scores, only the caller's rows, whatever the writes (new documents, new revisions, a
revision indexed again, deletes, a rowid taken again by a new row)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from citewell.index import vectors as vector_rows
from citewell.index.sqlite import SqliteSearchIndex
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity

MODEL = "all-MiniLM-L6-v2-int8-onnx@1.0.0:384"
TENANTS = ("northpier", "bluefen")
ROLE_SETS = (frozenset({"staff"}), frozenset({"hr"}), frozenset({"staff", "support"}))
CALLERS = [Identity(tenant=t, roles=r) for t in TENANTS for r in (*ROLE_SETS, frozenset({"support"}))]


def rows(document_id: str, tenant: str, roles: frozenset[str], revision: str, count: int,
         rng: np.random.Generator) -> tuple[list[Chunk], np.ndarray]:
    chunks = [Chunk(chunk_id=f"{document_id}#0#{n}", document_id=document_id, tenant=tenant, allowed_roles=roles,
                    revision=revision, title=document_id, section_index=0, index=n, heading_path=[], start=0, end=4,
                    body_start=0, text=f"{document_id} {revision} passage {n}") for n in range(count)]
    vectors = rng.normal(size=(count, 384)).astype(np.float32)
    return chunks, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def ranked(index: SqliteSearchIndex, query: np.ndarray, caller: Identity) -> list[tuple[str, str, float]]:
    return [(h.chunk_id, h.revision, round(h.score, 5)) for h in index.vector(query, MODEL, caller, 12)]


def assert_same_as_a_fresh_read(path: Path, reader: SqliteSearchIndex, rng: np.random.Generator) -> None:
    fresh = SqliteSearchIndex(path)  # reads every row
    for _ in range(2):
        query = rng.normal(size=384).astype(np.float32)
        query /= np.linalg.norm(query)
        for caller in CALLERS:
            got = ranked(reader, query, caller)
            assert got == ranked(fresh, query, caller), caller
            assert all(c.split("#")[0].split("-")[0] == caller.tenant for c, _, _ in got)  # ids carry their tenant


def test_a_reader_kept_current_by_the_log_ranks_as_one_that_read_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_rows, "MAX_BLOCKS", 3)  # merges happen too
    rng = np.random.default_rng(11)
    path = tmp_path / "index.db"
    writer, reader = SqliteSearchIndex(path), SqliteSearchIndex(path)  # two processes' views of one file
    documents: dict[str, tuple[str, frozenset[str], int]] = {}
    kept_first_block = 0
    for step in range(50):
        action = "add" if len(documents) < 4 else str(rng.choice(["add", "revise", "again", "delete"]))
        if action == "add":
            tenant, roles = TENANTS[step % 2], ROLE_SETS[int(rng.integers(3))]
            document_id = f"{tenant}-doc{step}"
            documents[document_id] = (tenant, roles, 1)
            writer.upsert(*rows(document_id, tenant, roles, "r1", int(rng.integers(1, 9)), rng), MODEL)
        else:
            document_id = str(rng.choice(sorted(documents)))
            tenant, roles, revision = documents[document_id]
            if action == "revise":  # the new revision is published, then the old one removed
                writer.upsert(*rows(document_id, tenant, roles, f"r{revision + 1}", int(rng.integers(1, 9)), rng), MODEL)
                writer.delete_revision(tenant, document_id, f"r{revision}")
                documents[document_id] = (tenant, roles, revision + 1)
            elif action == "again":  # a stage run again: the same revision replaced in place
                writer.upsert(*rows(document_id, tenant, roles, f"r{revision}", int(rng.integers(1, 9)), rng), MODEL)
            else:
                writer.delete_document(tenant, document_id)
                del documents[document_id]
        before = reader._vectors.blocks[:1]
        assert_same_as_a_fresh_read(path, reader, rng)
        kept_first_block += bool(before) and reader._vectors.blocks[0] is before[0]
    assert kept_first_block >= 10  # most writes were applied from the log, not by reading every row again


def test_a_revision_indexed_again_takes_its_own_rowids_again(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_rows, "MAX_DEAD_SHARE", 1e9)
    rng = np.random.default_rng(4)
    path = tmp_path / "index.db"
    writer, reader = SqliteSearchIndex(path), SqliteSearchIndex(path)
    writer.upsert(*rows("northpier-a", "northpier", frozenset({"staff"}), "r1", 4, rng), MODEL)
    writer.upsert(*rows("northpier-b", "northpier", frozenset({"staff"}), "r1", 4, rng), MODEL)
    assert_same_as_a_fresh_read(path, reader, rng)
    before = {r for (r,) in sqlite3.connect(path).execute("SELECT rowid FROM chunks WHERE document_id = 'northpier-b'")}
    writer.upsert(*rows("northpier-b", "northpier", frozenset({"staff"}), "r1", 4, rng), MODEL)  # dropped and added in one write
    after = {r for (r,) in sqlite3.connect(path).execute("SELECT rowid FROM chunks WHERE document_id = 'northpier-b'")}
    assert after == before
    assert_same_as_a_fresh_read(path, reader, rng)


def test_a_rowid_taken_again_by_a_new_row_is_that_row(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "index.db"
    writer, reader = SqliteSearchIndex(path), SqliteSearchIndex(path)
    staff = Identity(tenant="northpier", roles=frozenset({"staff"}))
    writer.upsert(*rows("northpier-a", "northpier", frozenset({"staff"}), "r1", 3, rng), MODEL)
    writer.upsert(*rows("northpier-b", "northpier", frozenset({"staff"}), "r1", 3, rng), MODEL)
    assert_same_as_a_fresh_read(path, reader, rng)
    taken = {r for (r,) in sqlite3.connect(path).execute("SELECT rowid FROM chunks WHERE document_id = 'northpier-b'")}
    writer.delete_document("northpier", "northpier-b")  # the highest rowids: SQLite gives them out again
    hr_chunks, hr_vectors = rows("bluefen-c", "bluefen", frozenset({"hr"}), "r1", 3, rng)
    writer.upsert(hr_chunks, hr_vectors, MODEL)
    again = {r for (r,) in sqlite3.connect(path).execute("SELECT rowid FROM chunks WHERE document_id = 'bluefen-c'")}
    assert again == taken  # the case under test did happen
    assert_same_as_a_fresh_read(path, reader, rng)
    assert {h.document_id for h in reader.vector(hr_vectors[0], MODEL, staff, 10)} == {"northpier-a"}
    bluefen_hr = Identity(tenant="bluefen", roles=frozenset({"hr"}))
    assert reader.vector(hr_vectors[0], MODEL, bluefen_hr, 1)[0].chunk_id == "bluefen-c#0#0"


def test_a_reader_the_log_no_longer_reaches_reads_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_rows, "LOG_ROWS", 4)
    monkeypatch.setattr(vector_rows, "MAX_DEAD_SHARE", 1e9)  # only the log's reach decides
    rng = np.random.default_rng(5)
    path = tmp_path / "index.db"
    writer, reader = SqliteSearchIndex(path), SqliteSearchIndex(path)
    writer.upsert(*rows("northpier-a", "northpier", frozenset({"staff"}), "r1", 5, rng), MODEL)
    assert_same_as_a_fresh_read(path, reader, rng)
    for n in range(6):
        writer.upsert(*rows(f"bluefen-{n}", "bluefen", frozenset({"staff"}), "r1", 3, rng), MODEL)
    writer.delete_document("northpier", "northpier-a")
    log = sqlite3.connect(path)
    assert log.execute("SELECT COUNT(*) FROM vector_log").fetchone()[0] <= 2 * 4 + 5  # kept short
    floor = int(log.execute("SELECT value FROM meta WHERE key = 'vector_log_floor'").fetchone()[0])
    assert floor > reader._vectors.epoch  # the entries the reader needs are gone
    assert_same_as_a_fresh_read(path, reader, rng)


def test_writes_made_without_the_log_are_never_missed(tmp_path, monkeypatch):
    """A home written by a citewell from before the log: whatever the log does not cover is read whole."""
    monkeypatch.setattr(vector_rows, "MAX_DEAD_SHARE", 1e9)  # only the log's reach decides
    rng = np.random.default_rng(9)
    path = tmp_path / "index.db"
    writer, reader = SqliteSearchIndex(path), SqliteSearchIndex(path)
    writer.upsert(*rows("northpier-a", "northpier", frozenset({"staff"}), "r1", 4, rng), MODEL)
    assert_same_as_a_fresh_read(path, reader, rng)
    writer.upsert(*rows("northpier-b", "northpier", frozenset({"staff"}), "r1", 4, rng), MODEL)
    with sqlite3.connect(path) as older:  # as that citewell left it: the rows, no log of them
        older.execute("DELETE FROM vector_log")
        older.execute("DELETE FROM meta WHERE key = 'vector_log_floor'")
    assert_same_as_a_fresh_read(path, reader, rng)
    writer.upsert(*rows("bluefen-c", "bluefen", frozenset({"staff"}), "r1", 4, rng), MODEL)  # logged again from here
    assert_same_as_a_fresh_read(path, reader, rng)
    found = reader.vector(*rows("x", "northpier", frozenset(), "r", 1, np.random.default_rng(0))[1], MODEL,
                          Identity(tenant="northpier", roles=frozenset({"staff"})), 20)
    assert {h.document_id for h in found} == {"northpier-a", "northpier-b"}


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_dead_rows_past_their_share_are_dropped_from_memory(tmp_path, monkeypatch, share):
    monkeypatch.setattr(vector_rows, "MAX_DEAD_SHARE", share if share else 0.01)
    rng = np.random.default_rng(1)
    path = tmp_path / "index.db"
    writer, reader = SqliteSearchIndex(path), SqliteSearchIndex(path)
    for n in range(3):
        writer.upsert(*rows(f"northpier-{n}", "northpier", frozenset({"staff"}), "r1", 5, rng), MODEL)
    assert_same_as_a_fresh_read(path, reader, rng)
    writer.delete_document("northpier", "northpier-1")
    assert_same_as_a_fresh_read(path, reader, rng)
    held = reader._vectors
    assert held.rows == 10 + (5 if share else 0) and held.dead == (5 if share else 0)
