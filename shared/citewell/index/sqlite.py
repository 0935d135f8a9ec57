"""SearchIndex on SQLite and tantivy: BM25 (Porter stemming, scored as FTS5 scored it) and an exact cosine vector lane.

The rows (text, vectors, access fields) live in ``index.db``, written in one transaction per
revision. The lexical lane ranks in a tantivy index derived from them (``lexical/``, see
``citewell.index.lexical``). A tantivy commit costs about 0.1 s (it syncs its files), so new
rows wait in ``lexical_pending`` and go into the index together: when ``FLUSH_ROWS`` wait,
when a delete runs, when an ingest batch ends (``flush``), when a server publishes an upload
(before its record says so) or when a search finds some waiting and the write lock free. Each
of those writes runs inside a write transaction of the table, so the index and the pending list
agree after a crash. The vector lane scores the rows' vectors in memory, kept current from a
log of the rows each write dropped and added (``citewell.index.vectors``). A revision may be
published before its vectors: its rows wait in ``vector_pending``, searchable by words and out
of the vector lane, until ``set_vectors`` writes them (it only updates rows still there: a
revision deleted meanwhile takes none). Both lanes select the caller's rows (tenant equal, one
of the caller's roles allowed, status live) inside the ranking, and every returned row is
checked against the table again. A query filter's scope (document ids) narrows the same way:
the rowids of those documents are a required clause of tantivy's query and a mask of the vector
lane's. A hybrid search runs the two lanes at once, the lexical one in a pool thread.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from citewell.errors import Busy, EmbedderMismatch
from citewell.filters import Scope
from citewell.index.clusters import CLUSTER_SCHEMA, cluster_rows
from citewell.index.vectors import VECTOR_SCHEMA, VectorRows, log_changes, refresh
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity
from citewell.ports import LaneHit, QueryVector, query_vector
from citewell.sqlite import Connection, PerThread, Transaction, busy_seconds, compact_file, ensure_schema

if TYPE_CHECKING:
    from citewell.index.lexical import LexicalRow, TantivyLexicon

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
CREATE TABLE IF NOT EXISTS lexical_pending (rowid INTEGER PRIMARY KEY);
-- Rows published before their vectors (a staged publication): searchable by words, left out of
-- the vector lane (their vector is zeros) until ``set_vectors`` gives them one.
CREATE TABLE IF NOT EXISTS vector_pending (
    chunk_rowid INTEGER PRIMARY KEY REFERENCES chunks (rowid) ON DELETE CASCADE
);
""" + VECTOR_SCHEMA + CLUSTER_SCHEMA
# Homes written before the lexical lane moved to tantivy: these go when its index is built.
_FTS5_OBJECTS = ("DROP TRIGGER IF EXISTS chunks_ai", "DROP TRIGGER IF EXISTS chunks_ad", "DROP TABLE IF EXISTS chunks_fts")
REBUILD_BATCH = 20_000
LANE_THREADS = 4  # lexical lanes running beside vector lanes: a server answers several searches at once
# One pool for every index of the process (threads start on first use): a process that opens many
# homes, or one home many times, keeps at most LANE_THREADS idle threads, not that many per index.
_LANES = ThreadPoolExecutor(max_workers=LANE_THREADS, thread_name_prefix="citewell-lexical")
FLUSH_ROWS = 2_000  # rows that wait for the lexical index: one commit per this many, not one per document

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


