"""The vector lane's rows in memory, kept current from the index's change log.

Every write of ``index.db`` logs the rows it dropped and added (``vector_log``) under the
epoch it moves to. A process holding the rows of an older epoch applies the entries since
then: rows dropped are marked dead where they are held, rows added are read into a new
block. Reading every vector again after each write cost 0.25 s at 50k chunks (about 5 s at
1M), held the lane's lock meanwhile, so searches waited, and needed the old and the new
matrix in memory at once. Everything is read again when the log no longer reaches back to
the epoch held, or when dead rows pile up.

Each snapshot is immutable: a search scores the blocks it was handed while a refresh builds
the next snapshot beside it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from citewell.models import Identity

LOAD_SLICE = 20_000  # rows read at a time into a block
LOG_ROWS = 100_000  # log entries kept; a process further behind reads every row again
MAX_BLOCKS = 8  # beyond this, the blocks after the first are merged into one
MAX_DEAD_SHARE = 0.25  # beyond this share of dead rows held, every row is read again
_PART = 500  # rowids per IN (...) list
_FLOOR = "vector_log_floor"  # meta: the epoch the log holds every change after

VECTOR_SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_log (
    seq INTEGER PRIMARY KEY,
    epoch INTEGER NOT NULL,
    chunk_rowid INTEGER NOT NULL,
    added INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS vector_log_by_epoch ON vector_log (epoch);
"""


@dataclass(frozen=True)
class Block:
    """Rows in ascending rowid order: their vectors and access fields (tenant code, live, roles)."""

    rowids: np.ndarray
    matrix: np.ndarray
    tenants: np.ndarray
    live: np.ndarray
    role_positions: Mapping[str, np.ndarray]

    def mask(self, code: int, roles: Iterable[str]) -> np.ndarray:
        """One flag per row: the tenant's, live, and allowing one of the roles."""
        by_role = np.zeros(self.rowids.size, dtype=bool)
        for role in roles:
            positions = self.role_positions.get(role)
            if positions is not None:
                by_role[positions] = True
        return (self.tenants == code) & self.live & by_role

    def without(self, rowids: np.ndarray) -> Block:
        """This block with ``rowids`` (ascending) dead; itself if it holds none of them."""
        if not self.rowids.size or not rowids.size:
            return self
        at = np.minimum(np.searchsorted(self.rowids, rowids), self.rowids.size - 1)
        held = at[self.rowids[at] == rowids]
        if not held.size or not self.live[held].any():
            return self
        live = self.live.copy()
        live[held] = False
        return Block(self.rowids, self.matrix, self.tenants, live, self.role_positions)


def merged(blocks: Sequence[Block]) -> Block:
    """The live rows of ``blocks`` as one block. Concatenated in order they are in rowid order:
    SQLite gives a new row the highest rowid in the table plus one, and every live row held
    was in the table when a later block's rows were written."""
    keep = [np.flatnonzero(b.live) for b in blocks]
    roles: dict[str, list[np.ndarray]] = {}
    offset = 0
    for block, kept in zip(blocks, keep):
        renumber = np.full(block.rowids.size, -1, dtype=np.int64)
        renumber[kept] = np.arange(offset, offset + kept.size)
        for role, positions in block.role_positions.items():
            alive = renumber[positions]
            roles.setdefault(role, []).append(alive[alive >= 0])
        offset += kept.size
    return Block(
        rowids=np.concatenate([b.rowids[k] for b, k in zip(blocks, keep)]),
        matrix=np.concatenate([b.matrix[k] for b, k in zip(blocks, keep)]),
        tenants=np.concatenate([b.tenants[k] for b, k in zip(blocks, keep)]),
        live=np.ones(offset, dtype=bool),
        role_positions={role: np.concatenate(parts) for role, parts in roles.items()},
    )


