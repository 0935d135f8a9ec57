"""SearchIndex on SQLite: FTS5 BM25 (Porter stemming) and an exact cosine vector lane.

Both lanes select candidates with the same SQL access predicate before anything is
ranked: tenant equal, one of the caller's roles allowed, status live. Vectors live in the
same rows as the text, so a revision's text and vectors are written in one transaction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from citewell.errors import EmbedderMismatch
from citewell.local.sqlite import Connection, PerThread, Transaction, checkpoint, ensure_schema
from citewell.models import Chunk, Identity
from citewell.ports import LaneHit
from citewell.terms import FUNCTION_WORDS, words

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    status TEXT NOT NULL,
    title TEXT NOT NULL,
    section_path TEXT NOT NULL,
    context TEXT NOT NULL,
    body TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (tenant, chunk_id, revision)
);
CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks (tenant, document_id, revision);
CREATE TABLE IF NOT EXISTS chunk_roles (
    role TEXT NOT NULL,
    chunk_rowid INTEGER NOT NULL REFERENCES chunks (rowid) ON DELETE CASCADE,
    PRIMARY KEY (role, chunk_rowid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_roles_by_chunk ON chunk_roles (chunk_rowid);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    context, body, content='chunks', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, context, body) VALUES (new.rowid, new.context, new.body);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, context, body) VALUES ('delete', old.rowid, old.context, old.body);
END;
"""

# The one access predicate, shared by both lanes. ``c`` is the chunks table. The unary plus
# keeps the planner on the rowid lookup: given a bound tenant it would otherwise walk the
# tenant's whole slice of ``chunks_by_document`` (6 ms at 50k chunks instead of 0.1).
_ACCESS = (
    "+c.tenant = :tenant AND c.status = 'live' AND EXISTS ("
    "SELECT 1 FROM chunk_roles r WHERE r.chunk_rowid = c.rowid AND r.role IN ({roles}))"
)


def _access(identity: Identity) -> tuple[str, dict[str, str]]:
    roles = sorted(identity.roles)
    params = {"tenant": identity.tenant, **{f"role{i}": r for i, r in enumerate(roles)}}
    return _ACCESS.format(roles=", ".join(f":role{i}" for i in range(len(roles)))), params


def fts_query(text: str) -> str | None:
    """Any-term FTS5 query of the question's content words (all words if it has no other),
    each quoted so none is read as syntax."""
    every = list(dict.fromkeys(words(text)))
    terms = [t for t in every if t not in FUNCTION_WORDS] or every
    return " OR ".join(f'"{t}"' for t in terms) or None


def _settled(scores: np.ndarray, keep: np.ndarray, k: int) -> bool:
    """Whether a window of the best matches (``scores`` descending) already holds the allowed
    top k: k allowed rows, the k-th scoring strictly above the window's last row."""
    allowed = scores[keep]
    return allowed.size >= k and allowed[k - 1] > scores[-1]


class _VectorMatrix:
    """All vectors and their access fields in memory, reloaded when the index's write epoch moves.

    Both lanes filter on these arrays (tenant code, live flag, role postings) before anything
    is ranked; the rows finally returned are checked again against the table.
    """

    def __init__(self) -> None:
        self.epoch = -1
        self.rowids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.tenant_codes: dict[str, int] = {}
        self.tenants = np.zeros(0, dtype=np.int32)
        self.live = np.zeros(0, dtype=bool)
        self.role_positions: dict[str, np.ndarray] = {}

    def mask(self, identity: Identity) -> np.ndarray:
        """One flag per row: may the identity see it."""
        code = self.tenant_codes.get(identity.tenant)
        by_role = np.zeros(self.rowids.size, dtype=bool)
        if code is None:
            return by_role
        for role in identity.roles:
            positions = self.role_positions.get(role)
            if positions is not None:
                by_role[positions] = True
        return (self.tenants == code) & self.live & by_role


