"""The vector lane on clusters: once the table has centroids, a caller who sees many rows is
scored on the clusters nearest the question; only the caller's rows are ever scored, a caller
who sees few rows is scored exactly, and what a search finds stays close to the exact top k
through new rows and deletes. Sizes are scaled down (thresholds patched) so the tests run in
seconds; the bench measures recall at 200k and 1M chunks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from citewell.index import clusters, vectors
from citewell.index.sqlite import SqliteSearchIndex
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity

MODEL = "all-MiniLM-L6-v2-int8-onnx@1.0.0:384"
EVERYONE = Identity(tenant="northpier", roles=frozenset({"staff", "hr"}))
STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
HR = Identity(tenant="northpier", roles=frozenset({"hr"}))
BLUEFEN = Identity(tenant="bluefen", roles=frozenset({"staff", "hr"}))
# A float16 code of a unit vector is off by at most 2**-11 of each component, so its cosine
# with a unit query by at most 2**-11: two rows' order can swap when their cosines are closer
# than twice that.
TIE = 2**-10


@pytest.fixture(autouse=True)
def small(monkeypatch):
    monkeypatch.setattr(clusters, "IVF_MIN_ROWS", 2_000)
    monkeypatch.setattr(clusters, "CLUSTERS", 32)
    monkeypatch.setattr(clusters, "SAMPLE_PER_CLUSTER", 40)
    monkeypatch.setattr(vectors, "EXACT_BELOW", 400)
    monkeypatch.setattr(vectors, "GATHER_BELOW", 250)
    monkeypatch.setattr(vectors, "IVF_PROBE", 8)


class Corpus:
    """Rows near 200 topics (more than the 32 clusters, so neighbours straddle clusters), of two
    tenants and two roles; what each caller may see, kept here too."""

    def __init__(self, path: Path, seed: int = 2) -> None:
        self.rng = np.random.default_rng(seed)
        self.topics = self._unit(self.rng.normal(size=(200, 384)))
        self.index = SqliteSearchIndex(path)
        self.rows: dict[str, tuple[np.ndarray, str, str]] = {}  # chunk id -> vector, tenant, role
        self.documents = 0

    @staticmethod
    def _unit(matrix: np.ndarray) -> np.ndarray:
        return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)

    def near(self, count: int) -> np.ndarray:
        topics = self.topics[self.rng.integers(len(self.topics), size=count)]
        return self._unit(topics + 0.05 * self.rng.normal(size=(count, 384)))

    def add(self, count: int, tenant: str = "northpier", role: str | None = None, found: np.ndarray | None = None) -> str:
        document_id = f"{tenant}-{self.documents}"
        self.documents += 1
        found = self.near(count) if found is None else found
        chunks = []
        for n, vector in enumerate(found):
            row_role = role or ("staff" if n % 4 else "hr")
            chunk = Chunk(chunk_id=f"{document_id}#{n}#0", document_id=document_id, tenant=tenant,
                          allowed_roles=frozenset({row_role}), revision="r1", title=document_id, section_index=n,
                          index=0, heading_path=[], start=0, end=1, body_start=0, text=f"row {n}")
            chunks.append(chunk)
            self.rows[chunk.chunk_id] = (vector, tenant, row_role)
        self.index.upsert(chunks, found, MODEL)
        return document_id

    def delete(self, document_id: str) -> None:
        tenant = document_id.split("-")[0]
        self.index.delete_document(tenant, document_id)
        self.rows = {c: r for c, r in self.rows.items() if not c.startswith(f"{document_id}#")}

    def exact(self, query: np.ndarray, caller: Identity, k: int = 10) -> list[str]:
        allowed = [(c, v) for c, (v, t, r) in self.rows.items() if t == caller.tenant and r in caller.roles]
        scores = np.array([float(v @ query) for _, v in allowed])
        return [allowed[i][0] for i in np.argsort(-scores, kind="stable")[:k]]

    def allowed(self, chunk_id: str, caller: Identity) -> bool:
        _, tenant, role = self.rows[chunk_id]
        return tenant == caller.tenant and role in caller.roles

    def found(self, query: np.ndarray, caller: Identity, k: int = 10) -> list[str]:
        return [h.chunk_id for h in self.index.vector(query, MODEL, caller, k)]


def agrees_with_exact(corpus: Corpus, query: np.ndarray, caller: Identity, k: int = 10) -> bool:
    """The lane's top k is the exact top k up to ties of float16 codes: as many hits, each the
    caller's, with the exact cosines in the same order, each within ``TIE`` of the exact one."""
    found, exact = corpus.found(query, caller, k), corpus.exact(query, caller, k)
    true = [float(corpus.rows[c][0] @ query) for c in found]
    return len(found) == len(exact) and all(corpus.allowed(c, caller) for c in found) and bool(
        np.allclose(true, [float(corpus.rows[c][0] @ query) for c in exact], rtol=0, atol=TIE))


