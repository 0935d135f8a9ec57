"""Centroids for the vector lane and each row's nearest one, kept in ``index.db``.

The write that first brings the table to ``IVF_MIN_ROWS`` rows trains ``CLUSTERS`` centroids
(faiss's spherical k-means on a fixed-seed sample of the rows) and gives every row its
nearest centroid; each later write gives its new rows theirs. A process reading the rows
lays them out cluster by cluster (:mod:`citewell.index.vectors`), so a search scores the
clusters nearest the question instead of every row. A row's cluster goes with the row
(a foreign key); a centroid is a mean of many rows' vectors, never a row's text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

IVF_MIN_ROWS = 100_000
CLUSTERS = 1024
SAMPLE_PER_CLUSTER = 64  # rows the centroids are trained on, per centroid
ITERATIONS = 20
SEED = 1234
_SLICE = 4096  # rows assigned at a time (a slice's scores against every centroid are 16 MB)
_VERSION = "clusters_version"

CLUSTER_SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_centroids (cluster INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS chunk_clusters (
    chunk_rowid INTEGER PRIMARY KEY REFERENCES chunks (rowid) ON DELETE CASCADE,
    cluster INTEGER NOT NULL
);
"""


# Rows published before their vectors hold zeros: no centroid is trained on them nor given them.
_WITH_VECTORS = "WHERE rowid NOT IN (SELECT chunk_rowid FROM vector_pending)"


def centroids_of(conn: sqlite3.Connection) -> np.ndarray | None:
    rows = conn.execute("SELECT vector FROM vector_centroids ORDER BY cluster").fetchall()
    if not rows:
        return None
    return np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1)


def clusters_version(conn: sqlite3.Connection) -> int:
    """Moves each time the centroids are trained: rows laid out by the old ones are read again."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_VERSION,)).fetchone()
    return int(row[0]) if row else 0


def cluster_rows(conn: sqlite3.Connection, rowids: Sequence[int], vectors: np.ndarray) -> None:
    """Inside a write that added ``rowids`` with ``vectors``: give them their clusters, or train
    the centroids (and cluster every row) if the table has reached ``IVF_MIN_ROWS`` without."""
    centroids = centroids_of(conn)
    if centroids is None:
        if conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] >= IVF_MIN_ROWS:
            _train(conn)
        return
    _assign(conn, rowids, np.asarray(vectors, dtype=np.float32), centroids)


def nearest(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each vector's nearest centroid by cosine (both unit length)."""
    return np.concatenate([np.argmax(vectors[i : i + _SLICE] @ centroids.T, axis=1)
                           for i in range(0, len(vectors), _SLICE)]) if len(vectors) else np.zeros(0, dtype=np.int64)


def _assign(conn: sqlite3.Connection, rowids: Sequence[int], vectors: np.ndarray, centroids: np.ndarray) -> None:
    conn.executemany("INSERT OR REPLACE INTO chunk_clusters (chunk_rowid, cluster) VALUES (?, ?)",
                     zip([int(r) for r in rowids], nearest(vectors, centroids).tolist()))


def _train(conn: sqlite3.Connection) -> None:
    import faiss  # only the write that crosses the threshold needs it

    rowids = np.array([r[0] for r in conn.execute(f"SELECT rowid FROM chunks {_WITH_VECTORS} ORDER BY rowid")], dtype=np.int64)
    size = min(rowids.size, CLUSTERS * SAMPLE_PER_CLUSTER)
    sample = np.sort(np.random.default_rng(SEED).choice(rowids, size=size, replace=False))
    vectors = _vectors(conn, sample.tolist())
    kmeans = faiss.Kmeans(vectors.shape[1], CLUSTERS, niter=ITERATIONS, spherical=True, seed=SEED, verbose=False)
    kmeans.train(vectors)
    centroids = np.ascontiguousarray(kmeans.centroids, dtype=np.float32)
    conn.execute("DELETE FROM vector_centroids")
    conn.executemany("INSERT INTO vector_centroids (cluster, vector) VALUES (?, ?)",
                     [(n, c.tobytes()) for n, c in enumerate(centroids)])
    cursor = conn.execute(f"SELECT rowid, vector FROM chunks {_WITH_VECTORS} ORDER BY rowid")
    while found := cursor.fetchmany(20_000):
        matrix = np.frombuffer(b"".join(r[1] for r in found), dtype=np.float32).reshape(len(found), -1)
        _assign(conn, [r[0] for r in found], matrix, centroids)
    conn.execute(f"INSERT INTO meta (key, value) VALUES ('{_VERSION}', '1') "
                 "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1")


def _vectors(conn: sqlite3.Connection, rowids: list[int]) -> np.ndarray:
    parts = []
    for i in range(0, len(rowids), 500):
        part = rowids[i : i + 500]
        rows = conn.execute(f"SELECT vector FROM chunks WHERE rowid IN ({', '.join('?' * len(part))}) ORDER BY rowid", part)
        parts.append(b"".join(r[0] for r in rows))
    return np.frombuffer(b"".join(parts), dtype=np.float32).reshape(len(rowids), -1).copy()
