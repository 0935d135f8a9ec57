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

From ``IVF_MIN_ROWS`` rows on, the table has centroids and each row its nearest one
(:mod:`citewell.index.clusters`). A full read then holds the rows as float16 codes, cluster by
cluster (:mod:`citewell.index.codes`: half the memory of float32), and a caller who may see at
least ``EXACT_BELOW`` of them is scored on the clusters nearest the question only (more of them
the smaller the caller's share), only over the caller's rows. A caller who sees fewer rows is
scored on every cluster; rows added since the last full read are held as float32 and scored
exactly.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from citewell.index.clusters import centroids_of, clusters_version
from citewell.index.codes import ClusterCodes
from citewell.models.identity import Identity

LOAD_SLICE = 20_000  # rows read at a time into a block
LOG_ROWS = 100_000  # log entries kept; a process further behind reads every row again
MAX_BLOCKS = 8  # beyond this, the blocks after the first are merged into one
MAX_DEAD_SHARE = 0.25  # beyond this share of dead rows held, every row is read again
MAX_DELTA_SHARE = 0.1  # beyond this share of rows outside the clustered block, every row is read again
EXACT_BELOW = 50_000  # a caller who may see fewer rows than this is scored on every cluster
GATHER_BELOW = 5_000  # one who sees fewer than this, on their own rows copied out as float32 (< 7.7 MB)
IVF_PROBE = 128  # clusters scored for a caller who sees every row (divided by the share seen): an eighth
MASKS_KEPT = 16  # callers' row masks kept per snapshot
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
    """Rows and their access fields (tenant code, live, roles), with their vectors either as a
    float32 ``matrix`` in ascending rowid order or as ``codes`` laid out cluster by cluster."""

    rowids: np.ndarray
    tenants: np.ndarray
    live: np.ndarray
    role_positions: Mapping[str, np.ndarray]
    matrix: np.ndarray | None = None
    codes: ClusterCodes | None = None
    starts: np.ndarray | None = None  # with codes: cluster c is rows starts[c]:starts[c + 1]
    by_rowid: np.ndarray | None = None  # with codes: the positions in rowid order

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
        ordered = self.rowids if self.by_rowid is None else self.rowids[self.by_rowid]
        at = np.minimum(np.searchsorted(ordered, rowids), self.rowids.size - 1)
        held = at[ordered[at] == rowids]
        if self.by_rowid is not None:
            held = self.by_rowid[held]
        if not held.size or not self.live[held].any():
            return self
        live = self.live.copy()
        live[held] = False
        return replace(self, live=live)


def merged(blocks: Sequence[Block]) -> Block:
    """The live rows of ``blocks`` (not clustered) as one block. Concatenated in order they are in rowid order:
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
        matrix=np.concatenate([_matrix(b)[k] for b, k in zip(blocks, keep)]),
        tenants=np.concatenate([b.tenants[k] for b, k in zip(blocks, keep)]),
        live=np.ones(offset, dtype=bool),
        role_positions={role: np.concatenate(parts) for role, parts in roles.items()},
    )


class Access:
    """A caller's rows in one block: a flag per row, and, for a clustered block, the same flags
    as the bitmap faiss tests each row's position against before scoring it."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows
        self.visible = int(np.count_nonzero(rows))
        self._bitmap: np.ndarray | None = None
        self._positions: np.ndarray | None = None
        self._gathered: np.ndarray | None = None

    def positions(self) -> np.ndarray:
        if self._positions is None:
            self._positions = np.flatnonzero(self.rows)
        return self._positions

    def gathered(self, block: Block) -> np.ndarray:
        """The caller's rows of a clustered block, copied out once per snapshot as float32 (numpy
        converts float16 at about 2 ns a value: 3 ms a search for 4,000 rows)."""
        if self._gathered is None:
            assert block.codes is not None and block.starts is not None
            self._gathered = block.codes.rows(self.positions(), block.starts).astype(np.float32)
        return self._gathered

    def bitmap(self) -> np.ndarray:
        if self._bitmap is None:
            self._bitmap = np.packbits(self.rows, bitorder="little")
        return self._bitmap


def _matrix(block: Block) -> np.ndarray:
    assert block.matrix is not None, "a block without codes holds float32 rows"
    return block.matrix


@dataclass(frozen=True)
class VectorRows:
    """The rows of one epoch. ``tenant_codes`` only grows: a code once given is never reused."""

    epoch: int = -1
    blocks: tuple[Block, ...] = ()
    tenant_codes: Mapping[str, int] = field(default_factory=dict)
    clusters_version: int = 0
    _masks: dict[tuple[str, frozenset[str]], list[Access]] = field(default_factory=dict, compare=False, repr=False)

    def scores(self, identity: Identity, vector: np.ndarray, k: int,
               exact: bool = False, within: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Rowids the identity may see and their cosines, among them its best ``k``: in a block of
        float32 rows every row the caller may see, in the clustered block the caller's best ``k``
        in the clusters nearest the question, or in every cluster for a caller who sees few rows
        (and when ``exact``: what the clusters are measured against), or, for a caller who sees
        very few, every one of their rows. ``within`` (sorted rowids: a query filter's) narrows the
        caller's rows before any of that, so a narrow filter is scored as a caller who sees few."""
        found: list[tuple[np.ndarray, np.ndarray]] = []
        accesses = self._access_of(identity)
        if within is not None:
            accesses = [Access(a.rows & np.isin(b.rowids, within, assume_unique=True)) for b, a in zip(self.blocks, accesses)]
        for block, access in zip(self.blocks, accesses):
            if not access.visible:
                continue
            if block.codes is not None and access.visible < GATHER_BELOW:
                positions = access.positions()
                scores = access.gathered(block) @ vector
                found.append((block.rowids[positions], scores))
                continue
            if block.codes is not None:
                probe = block.codes.clusters
                if not exact and access.visible >= EXACT_BELOW:
                    # A caller who sees a share of the rows gets that many more clusters, so about
                    # as many of their rows are scored.
                    probe = min(probe, math.ceil(IVF_PROBE * block.rowids.size / access.visible))
                positions, scores = block.codes.search(vector, k, probe, access.bitmap())
                found.append((block.rowids[positions], scores))
                continue
            matrix = _matrix(block)
            positions = access.positions()
            # Scoring every row and keeping the allowed ones avoids copying most of the matrix;
            # a narrow filter is cheaper as a gathered subset.
            if positions.size * 4 > block.rowids.size:
                scores = (matrix @ vector)[positions]
            else:
                scores = matrix[positions] @ vector
            found.append((block.rowids[positions], scores))
        if not found:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if len(found) == 1:
            return found[0]
        return np.concatenate([r for r, _ in found]), np.concatenate([s for _, s in found])

    def _access_of(self, identity: Identity) -> list[Access]:
        """Per block, which rows the identity may see; kept for the snapshot's life (a server's
        callers repeat; building one costs a pass over every row)."""
        key = (identity.tenant, frozenset(identity.roles))
        found = self._masks.get(key)
        if found is None:
            code = self.tenant_codes.get(identity.tenant)
            found = [Access(b.mask(code, identity.roles) if code is not None else np.zeros(b.rowids.size, dtype=bool))
                     for b in self.blocks]
            if len(self._masks) >= MASKS_KEPT:
                self._masks.clear()
            self._masks[key] = found
        return found

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
    if (held.epoch < 0 or held.epoch > epoch or floor is None or held.epoch < floor
            or clusters_version(conn) != held.clusters_version):
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
    clustered = [b for b in blocks if b.codes is not None]
    plain = [b for b in blocks if b.codes is None and b.live.any()]
    if len(plain) > MAX_BLOCKS:
        plain = [merged(plain)]
    rows = VectorRows(epoch, tuple(clustered + plain), codes, held.clusters_version)
    outside = sum(b.rowids.size for b in plain)
    if rows.dead > MAX_DEAD_SHARE * max(rows.rows, 1) or (clustered and outside > MAX_DELTA_SHARE * rows.rows):
        return load(conn, epoch)
    return rows


def load(conn: sqlite3.Connection, epoch: int) -> VectorRows:
    """Every row, read again: by cluster when the table has centroids."""
    codes: dict[str, int] = {}
    centroids = centroids_of(conn)
    version = clusters_version(conn)
    if centroids is None:
        blocks = [_read(conn, codes)]
    else:
        blocks = list(_read_by_cluster(conn, codes, centroids))
    return VectorRows(epoch, tuple(b for b in blocks if b.rowids.size), codes, version)


class _Arrays:
    """A block's access arrays being filled, at given positions, from rows read in rowid order."""

    def __init__(self, count: int) -> None:
        self.ids = np.empty(count, dtype=np.int64)
        self.tenants = np.empty(count, dtype=np.int32)
        self.live = np.empty(count, dtype=bool)

    def put(self, at: np.ndarray | slice, found: Sequence[sqlite3.Row], codes: dict[str, int]) -> np.ndarray:
        """``found``: (rowid, tenant, status, vector) rows; returns their vectors. Holding every
        row's vector as Python bytes and joining them peaked at 2.6 times the matrix (756 MB for
        292 MB at 200k chunks), so they are read a slice at a time and put in place by the caller."""
        self.ids[at] = [r[0] for r in found]
        names = [r[1] for r in found]
        for name in dict.fromkeys(names):
            codes.setdefault(name, len(codes))
        self.tenants[at] = [codes[n] for n in names]
        self.live[at] = [r[2] == "live" for r in found]
        return np.frombuffer(b"".join(r[3] for r in found), dtype=np.float32).reshape(len(found), -1)


# A row published before its vector is read as not live: the vector lane never scores its zeros.
_STATUS = "CASE WHEN rowid IN (SELECT chunk_rowid FROM vector_pending) THEN 'pending' ELSE status END"


def _width(conn: sqlite3.Connection) -> int | None:
    found = conn.execute("SELECT length(vector) FROM chunks LIMIT 1").fetchone()  # one model per index
    return None if found is None else int(found[0]) // 4


def _read(conn: sqlite3.Connection, codes: dict[str, int], rowids: Sequence[int] | None = None) -> Block:
    """A block of the table's rows in rowid order, as float32: all, or those of ``rowids``. New
    tenants get codes in ``codes``."""
    if rowids is None:
        count = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        parts: Iterable[list[int] | None] = [None]
    else:
        count = len(rowids)
        parts = [list(rowids[i : i + _PART]) for i in range(0, len(rowids), _PART)]
    width = _width(conn)
    if not count or width is None:
        return _empty()
    arrays = _Arrays(count)
    matrix = np.empty((count, width), dtype=np.float32)
    postings: dict[str, list[int]] = {}
    start = 0
    for part in parts:
        where, params = ("", []) if part is None else (f" WHERE rowid IN ({', '.join('?' * len(part))})", part)
        cursor = conn.execute(f"SELECT rowid, tenant, {_STATUS}, vector FROM chunks{where} ORDER BY rowid", params)
        while found := cursor.fetchmany(LOAD_SLICE):
            matrix[start : start + len(found)] = arrays.put(slice(start, start + len(found)), found, codes)
            start += len(found)
        roles_where = "" if part is None else f" WHERE chunk_rowid IN ({', '.join('?' * len(part))})"
        for role, rowid in conn.execute(f"SELECT role, chunk_rowid FROM chunk_roles{roles_where}", params):
            postings.setdefault(role, []).append(rowid)
    # Rows asked for are there (one snapshot, and the log's last word on each was "added");
    # each part is read in rowid order and the parts follow one another, so ids ascend.
    ids = arrays.ids[:start]
    role_positions = {  # every role row has its chunk (a foreign key, same snapshot)
        role: np.searchsorted(ids, np.array(found, dtype=np.int64)) for role, found in postings.items()
    }
    return Block(ids, arrays.tenants[:start], arrays.live[:start], role_positions, matrix=matrix[:start])


def _read_by_cluster(conn: sqlite3.Connection, codes: dict[str, int], centroids: np.ndarray) -> Iterable[Block]:
    """The clustered rows as one block of float16 codes laid out cluster by cluster (each slice
    of rows read, encoded and put straight into place: no float32 copy of every row is ever
    held), and any row without a cluster (written by an older citewell) as a block of its own."""
    count = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    if not count or _width(conn) is None:
        return
    clusters = centroids.shape[0]
    rowids = np.empty(count, dtype=np.int64)
    cluster_of = np.empty(count, dtype=np.int64)
    cursor = conn.execute("SELECT c.rowid, COALESCE(k.cluster, -1) FROM chunks c "
                          "LEFT JOIN chunk_clusters k ON k.chunk_rowid = c.rowid ORDER BY c.rowid")
    start = 0
    while found := cursor.fetchmany(LOAD_SLICE):
        pairs = np.array(found, dtype=np.int64).reshape(-1, 2)
        rowids[start : start + len(found)], cluster_of[start : start + len(found)] = pairs[:, 0], pairs[:, 1]
        start += len(found)
    clustered = np.flatnonzero(cluster_of >= 0)
    order = clustered[np.argsort(cluster_of[clustered], kind="stable")]  # rowid-order indexes, by cluster
    place = np.full(count, -1, dtype=np.int64)
    place[order] = np.arange(order.size)
    starts = np.searchsorted(cluster_of[order], np.arange(clusters + 1))
    arrays = _Arrays(order.size)
    block_codes = ClusterCodes(centroids, np.diff(starts))
    # the same rows, in the same order
    cursor = conn.execute(f"SELECT rowid, tenant, {_STATUS}, vector FROM chunks ORDER BY rowid")
    start = 0
    while found := cursor.fetchmany(LOAD_SLICE):
        at = place[start : start + len(found)]
        kept = np.flatnonzero(at >= 0)
        if kept.size:
            vectors = arrays.put(at[kept], [found[i] for i in kept.tolist()], codes)
            # Positions ascend with the cluster, and within it with the rowid: sorted, the slice's
            # rows of one cluster are a run, the next rows of that cluster's list.
            by_position = np.argsort(at[kept], kind="stable")
            positions = at[kept][by_position]
            runs = np.flatnonzero(np.diff(cluster_of[start + kept][by_position], prepend=-1, append=-1))
            for first, end in zip(runs[:-1].tolist(), runs[1:].tolist()):
                cluster = int(cluster_of[start + kept[by_position[first]]])
                block_codes.put(cluster, int(positions[first] - starts[cluster]), positions[first:end],
                                vectors[by_position[first:end]])
        start += len(found)
    postings: dict[str, list[int]] = {}
    for role, rowid in conn.execute("SELECT role, chunk_rowid FROM chunk_roles"):
        postings.setdefault(role, []).append(rowid)
    role_positions = {}
    for role, found in postings.items():
        at = place[np.searchsorted(rowids, np.array(found, dtype=np.int64))]
        role_positions[role] = at[at >= 0]
    yield Block(arrays.ids, arrays.tenants, arrays.live, role_positions, codes=block_codes, starts=starts,
                by_rowid=np.argsort(arrays.ids))
    rest = np.flatnonzero(cluster_of < 0)
    if rest.size:
        yield _read(conn, codes, rowids=rowids[rest].tolist())


def _empty() -> Block:
    return Block(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=bool), {},
                 matrix=np.zeros((0, 0), dtype=np.float32))