class SqliteSearchIndex:
    def __init__(self, path: Path) -> None:
        self._connections = PerThread(path)
        ensure_schema(self.conn, _SCHEMA, SCHEMA_VERSION, path)
        self._vectors = VectorRows()
        self._lock = threading.Lock()
        self._lexical_folder = path.parent / "lexical"
        self._lexicon_instance: TantivyLexicon | None = None

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

    def _bump_epoch(self) -> int:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('epoch', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
        return self._epoch()

    def _epoch(self) -> int:
        return int(self._meta("epoch") or 0)

    def _check_identity(self, embedder_identity: str, *, claim: bool) -> None:
        current = self.embedder_identity()
        if current is None and claim:
            self.conn.execute("INSERT INTO meta (key, value) VALUES ('embedder_identity', ?)", (embedder_identity,))
        elif current is not None and current != embedder_identity:
            raise EmbedderMismatch(f"this index holds {current} vectors; {embedder_identity} cannot be used with it")

    # -- writes --------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder_identity: str,
               pending: Collection[str] = frozenset()) -> int:
        """``pending``: chunk ids published without their vector yet (their row of ``vectors`` is
        not read): the lexical lane finds them now, the vector lane once ``set_vectors`` ran."""
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk")
        pending = frozenset(pending)
        with Transaction(self.conn):
            self._check_identity(embedder_identity, claim=True)
            keys = sorted({(c.tenant, c.document_id, c.revision) for c in chunks})
            again = [  # a rerun of the same revision: the same text, replaced in place
                rowid for key in keys for rowid in self._rowids("tenant = ? AND document_id = ? AND revision = ?", key)
            ]
            self.conn.executemany("DELETE FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ?", keys)
            if again:  # its old rows leave the lexical index now (those still waiting leave the list)
                self.conn.execute(f"DELETE FROM lexical_pending WHERE rowid IN ({', '.join('?' * len(again))})", again)
                self._drop_from_lexicon(again)
            added: list[int] = []
            waiting: list[int] = []
            for chunk, vector in zip(chunks, vectors):
                if chunk.chunk_id in pending:
                    vector = np.zeros(len(vector), dtype=np.float32)
                cursor = self.conn.execute(
                    "INSERT INTO chunks "
                    "(tenant, chunk_id, document_id, revision, status, title, section_path, context, body, vector) "
                    "VALUES (?, ?, ?, ?, 'live', ?, ?, ?, ?, ?)",
                    (
                        chunk.tenant, chunk.chunk_id, chunk.document_id, chunk.revision, chunk.title,
                        json.dumps(chunk.heading_path), chunk.context, chunk.text,
                        np.asarray(vector, dtype=np.float32).tobytes(),
                    ),
                )
                rowid = int(cursor.lastrowid or 0)
                (waiting if chunk.chunk_id in pending else added).append(rowid)
                self.conn.executemany(
                    "INSERT INTO chunk_roles (role, chunk_rowid) VALUES (?, ?)",
                    [(role, rowid) for role in sorted(chunk.allowed_roles)],
                )
                self.conn.execute("INSERT INTO lexical_pending (rowid) VALUES (?)", (rowid,))
            self.conn.executemany("INSERT INTO vector_pending (chunk_rowid) VALUES (?)", [(r,) for r in waiting])
            with_vectors = [i for i, c in enumerate(chunks) if c.chunk_id not in pending]
            cluster_rows(self.conn, added, np.asarray(vectors)[with_vectors] if pending else vectors)
            log_changes(self.conn, self._bump_epoch(), dropped=again, added=added)
            if self._pending_rows() >= FLUSH_ROWS:
                self._write_lexicon()
        return len(chunks)

    def set_vectors(self, tenant: str, document_id: str, revision: str, vectors: Mapping[str, np.ndarray]) -> int:
        """The second step of a staged publication: these rows of the revision (by chunk id) get
        their vectors and join the vector lane. Only rows still there and still waiting are
        written; returns how many."""
        with Transaction(self.conn):
            found = self.conn.execute(
                "SELECT c.rowid, c.chunk_id FROM chunks c JOIN vector_pending p ON p.chunk_rowid = c.rowid "
                "WHERE c.tenant = ? AND c.document_id = ? AND c.revision = ? ORDER BY c.rowid",
                (tenant, document_id, revision),
            ).fetchall()
            rows = [(int(r[0]), r[1]) for r in found if r[1] in vectors]
            if not rows:
                return 0
            matrix = np.stack([np.asarray(vectors[chunk_id], dtype=np.float32) for _, chunk_id in rows])
            rowids = [rowid for rowid, _ in rows]
            self.conn.executemany("UPDATE chunks SET vector = ? WHERE rowid = ?",
                                  [(vector.tobytes(), rowid) for vector, rowid in zip(matrix, rowids)])
            self.conn.executemany("DELETE FROM vector_pending WHERE chunk_rowid = ?", [(r,) for r in rowids])
            cluster_rows(self.conn, rowids, matrix)
            log_changes(self.conn, self._bump_epoch(), dropped=rowids, added=rowids)
        return len(rows)

    def vectorless(self) -> list[tuple[str, str, str, int]]:
        """``(tenant, document_id, revision, rows)`` of every revision with rows still waiting for vectors."""
        rows = self.conn.execute(
            "SELECT c.tenant, c.document_id, c.revision, COUNT(*) "
            "FROM vector_pending p CROSS JOIN chunks c ON c.rowid = p.chunk_rowid "
            "GROUP BY c.tenant, c.document_id, c.revision ORDER BY c.tenant, c.document_id, c.revision"
        )
        return [(r[0], r[1], r[2], int(r[3])) for r in rows]

    def vectorless_documents(self, identity: Identity) -> int:
        """How many documents the identity may read have rows the vector lane does not hold yet."""
        if identity.is_empty:
            return 0
        where, params = _access(identity)
        row = self.conn.execute(
            # CROSS JOIN keeps the waiting rows outermost: left to the planner, every search walked
            # the caller's rows by the tenant index to probe for waiting ones (4 s at 1M chunks).
            "SELECT COUNT(DISTINCT c.document_id) "
            f"FROM vector_pending p CROSS JOIN chunks c ON c.rowid = p.chunk_rowid WHERE {where}",
            params,
        ).fetchone()
        return int(row[0])

    def _flush_unless_busy(self) -> None:
        """A search that finds rows waiting writes them, unless another process holds the write
        lock: a read never waits for a writer, and those rows are found once it lets go."""
        self.conn.execute("PRAGMA busy_timeout = 0")
        try:
            self.flush()
        except Busy:
            pass
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_seconds() * 1000)}")

    def flush(self) -> None:
        """Bring the rows waiting for the lexical index into it (an ingest calls this at the end
        of each batch, so the next search finds them without paying for the commit)."""
        if not self._pending_rows() and self._lexicon_current():
            return
        with Transaction(self.conn):
            self._write_lexicon()

    def count(self, tenant: str, document_id: str, revision: str) -> int:
        row = self.conn.execute(
            "SELECT COUNT(*) AS n FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ?",
            (tenant, document_id, revision),
        ).fetchone()
        return int(row["n"])

    def delete_revision(self, tenant: str, document_id: str, revision: str) -> int:
        return self._delete("tenant = ? AND document_id = ? AND revision = ?", (tenant, document_id, revision))

    def delete_document(self, tenant: str, document_id: str) -> int:
        return self._delete("tenant = ? AND document_id = ?", (tenant, document_id))

    def _delete(self, where: str, params: Sequence[str]) -> int:
        """Remove rows from the table and from the lexical index, physically: every lexical
        segment that held one of them is rewritten from the table without it."""
        with Transaction(self.conn):
            removed = self._rowids(where, params)
            self.conn.execute(f"DELETE FROM lexical_pending WHERE rowid IN (SELECT rowid FROM chunks WHERE {where})", params)
            cursor = self.conn.execute(f"DELETE FROM chunks WHERE {where}", params)
            log_changes(self.conn, self._bump_epoch(), dropped=removed)
            self._drop_from_lexicon(removed)
        return cursor.rowcount

    def _drop_from_lexicon(self, removed: Sequence[int]) -> None:
        """Inside a write transaction, the rows already gone from the table: every lexical segment
        that held one of them is written again from the table without it. A row tantivy only marks
        deleted keeps its words on disk and in the document frequencies that exact BM25 reads."""
        lexicon = self._synced_lexicon()
        segments = lexicon.segments_holding(removed)
        survivors = sorted(set(lexicon.rows_in_segments(segments)) - set(removed))
        self._write_lexicon(added=survivors, removed=[*removed, *survivors])

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

    def compact(self, removed: bool) -> bool:
        """Delete the lexical index's dropped segment files, then rewrite the table's file after a
        removal and truncate its log (see ``compact_file``).

        Deleted rows' lexical segments were already rewritten by the delete. False when another
        connection held the write lock or kept the log from being truncated: deleted text may
        still sit there until a later compact returns True.
        """
        with Transaction(self.conn):  # the write lock: tantivy allows one writer per folder
            self._lexicon().collect_garbage()
        return compact_file(self.conn, removed)

    # -- the lexical index ---------------------------------------------------------------

    def _lexicon(self) -> TantivyLexicon:
        if self._lexicon_instance is None:
            from citewell.index.lexical import LAYOUT, TantivyLexicon  # on first use: the CLI starts without it

            with self._lock:
                if self._lexicon_instance is None:
                    self._lexicon_instance = TantivyLexicon(self._lexical_folder / LAYOUT)
        return self._lexicon_instance

    @property
    def _synced_path(self) -> Path:
        return self._lexical_folder / "synced"

    def _lexicon_state(self) -> str | None:
        """``LAYOUT:version``: the lexical write the index was last brought to, ``dirty`` while a
        write is under way (or died), None if it was never built in this layout."""
        from citewell.index.lexical import LAYOUT

        try:
            state = self._synced_path.read_text().strip()
        except FileNotFoundError:
            return None
        return state if state == "dirty" or state.startswith(f"{LAYOUT}:") else None

    def _mark_lexicon(self, version: int | None) -> None:
        from citewell.index.lexical import LAYOUT

        self._lexical_folder.mkdir(parents=True, exist_ok=True)
        # A name of this writer's own: two writers never share (and remove) one temporary file.
        temporary = self._synced_path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        temporary.write_text("dirty" if version is None else f"{LAYOUT}:{version}")
        os.replace(temporary, self._synced_path)

    def _lexicon_version(self) -> int:
        """How many writes the lexical index has had, counted in the table's own transactions."""
        return int(self._meta("lexicon") or 0)

    def _pending_rows(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM lexical_pending").fetchone()[0])

    def _write_lexicon(self, added: Sequence[int] = (), removed: Sequence[int] = ()) -> None:
        """Inside a write transaction: one lexical commit that adds the waiting rows and ``added``
        and drops ``removed``, marked with its version before the transaction commits: a mark
        written after the commit could land over a later writer's, and a crash before the commit
        leaves a version the table does not have, which means a rebuild."""
        if not self._lexicon_current():
            self._rebuild_lexicon()  # the table as it is now: ``added`` in, ``removed`` out
            return
        lexicon = self._lexicon()
        lexicon.refresh()
        waiting = [r[0] for r in self.conn.execute("SELECT rowid FROM lexical_pending ORDER BY rowid")]
        self._mark_lexicon(None)
        lexicon.write(self._lexical_rows(sorted(set(waiting) | set(added))), removed=removed)
        self.conn.execute("DELETE FROM lexical_pending")
        self._mark_lexicon(self._bump_lexicon())

    def _bump_lexicon(self) -> int:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('lexicon', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )  # not the epoch: that reloads the vector matrix, and every search reloads the lexical index anyway
        return self._lexicon_version()

    def _synced_lexicon(self) -> TantivyLexicon:
        """Inside a write transaction: the lexical index, rebuilt from the table first if it is
        not current."""
        if not self._lexicon_current():
            self._rebuild_lexicon()
        lexicon = self._lexicon()
        lexicon.refresh()  # another process may have committed since this one last looked
        return lexicon

    def _lexicon_current(self) -> bool:
        """False if the last write to the index did not finish, it was never built in this
        layout, its folder is gone (removed by hand), or the home still has its FTS5 table."""
        from citewell.index.lexical import LAYOUT

        fts5 = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone() is not None
        built = (self._lexical_folder / LAYOUT / "meta.json").is_file()
        return not fts5 and built and self._lexicon_state() == f"{LAYOUT}:{self._lexicon_version()}"

    def _rebuild_lexicon(self) -> int:
        """Inside a write transaction: the lexical index made again from every row of the table
        (the waiting ones included); returns its version, already marked."""
        from citewell.index.lexical import LAYOUT

        lexicon = self._lexicon()
        lexicon.refresh()
        self._mark_lexicon(None)
        for folder in self._lexical_folder.iterdir():  # an earlier layout's index holds text terms too
            if folder.is_dir() and folder.name != LAYOUT:
                shutil.rmtree(folder)
        lexicon.clear()
        ids = self._rowids("1", ())
        for start in range(0, len(ids), REBUILD_BATCH):
            lexicon.write(self._lexical_rows(ids[start : start + REBUILD_BATCH]))
        lexicon.collect_garbage()
        for statement in _FTS5_OBJECTS:
            self.conn.execute(statement)
        self.conn.execute("DELETE FROM lexical_pending")
        version = self._bump_lexicon()
        self._mark_lexicon(version)  # the transaction is still open: a crash leaves the mark behind
        return version

    def _rowids(self, where: str, params: Sequence[str]) -> list[int]:
        return [r[0] for r in self.conn.execute(f"SELECT rowid FROM chunks WHERE {where} ORDER BY rowid", params)]

    def _lexical_rows(self, rowids: Sequence[int]) -> list[LexicalRow]:
        from citewell.index.lexical import LexicalRow

        if not rowids:
            return []
        roles: dict[int, set[str]] = {}
        found = []
        for start in range(0, len(rowids), 500):
            part = list(rowids[start : start + 500])
            marks = ", ".join("?" * len(part))
            listed = self.conn.execute(f"SELECT role, chunk_rowid FROM chunk_roles WHERE chunk_rowid IN ({marks})", part)
            for role, rowid in listed:
                roles.setdefault(rowid, set()).add(role)
            rows = self.conn.execute(f"SELECT rowid, tenant, status, context, body FROM chunks WHERE rowid IN ({marks})", part)
            found += rows.fetchall()
        return [LexicalRow(r[0], r[1], r[2], frozenset(roles.get(r[0], ())), r[3], r[4]) for r in found]

    # -- lanes ---------------------------------------------------------------------------

    def lexical(self, query: str, identity: Identity, k: int, scope: Scope = None) -> list[LaneHit]:
        return self._lexical(query, identity, k, self._within(identity, scope))

    def _within(self, identity: Identity, scope: Scope) -> np.ndarray | None:
        """The rowids of the caller's tenant's rows of the scope's documents (None: no scope)."""
        if scope is None:
            return None
        ids, found = sorted(scope), []
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            found += [r[0] for r in self.conn.execute(
                f"SELECT rowid FROM chunks WHERE tenant = ? AND document_id IN ({', '.join('?' * len(part))})",
                (identity.tenant, *part))]
        return np.array(sorted(found), dtype=np.int64)

    def _lexical(self, query: str, identity: Identity, k: int, within: np.ndarray | None) -> list[LaneHit]:
        if identity.is_empty or k <= 0 or (within is not None and not within.size):
            return []
        # Rows waiting, or an index not current: a home from before this engine (or a new one),
        # or a write killed between the lexical commit and the table's, which left the index
        # disagreeing with the table until rebuilt.
        if self._pending_rows() or not self._lexicon_current():
            self._flush_unless_busy()
        from citewell.index.lexical import text_of

        lexicon = self._lexicon()
        terms = lexicon.terms(query)
        if not terms:
            return []
        # The search sees the last commit (it reloads). The access terms are required clauses of
        # the ranked query itself: tantivy's top k is the caller's top k. The candidates are read
        # from the table once, for exact scoring and for the hits, and checked against it again
        # there: a row gone, or no longer the caller's, is not scored.
        rows: dict[int, sqlite3.Row] = {}

        def texts(rowids: list[int]) -> dict[int, str]:
            rows.update(self._readable(rowids, identity))
            return {r: text_of(rows[r]["context"], rows[r]["body"]) for r in rowids if r in rows}

        ids, scores = lexicon.search(terms, identity.tenant, identity.roles, k, texts, within)
        return [self._hit(rows[int(rowid)], float(score), rank) for rank, (rowid, score) in enumerate(zip(ids, scores), start=1)]

    def _readable(self, rowids: Sequence[int], identity: Identity) -> dict[int, sqlite3.Row]:
        """The rows among ``rowids`` the identity may read now, by rowid."""
        where, params = _access(identity)
        marks = ", ".join(f":id{i}" for i in range(len(rowids)))
        found = self.conn.execute(
            "SELECT c.rowid, c.chunk_id, c.document_id, c.revision, c.title, c.section_path, c.context, c.body, "
            "c.rowid IN (SELECT chunk_rowid FROM vector_pending) AS vectorless FROM chunks c "
            f"WHERE c.rowid IN ({marks}) AND {where}",
            {**params, **{f"id{i}": r for i, r in enumerate(rowids)}},
        )
        return {row["rowid"]: row for row in found}

    def vector(
        self, query: np.ndarray, embedder_identity: str, identity: Identity, k: int, scope: Scope = None
    ) -> list[LaneHit]:
        return self._vector(query, embedder_identity, identity, k, self._within(identity, scope))

    def _vector(
        self, query: np.ndarray, embedder_identity: str, identity: Identity, k: int, within: np.ndarray | None,
        exact: bool = False,
    ) -> list[LaneHit]:
        self._check_identity(embedder_identity, claim=False)
        if identity.is_empty or k <= 0 or (within is not None and not within.size):
            return []
        rowids, scores = self._rows().scores(identity, np.asarray(query, dtype=np.float32), k, exact=exact, within=within)
        return self._top(rowids, scores, identity, k)

    def exact_vector(
        self, query: np.ndarray, embedder_identity: str, identity: Identity, k: int, scope: Scope = None
    ) -> list[LaneHit]:
        """The vector lane scoring every row the caller may see: what its clusters are measured against."""
        return self._vector(query, embedder_identity, identity, k, self._within(identity, scope), exact=True)

    def _top(self, rowids: np.ndarray, scores: np.ndarray, identity: Identity, k: int) -> list[LaneHit]:
        """The best ``k`` allowed rows (ties broken by row), re-checked against the table."""
        if scores.size == 0:
            return []
        top = min(k, scores.size)
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.lexsort((rowids[best], -scores[best]))]
        chosen = [int(rowids[i]) for i in best]
        by_rowid = self._readable(chosen, identity)
        hits = [(by_rowid[rowid], float(scores[i])) for i, rowid in zip(best, chosen) if rowid in by_rowid]
        return [self._hit(row, score, rank) for rank, (row, score) in enumerate(hits, start=1)]

    def lanes(
        self, text: str | None, vector: QueryVector | None, embedder_identity: str, identity: Identity, k: int,
        scope: Scope = None,
    ) -> dict[str, list[LaneHit]]:
        found: dict[str, list[LaneHit]] = {}
        within = self._within(identity, scope)
        if text is not None and vector is not None:
            # Both lanes at once: the model, tantivy, SQLite and numpy let go of the interpreter
            # lock while they work, so the lexical lane runs in a pool thread while the question
            # is embedded and the vector lane scored here. Should either raise, the lexical lane
            # ends on its own and is dropped.
            lexical = _LANES.submit(self._lexical, text, identity, k, within)
            query = query_vector(vector)
            vector_hits = self._vector(query, embedder_identity, identity, k, within) if query is not None else None
            found["bm25"] = lexical.result()
            if vector_hits is not None:
                found["vector"] = vector_hits
            return found
        if text is not None:
            found["bm25"] = self._lexical(text, identity, k, within)
        query = query_vector(vector)
        if query is not None:
            found["vector"] = self._vector(query, embedder_identity, identity, k, within)
        return found

    def _rows(self) -> VectorRows:
        """The vector lane's rows as of the index's last write (see :mod:`citewell.index.vectors`)."""
        with self._lock:
            held = self._vectors
            if held.epoch != self._epoch():
                with Transaction(self.conn, immediate=False):  # one snapshot: the epoch, the log and the rows
                    self._vectors = refresh(self.conn, held, self._epoch())
            return self._vectors

    @staticmethod
    def _hit(row: sqlite3.Row, score: float, rank: int) -> LaneHit:
        return LaneHit(
            chunk_id=row["chunk_id"], document_id=row["document_id"], revision=row["revision"], title=row["title"],
            section_path=json.loads(row["section_path"]), text=row["body"], score=score, rank=rank,
            vectorless="vectorless" in row.keys() and bool(row["vectorless"]),
        )