def recall(corpus: Corpus, caller: Identity, queries: np.ndarray) -> float:
    hits = [len(set(corpus.found(q, caller)) & set(corpus.exact(q, caller))) for q in queries]
    return sum(hits) / (10 * len(queries))


def test_the_write_that_reaches_the_threshold_trains_the_centroids_and_clusters_every_row(tmp_path):
    corpus = Corpus(tmp_path / "index.db")
    corpus.add(1_500)
    corpus.add(490)
    table = sqlite3.connect(tmp_path / "index.db")
    assert table.execute("SELECT COUNT(*) FROM vector_centroids").fetchone()[0] == 0
    corpus.found(corpus.near(1)[0], EVERYONE)
    assert corpus.index._vectors.blocks[0].starts is None  # no centroids yet: every row scored
    corpus.add(20)  # 2,010 rows: this write trains
    assert table.execute("SELECT COUNT(*) FROM vector_centroids").fetchone()[0] == 32
    corpus.found(corpus.near(1)[0], EVERYONE)
    assert corpus.index._vectors.blocks[0].starts is not None  # read again, by cluster, once trained
    corpus.add(140)  # later rows get their cluster as they are written
    assert table.execute("SELECT COUNT(*) FROM chunk_clusters").fetchone()[0] == 2_150
    corpus.delete("northpier-1")  # a row's cluster goes with it
    assert table.execute("SELECT COUNT(*) FROM chunk_clusters").fetchone()[0] == 1_660

    corpus.found(corpus.near(1)[0], EVERYONE)
    held = corpus.index._vectors
    block = held.blocks[0]
    assert block.starts is not None and block.starts[-1] == block.rowids.size == 1_660
    stored = dict(table.execute("SELECT chunk_rowid, cluster FROM chunk_clusters"))
    for cluster in range(32):  # laid out cluster by cluster
        rows = block.rowids[block.starts[cluster] : block.starts[cluster + 1]]
        assert all(stored[int(r)] == cluster for r in rows)


def test_searches_on_clusters_find_nearly_the_exact_top_10_and_only_the_callers_rows(tmp_path, monkeypatch):
    corpus = Corpus(tmp_path / "index.db")
    corpus.add(2_400)
    corpus.add(800, tenant="bluefen")
    corpus.add(200, role="support")
    queries = corpus.near(40)
    assert recall(corpus, EVERYONE, queries) >= 0.9  # 8 of 32 clusters: 0.98 here
    assert recall(corpus, STAFF, queries) >= 0.9  # sees about half the rows: 16 clusters
    assert corpus.index._vectors.blocks[0].starts is not None
    for caller in (HR, BLUEFEN):  # a quarter of the rows or less: every cluster, so exactly the exact top 10
        assert all(agrees_with_exact(corpus, q, caller) for q in queries), caller
    support = Identity(tenant="northpier", roles=frozenset({"support"}))  # 200 rows: their own rows copied out
    assert all(agrees_with_exact(corpus, q, support) for q in queries)
    for caller in (EVERYONE, STAFF, HR, BLUEFEN, support):
        for query in queries[:10]:
            for chunk_id in corpus.found(query, caller):
                _, tenant, role = corpus.rows[chunk_id]
                assert tenant == caller.tenant and role in caller.roles
    monkeypatch.setattr(vectors, "IVF_PROBE", 32)  # every cluster: the layout loses no row
    assert all(agrees_with_exact(corpus, q, EVERYONE) for q in queries)


