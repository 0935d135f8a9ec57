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
(:mod:`citewell.local.clusters`). A full read then lays the rows out cluster by cluster, and
a caller who may see at least ``EXACT_BELOW`` of them is scored on the clusters nearest the
question only (more of them the smaller the caller's share), exactly within those and only
over the caller's rows. A caller who sees fewer rows, and rows added since the last full
read, are scored exactly.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from citewell.local.clusters import centroids_of, clusters_version
from citewell.models import Identity

LOAD_SLICE = 20_000  # rows read at a time into a block
LOG_ROWS = 100_000  # log entries kept; a process further behind reads every row again
MAX_BLOCKS = 8  # beyond this, the blocks after the first are merged into one
MAX_DEAD_SHARE = 0.25  # beyond this share of dead rows held, every row is read again
MAX_DELTA_SHARE = 0.1  # beyond this share of rows outside the clustered block, every row is read again
EXACT_BELOW = 50_000  # a caller who may see fewer rows than this is scored exactly
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
    """Rows in ascending rowid order: their vectors and access fields (tenant code, live, roles)."""

    rowids: np.ndarray
    matrix: np.ndarray
    tenants: np.ndarray
    live: np.ndarray
    role_positions: Mapping[str, np.ndarray]
    starts: np.ndarray | None = None  # laid out by cluster: cluster c is rows starts[c]:starts[c + 1]
    by_rowid: np.ndarray | None = None  # then, the positions in rowid order

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
        return Block(self.rowids, self.matrix, self.tenants, live, self.role_positions, self.starts, self.by_rowid)


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
    centroids: np.ndarray | None = None
    clusters_version: int = 0
    _masks: dict[tuple[str, frozenset[str]], list[np.ndarray]] = field(default_factory=dict, compare=False, repr=False)

    def scores(self, identity: Identity, vector: np.ndarray, exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Rowids the identity may see and their cosines: every such row, or, in a clustered
        block the caller sees enough of, those in the clusters nearest the question (unless
        ``exact``: what the clusters are measured against)."""
        found: list[tuple[np.ndarray, np.ndarray]] = []
        for block, mask in zip(self.blocks, self._masks_of(identity)):
            clustered = not exact and block.starts is not None and self.centroids is not None
            if clustered and (visible := int(np.count_nonzero(mask))) >= EXACT_BELOW:
                found.extend(self._probed(block, mask, visible, vector))
                continue
            positions = np.flatnonzero(mask)
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

    def _probed(self, block: Block, mask: np.ndarray, visible: int, vector: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """The caller's rows in the clusters nearest ``vector``: a caller who sees a share of the
        rows gets that many more clusters, so about as many of their rows are scored."""
        assert self.centroids is not None and block.starts is not None
        clusters = self.centroids.shape[0]
        probe = min(clusters, math.ceil(IVF_PROBE * block.rowids.size / visible))
        nearest = np.sort(np.argpartition(-(self.centroids @ vector), probe - 1)[:probe])  # in memory order
        starts, ends = block.starts[nearest], block.starts[nearest + 1]
        lengths = ends - starts
        if not lengths.sum():
            return []
        # One product per cluster (a slice, no copy); everything else once, over all of them.
        scores = np.concatenate([block.matrix[s:e] @ vector for s, e in zip(starts.tolist(), ends.tolist()) if e > s])
        offsets = np.cumsum(lengths) - lengths
        positions = np.arange(int(lengths.sum())) + np.repeat(starts - offsets, lengths)
        allowed = mask[positions]
        return [(block.rowids[positions[allowed]], scores[allowed])]

    def _masks_of(self, identity: Identity) -> list[np.ndarray]:
        """Per block, which rows the identity may see; kept for the snapshot's life (a server's
        callers repeat; building one costs a pass over every row)."""
        key = (identity.tenant, frozenset(identity.roles))
        masks = self._masks.get(key)
        if masks is None:
            code = self.tenant_codes.get(identity.tenant)
            masks = [b.mask(code, identity.roles) if code is not None else np.zeros(b.rowids.size, dtype=bool)
                     for b in self.blocks]
            if len(self._masks) >= MASKS_KEPT:
                self._masks.clear()
            self._masks[key] = masks
        return masks

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
    clustered = [b for b in blocks if b.starts is not None]
    plain = [b for b in blocks if b.starts is None and b.live.any()]
    if len(plain) > MAX_BLOCKS:
        plain = [merged(plain)]
    rows = VectorRows(epoch, tuple(clustered + plain), codes, held.centroids, held.clusters_version)
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
        blocks = list(_read_by_cluster(conn, codes, centroids.shape[0]))
    return VectorRows(epoch, tuple(b for b in blocks if b.rowids.size), codes, centroids, version)


class _Arrays:
    """A block's arrays being filled, at given positions, from rows read in rowid order."""

    def __init__(self, count: int, width: int) -> None:
        self.ids = np.empty(count, dtype=np.int64)
        self.matrix = np.empty((count, width), dtype=np.float32)
        self.tenants = np.empty(count, dtype=np.int32)
        self.live = np.empty(count, dtype=bool)

    def put(self, at: np.ndarray | slice, found: Sequence[sqlite3.Row], codes: dict[str, int]) -> None:
        """``found``: (rowid, tenant, status, vector) rows; holding every row's vector as Python
        bytes and joining them peaked at 2.6 times the matrix (756 MB for 292 MB at 200k chunks),
        so they are read a slice at a time straight into place."""
        self.ids[at] = [r[0] for r in found]
        self.matrix[at] = np.frombuffer(b"".join(r[3] for r in found), dtype=np.float32).reshape(len(found), -1)
        names = [r[1] for r in found]
        for name in dict.fromkeys(names):
            codes.setdefault(name, len(codes))
        self.tenants[at] = [codes[n] for n in names]
        self.live[at] = [r[2] == "live" for r in found]


def _width(conn: sqlite3.Connection) -> int | None:
    found = conn.execute("SELECT length(vector) FROM chunks LIMIT 1").fetchone()  # one model per index
    return None if found is None else int(found[0]) // 4


def _read(conn: sqlite3.Connection, codes: dict[str, int], rowids: Sequence[int] | None = None) -> Block:
    """A block of the table's rows in rowid order: all, or those of ``rowids``. New tenants get
    codes in ``codes``."""
    if rowids is None:
        count = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        parts: Iterable[list[int] | None] = [None]
    else:
        count = len(rowids)
        parts = [list(rowids[i : i + _PART]) for i in range(0, len(rowids), _PART)]
    width = _width(conn)
    if not count or width is None:
        return _empty()
    arrays = _Arrays(count, width)
    postings: dict[str, list[int]] = {}
    start = 0
    for part in parts:
        where, params = ("", []) if part is None else (f" WHERE rowid IN ({', '.join('?' * len(part))})", part)
        cursor = conn.execute(f"SELECT rowid, tenant, status, vector FROM chunks{where} ORDER BY rowid", params)
        while found := cursor.fetchmany(LOAD_SLICE):
            arrays.put(slice(start, start + len(found)), found, codes)
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
    return Block(ids, arrays.matrix[:start], arrays.tenants[:start], arrays.live[:start], role_positions)


def _read_by_cluster(conn: sqlite3.Connection, codes: dict[str, int], clusters: int) -> Iterable[Block]:
    """The clustered rows as one block laid out cluster by cluster (each row read straight into
    its place: sorting a loaded matrix would need it twice in memory), and any row without a
    cluster (written by an older citewell) as a block of its own."""
    count = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    width = _width(conn)
    if not count or width is None:
        return
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
    arrays = _Arrays(order.size, width)
    cursor = conn.execute("SELECT rowid, tenant, status, vector FROM chunks ORDER BY rowid")  # the same rows, in the same order
    start = 0
    while found := cursor.fetchmany(LOAD_SLICE):
        at = place[start : start + len(found)]
        kept = at >= 0
        if kept.any():
            arrays.put(at[kept], [row for row, keep in zip(found, kept.tolist()) if keep], codes)
        start += len(found)
    postings: dict[str, list[int]] = {}
    for role, rowid in conn.execute("SELECT role, chunk_rowid FROM chunk_roles"):
        postings.setdefault(role, []).append(rowid)
    role_positions = {}
    for role, found in postings.items():
        at = place[np.searchsorted(rowids, np.array(found, dtype=np.int64))]
        role_positions[role] = at[at >= 0]
    yield Block(arrays.ids, arrays.matrix, arrays.tenants, arrays.live, role_positions,
                starts=np.searchsorted(cluster_of[order], np.arange(clusters + 1)), by_rowid=np.argsort(arrays.ids))
    rest = np.flatnonzero(cluster_of < 0)
    if rest.size:
        yield _read(conn, codes, rowids=rowids[rest].tolist())


def _empty() -> Block:
    return Block(np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.int32),
                 np.zeros(0, dtype=bool), {})