@dataclass(frozen=True)
class VectorRows:
    """The rows of one epoch. ``tenant_codes`` only grows: a code once given is never reused."""

    epoch: int = -1
    blocks: tuple[Block, ...] = ()
    tenant_codes: Mapping[str, int] = field(default_factory=dict)

    def scores(self, identity: Identity, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rowids the identity may see and their cosines, over every block."""
        code = self.tenant_codes.get(identity.tenant)
        found: list[tuple[np.ndarray, np.ndarray]] = []
        if code is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        for block in self.blocks:
            positions = np.flatnonzero(block.mask(code, identity.roles))
            if not positions.size:
                continue
            # Scoring every row and keeping the allowed ones avoids copying most of the matrix;
            # a narrow filter is cheaper as a gathered subset.
            if positions.size * 4 > block.rowids.size:
                scores = (block.matrix @ vector)[positions]
            else:
                scores = block.matrix[positions] @ vector
            found.append((block.rowids[positions], scores))
        if not found:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if len(found) == 1:
            return found[0]
        return np.concatenate([r for r, _ in found]), np.concatenate([s for _, s in found])

    @property
    def rows(self) -> int:
        return sum(b.rowids.size for b in self.blocks)

    @property
    def dead(self) -> int:
        return sum(int(b.rowids.size - np.count_nonzero(b.live)) for b in self.blocks)


# -- the log, written inside the index's write transactions ------------------------------------


def log_changes(conn: sqlite3.Connection, epoch: int, *, dropped: Sequence[int] = (), added: Sequence[int] = ()) -> None:
    """Record a write's rows under the epoch it moved to: drops first, since a row added in the
    same write may take the rowid of one it dropped. Keeps the log to about ``LOG_ROWS``."""
    if _floor(conn) is None:  # the first write this log holds: everything after the epoch before it
        conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (_FLOOR, str(epoch - 1)))
    conn.executemany("INSERT INTO vector_log (epoch, chunk_rowid, added) VALUES (?, ?, 0)", [(epoch, r) for r in dropped])
    conn.executemany("INSERT INTO vector_log (epoch, chunk_rowid, added) VALUES (?, ?, 1)", [(epoch, r) for r in added])
    first, last = conn.execute("SELECT MIN(seq), MAX(seq) FROM vector_log").fetchone()
    if first is None or last - first + 1 <= 2 * LOG_ROWS:
        return
    # Entries are only ever removed from the front, by epoch, so seq has no gaps.
    cut = conn.execute("SELECT epoch FROM vector_log WHERE seq = ?", (last - LOG_ROWS,)).fetchone()[0]
    conn.execute("DELETE FROM vector_log WHERE epoch <= ?", (cut,))
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(cut), _FLOOR))


def _floor(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_FLOOR,)).fetchone()
    return int(row[0]) if row else None


# -- reading, inside one read transaction (the epoch, the log and the rows agree) ----------------


def refresh(conn: sqlite3.Connection, held: VectorRows, epoch: int) -> VectorRows:
    """The rows at ``epoch``: ``held`` brought forward by the log, or every row read again."""
    if held.epoch == epoch:
        return held
    floor = _floor(conn)
    if held.epoch < 0 or held.epoch > epoch or floor is None or held.epoch < floor:
        return load(conn, epoch)
    final: dict[int, bool] = {}
    for rowid, added in conn.execute("SELECT chunk_rowid, added FROM vector_log WHERE epoch > ? ORDER BY seq", (held.epoch,)):
        final[rowid] = bool(added)  # the last entry of a row says whether it is there now
    if len(final) > MAX_DEAD_SHARE * max(held.rows, 1):
        return load(conn, epoch)
    touched = np.array(sorted(final), dtype=np.int64)
    blocks = [b.without(touched) for b in held.blocks]  # a re-added rowid is a new row: read below
    codes = dict(held.tenant_codes)
    fresh = _read(conn, codes, rowids=sorted(r for r, added in final.items() if added))
    if fresh.rowids.size:
        blocks.append(fresh)
    blocks = [b for b in blocks if b.live.any()]
    if len(blocks) > MAX_BLOCKS:
        blocks = [blocks[0], merged(blocks[1:])]
    rows = VectorRows(epoch, tuple(blocks), codes)
    if rows.dead > MAX_DEAD_SHARE * max(rows.rows, 1):
        return load(conn, epoch)
    return rows


def load(conn: sqlite3.Connection, epoch: int) -> VectorRows:
    """Every row, read again."""
    codes: dict[str, int] = {}
    block = _read(conn, codes)
    return VectorRows(epoch, (block,) if block.rowids.size else (), codes)


def _read(conn: sqlite3.Connection, codes: dict[str, int], rowids: Sequence[int] | None = None) -> Block:
    """A block of the table's rows (all, or those of ``rowids``), read in slices straight into its
    arrays: holding every row's vector as Python bytes and joining them peaked at 2.6 times the
    matrix (756 MB for 292 MB at 200k chunks). New tenants get codes in ``codes``."""
    if rowids is None:
        count = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        parts: Iterable[list[int] | None] = [None]
    else:
        count = len(rowids)
        parts = [list(rowids[i : i + _PART]) for i in range(0, len(rowids), _PART)]
    width = conn.execute("SELECT length(vector) FROM chunks LIMIT 1").fetchone()
    if not count or width is None:
        return _empty()
    ids = np.empty(count, dtype=np.int64)
    matrix = np.empty((count, width[0] // 4), dtype=np.float32)
    tenants = np.empty(count, dtype=np.int32)
    live = np.empty(count, dtype=bool)
    postings: dict[str, list[int]] = {}
    start = 0
    for part in parts:
        where, params = ("", []) if part is None else (f" WHERE rowid IN ({', '.join('?' * len(part))})", part)
        cursor = conn.execute(f"SELECT rowid, tenant, status, vector FROM chunks{where} ORDER BY rowid", params)
        while found := cursor.fetchmany(LOAD_SLICE):
            end = start + len(found)
            ids[start:end] = [r[0] for r in found]
            matrix[start:end] = np.frombuffer(b"".join(r[3] for r in found), dtype=np.float32).reshape(len(found), -1)
            names = [r[1] for r in found]
            for name in dict.fromkeys(names):
                codes.setdefault(name, len(codes))
            tenants[start:end] = [codes[n] for n in names]
            live[start:end] = [r[2] == "live" for r in found]
            start = end
        roles_where = "" if part is None else f" WHERE chunk_rowid IN ({', '.join('?' * len(part))})"
        for role, rowid in conn.execute(f"SELECT role, chunk_rowid FROM chunk_roles{roles_where}", params):
            postings.setdefault(role, []).append(rowid)
    # Rows asked for are there (one snapshot, and the log's last word on each was "added");
    # each part is read in rowid order and the parts follow one another, so ids ascend.
    ids, matrix, tenants, live = ids[:start], matrix[:start], tenants[:start], live[:start]
    role_positions = {  # every role row has its chunk (a foreign key, same snapshot)
        role: np.searchsorted(ids, np.array(found, dtype=np.int64)) for role, found in postings.items()
    }
    return Block(ids, matrix, tenants, live, role_positions)


def _empty() -> Block:
    return Block(np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.int32),
                 np.zeros(0, dtype=bool), {})