def test_rows_written_and_deleted_after_the_clustered_read_are_found_and_gone(tmp_path, monkeypatch):
    corpus = Corpus(tmp_path / "index.db")
    first = corpus.add(2_400)
    queries = corpus.near(30)
    corpus.found(queries[0], EVERYONE)  # the clustered read
    assert corpus.index._vectors.blocks[0].starts is not None
    added = corpus.add(100)  # under a tenth: kept beside the clustered block, scored exactly
    corpus.delete(first)
    corpus.add(2_000)  # a fresh document the size of a fifth of the rows: read again, by cluster
    for query in queries:
        found = corpus.found(query, EVERYONE)
        assert not [c for c in found if c.startswith(f"{first}#")]
    vector, _, _ = corpus.rows[f"{added}#3#0"]
    assert corpus.found(vector, EVERYONE, 1) == [f"{added}#3#0"]
    assert corpus.index._vectors.blocks[0].starts is not None and len(corpus.index._vectors.blocks) == 1
    monkeypatch.setattr(vectors, "IVF_PROBE", 32)
    assert all(agrees_with_exact(corpus, q, EVERYONE) for q in queries)


def test_a_new_row_beside_the_clustered_block_is_found_first_when_asked_for(tmp_path):
    corpus = Corpus(tmp_path / "index.db")
    corpus.add(2_400)
    corpus.found(corpus.near(1)[0], EVERYONE)
    held = corpus.index._vectors
    added = corpus.add(20)
    corpus.found(corpus.near(1)[0], EVERYONE)
    assert corpus.index._vectors.blocks[0] is held.blocks[0]  # brought forward from the log, not read again
    for n in range(20):
        vector, _, role = corpus.rows[f"{added}#{n}#0"]
        caller = STAFF if role == "staff" else HR
        assert corpus.found(vector, caller, 1) == [f"{added}#{n}#0"]
    corpus.add(400)  # past a tenth of the rows beside the clustered block: all read again, by cluster
    corpus.found(corpus.near(1)[0], EVERYONE)
    assert len(corpus.index._vectors.blocks) == 1 and corpus.index._vectors.blocks[0].rowids.size == 2_820


def test_a_delete_applied_to_the_clustered_block_removes_its_rows_and_no_other(tmp_path):
    corpus = Corpus(tmp_path / "index.db")
    corpus.add(2_000)
    gone = corpus.add(300)
    corpus.found(corpus.near(1)[0], EVERYONE)
    held = corpus.index._vectors.blocks[0]
    corpus.delete(gone)
    corpus.found(corpus.near(1)[0], EVERYONE)
    assert corpus.index._vectors.blocks[0].codes is held.codes  # marked dead in place of reading again
    for chunk_id, (vector, _, role) in corpus.rows.items():
        assert corpus.found(vector, STAFF if role == "staff" else HR, 1) == [chunk_id]


def test_the_clustered_rows_are_held_as_float16_codes_of_their_own_clusters(tmp_path):
    corpus = Corpus(tmp_path / "index.db")
    corpus.add(2_400)
    corpus.found(corpus.near(1)[0], EVERYONE)
    block = corpus.index._vectors.blocks[0]
    assert block.codes is not None and block.matrix is None  # no float32 copy of the clustered rows
    assert block.codes.index.code_size == 2 * 384
    table = sqlite3.connect(tmp_path / "index.db")
    stored = {rowid: np.frombuffer(vector, dtype=np.float32) for rowid, vector in table.execute("SELECT rowid, vector FROM chunks")}
    for cluster in range(32):
        start, end = int(block.starts[cluster]), int(block.starts[cluster + 1])
        assert block.codes.ids_of(cluster).tolist() == list(range(start, end))  # a row's id is its position
        expected = np.stack([stored[int(r)] for r in block.rowids[start:end]])
        decoded = block.codes.codes_of(cluster).view(np.float16).astype(np.float32)
        assert np.allclose(decoded, expected, rtol=2**-11, atol=2**-24)  # within half a float16 step
    some = np.sort(np.random.default_rng(5).choice(block.rowids.size, 300, replace=False))
    every = np.concatenate([block.codes.codes_of(c) for c in range(32)]).view(np.float16)
    assert np.array_equal(block.codes.rows(some, block.starts), every[some])  # a few callers' rows, copied out