class SqliteSearchIndex:
    lexical_window = 1000  # best matches ranked before the access mask; see ``lexical``

    def __init__(self, path: Path) -> None:
        self._connections = PerThread(path)
        ensure_schema(self.conn, _SCHEMA, SCHEMA_VERSION, path)
        self._vectors = _VectorMatrix()
        self._lock = threading.Lock()

    @property
    def conn(self) -> Connection:
        """This thread's connection: a server answers requests in several threads at once."""
        return self._connections.get()

    # -- identity and epoch --------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row["value"] if row else None

    def embedder_identity(self) -> str | None:
        return self._meta("embedder_identity")

    def _bump_epoch(self) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('epoch', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def _check_identity(self, embedder_identity: str, *, claim: bool) -> None:
        current = self.embedder_identity()
        if current is None and claim:
            self.conn.execute("INSERT INTO meta (key, value) VALUES ('embedder_identity', ?)", (embedder_identity,))
        elif current is not None and current != embedder_identity:
            raise EmbedderMismatch(f"this index holds {current} vectors; {embedder_identity} cannot be used with it")

    # -- writes --------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder_identity: str) -> int:
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk")
        with Transaction(self.conn):
            self._check_identity(embedder_identity, claim=True)
            self.conn.executemany(
                "DELETE FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ?",
                sorted({(c.tenant, c.document_id, c.revision) for c in chunks}),
            )
            for chunk, vector in zip(chunks, vectors):
                cursor = self.conn.execute(
                    "INSERT INTO chunks (tenant, chunk_id, document_id, revision, status, title, section_path, context, body, vector) "
                    "VALUES (?, ?, ?, ?, 'live', ?, ?, ?, ?, ?)",
                    (
                        chunk.tenant, chunk.chunk_id, chunk.document_id, chunk.revision, chunk.title,
                        json.dumps(chunk.heading_path), chunk.context, chunk.text,
                        np.asarray(vector, dtype=np.float32).tobytes(),
                    ),
                )
                self.conn.executemany(
                    "INSERT INTO chunk_roles (role, chunk_rowid) VALUES (?, ?)",
                    [(role, cursor.lastrowid) for role in sorted(chunk.allowed_roles)],
                )
            self._bump_epoch()
        return len(chunks)

    def count(self, tenant: str, document_id: str, revision: str) -> int:
        row = self.conn.execute(
            "SELECT COUNT(*) AS n FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ?",
            (tenant, document_id, revision),
        ).fetchone()
        return int(row["n"])

    def delete_revision(self, tenant: str, document_id: str, revision: str) -> int:
        with Transaction(self.conn):
            cursor = self.conn.execute(
                "DELETE FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ?", (tenant, document_id, revision)
            )
            self._bump_epoch()
        return cursor.rowcount

    def delete_document(self, tenant: str, document_id: str) -> int:
        with Transaction(self.conn):
            cursor = self.conn.execute("DELETE FROM chunks WHERE tenant = ? AND document_id = ?", (tenant, document_id))
            self._bump_epoch()
        return cursor.rowcount

    def revisions(self, tenant: str, document_id: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT DISTINCT revision FROM chunks WHERE tenant = ? AND document_id = ? ORDER BY revision", (tenant, document_id)
        )
        return [r["revision"] for r in rows]

    def access_inventory(self) -> list[tuple[str, str, str, frozenset[str], str]]:
        """``(tenant, document_id, revision, roles, title)`` of each distinct access of indexed rows."""
        rows = self.conn.execute(
            "SELECT DISTINCT c.tenant, c.document_id, c.revision, c.title, "
            "(SELECT group_concat(role, ',') FROM (SELECT role FROM chunk_roles r WHERE r.chunk_rowid = c.rowid ORDER BY role)) "
            "FROM chunks c"
        )
        return [(r[0], r[1], r[2], frozenset((r[4] or "").split(",")) - {""}, r[3]) for r in rows]

    def inventory(self) -> list[tuple[str, str, str, int]]:
        """``(tenant, document_id, revision, chunks)`` for everything indexed."""
        rows = self.conn.execute(
            "SELECT tenant, document_id, revision, COUNT(*) FROM chunks GROUP BY tenant, document_id, revision"
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def compact(self) -> bool:
        """Merge the FTS5 segments (dropping deleted entries for good) and truncate the WAL.

        With ``secure_delete`` on, the freed pages are zeroed, so deleted text leaves the file.
        False when a reader in another connection kept the log from being truncated: deleted
        text may still sit there until a later compact returns True.
        """
        with Transaction(self.conn):
            self.conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')")
        return checkpoint(self.conn)

    # -- lanes ---------------------------------------------------------------------------

    def lexical(self, query: str, identity: Identity, k: int) -> list[LaneHit]:
        match = fts_query(query)
        if identity.is_empty or match is None or k <= 0:
            return []
        cache = self._matrix()
        allowed = cache.mask(identity)
        if not allowed.any():
            return []
        # The allowed matches' top k, exactly. FTS5 sorts a window of the best matches of all
        # tenants in C (no Python row per match) and the access mask picks the caller's rows
        # from it. When the window holds fewer than k of them, or the k-th ties with the
        # window's edge, an allowed row could lie beyond it: then every match is scored and
        # masked, as if there were no window.
        window = max(self.lexical_window, 4 * k)
        ids, scores = self._matches(match, window)
        keep = self._allowed(cache, allowed, ids)
        if ids.size == window and not _settled(scores, keep, k):
            ids, scores = self._matches(match, None)
            keep = self._allowed(cache, allowed, ids)
        return self._top(ids[keep], scores[keep], identity, k)

    def _matches(self, match: str, limit: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Matching rowids and their BM25 scores (higher is better), best first when limited."""
        if limit is None:
            rows = self.conn.execute("SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)).fetchall()
        else:
            rows = self.conn.execute(
                "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?", (match, limit)
            ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        scores = -np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))  # FTS5: lower is better
        return ids, scores

    @staticmethod
    def _allowed(cache: _VectorMatrix, allowed: np.ndarray, ids: np.ndarray) -> np.ndarray:
        if ids.size == 0 or cache.rowids.size == 0:
            return np.zeros(ids.size, dtype=bool)
        positions = np.minimum(np.searchsorted(cache.rowids, ids), cache.rowids.size - 1)
        return (cache.rowids[positions] == ids) & allowed[positions]

    def vector(self, query: np.ndarray, embedder_identity: str, identity: Identity, k: int) -> list[LaneHit]:
        self._check_identity(embedder_identity, claim=False)
        if identity.is_empty or k <= 0:
            return []
        cache = self._matrix()
        positions = np.flatnonzero(cache.mask(identity))
        if positions.size == 0:
            return []
        vector = np.asarray(query, dtype=np.float32)
        # Scoring every row and keeping the allowed ones avoids copying most of the matrix;
        # a narrow filter is cheaper as a gathered subset.
        if positions.size * 4 > cache.rowids.size:
            scores = (cache.matrix @ vector)[positions]
        else:
            scores = cache.matrix[positions] @ vector
        return self._top(cache.rowids[positions], scores, identity, k)

    def _top(self, rowids: np.ndarray, scores: np.ndarray, identity: Identity, k: int) -> list[LaneHit]:
        """The best ``k`` allowed rows (ties broken by row), re-checked against the table."""
        if scores.size == 0:
            return []
        top = min(k, scores.size)
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.lexsort((rowids[best], -scores[best]))]
        chosen = [int(rowids[i]) for i in best]
        where, params = _access(identity)
        marks = ", ".join(f":id{i}" for i in range(len(chosen)))
        by_rowid = {
            row["rowid"]: row
            for row in self.conn.execute(
                "SELECT c.rowid, c.chunk_id, c.document_id, c.revision, c.title, c.section_path, c.body FROM chunks c "
                f"WHERE c.rowid IN ({marks}) AND {where}",
                {**params, **{f"id{i}": r for i, r in enumerate(chosen)}},
            )
        }
        hits = [(by_rowid[rowid], float(scores[i])) for i, rowid in zip(best, chosen) if rowid in by_rowid]
        return [self._hit(row, score, rank) for rank, (row, score) in enumerate(hits, start=1)]

    def lanes(
        self, text: str | None, vector: np.ndarray | None, embedder_identity: str, identity: Identity, k: int
    ) -> dict[str, list[LaneHit]]:
        found: dict[str, list[LaneHit]] = {}
        if text is not None:
            found["bm25"] = self.lexical(text, identity, k)
        if vector is not None:
            found["vector"] = self.vector(vector, embedder_identity, identity, k)
        return found

    def _matrix(self) -> _VectorMatrix:
        epoch = int(self._meta("epoch") or 0)
        with self._lock:
            if self._vectors.epoch != epoch:
                self._vectors = self._load(epoch)
            return self._vectors

    def _load(self, epoch: int) -> _VectorMatrix:
        cache = _VectorMatrix()
        cache.epoch = epoch
        with Transaction(self.conn, immediate=False):  # one read snapshot for rows and roles
            rows = self.conn.execute("SELECT rowid, tenant, status, vector FROM chunks ORDER BY rowid").fetchall()
            roles = self.conn.execute("SELECT role, chunk_rowid FROM chunk_roles").fetchall()
        if not rows:
            return cache
        cache.rowids = np.array([r[0] for r in rows], dtype=np.int64)
        cache.matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        names = [r[1] for r in rows]
        cache.tenant_codes = {name: i for i, name in enumerate(dict.fromkeys(names))}
        cache.tenants = np.array([cache.tenant_codes[n] for n in names], dtype=np.int32)
        cache.live = np.array([r[2] == "live" for r in rows], dtype=bool)
        postings: dict[str, list[int]] = {}
        for role, rowid in roles:
            postings.setdefault(role, []).append(rowid)
        for role, ids in postings.items():  # every role row has its chunk (a foreign key, same snapshot)
            cache.role_positions[role] = np.searchsorted(cache.rowids, np.array(ids, dtype=np.int64))
        return cache

    @staticmethod
    def _hit(row: sqlite3.Row, score: float, rank: int) -> LaneHit:
        return LaneHit(
            chunk_id=row["chunk_id"], document_id=row["document_id"], revision=row["revision"], title=row["title"],
            section_path=json.loads(row["section_path"]), text=row["body"], score=score, rank=rank,
        )