def test_the_callers_rows_are_selected_inside_the_scan_not_after_it(tmp_path):
    """Rows of another tenant, another role and a deleted document, all nearer the question than
    any of the caller's: a filter applied to a finished top 10 would leave the caller nothing."""
    corpus = Corpus(tmp_path / "index.db")
    corpus.add(2_400)
    question = corpus.near(1)[0]
    crowd = corpus._unit(question + 0.01 * corpus.rng.normal(size=(60, 384)))
    corpus.add(60, tenant="bluefen", found=crowd)
    corpus.add(60, role="hr", found=crowd)
    gone = corpus.add(60, role="staff", found=crowd)
    corpus.found(question, EVERYONE)  # the clustered read, with the crowd in it
    held = corpus.index._vectors.blocks[0]
    corpus.delete(gone)  # marked dead in the clustered block: its codes stay in memory
    found = corpus.found(question, STAFF)
    assert corpus.index._vectors.blocks[0].codes is held.codes
    assert len(found) == 10 and all(corpus.allowed(c, STAFF) for c in found)
    assert agrees_with_exact(corpus, question, STAFF)
    found = corpus.found(question, BLUEFEN)
    assert len(found) == 10 and all(c.startswith("bluefen-") for c in found)


_KILLED_WRITER = """
import sys, time
from pathlib import Path
import numpy as np
from citewell.index import clusters
from citewell.index.sqlite import SqliteSearchIndex
from citewell.models.chunks import Chunk

clusters.IVF_MIN_ROWS, clusters.CLUSTERS, clusters.SAMPLE_PER_CLUSTER = 2_000, 32, 40
home, moment = Path(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(5)

def rows(document, count):
    found = rng.normal(size=(count, 384)).astype(np.float32)
    found /= np.linalg.norm(found, axis=1, keepdims=True)
    return [Chunk(chunk_id=f"{document}#{n}#0", document_id=document, tenant="northpier", allowed_roles=frozenset({"staff"}),
                  revision="r1", title=document, section_index=n, index=0, heading_path=[], start=0, end=1, body_start=0,
                  text=f"row {n} of {document}") for n in range(count)], found

index = SqliteSearchIndex(home / "index.db")
index.upsert(*rows("first", 1_990), "MODEL")
train = clusters._train

def watched(conn):  # the real training, with the moment it is at told to the test
    (home / "training").touch()
    if moment == "before":
        time.sleep(60)
    train(conn)
    (home / "trained").touch()  # every row clustered, the write not yet committed
    time.sleep(60)

clusters._train = watched
index.upsert(*rows("second", 20), "MODEL")
""".replace('"MODEL"', repr(MODEL))


@pytest.mark.parametrize("moment", ["before", "after"])
def test_a_writer_killed_while_it_trains_the_centroids_leaves_the_rows_as_they_were(tmp_path, moment):
    """kill -9 before the training and after it (every row clustered, nothing committed):
    the table is as the last committed write left it, and the next write trains in full."""
    import os
    import signal
    import subprocess
    import sys
    import time

    child = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(tmp_path), moment])
    marker = tmp_path / ("training" if moment == "before" else "trained")
    deadline = time.monotonic() + 120
    while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marker.exists(), "the writer never reached the training"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    table = sqlite3.connect(tmp_path / "index.db")
    counts = [table.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
              for name in ("chunks", "vector_centroids", "chunk_clusters")]
    assert counts == [1_990, 0, 0]
    corpus = Corpus(tmp_path / "index.db")  # a new writer: the killed write's rows were never there
    staff = Identity(tenant="northpier", roles=frozenset({"staff"}))
    assert len(corpus.index.vector(corpus.near(1)[0], MODEL, staff, 10)) == 10
    assert corpus.index.lexical("row", staff, 5) and not corpus.index.lexical("second", staff, 5)
    corpus.add(20)
    assert [table.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
            for name in ("chunks", "vector_centroids", "chunk_clusters")] == [2_010, 32, 2_010]
