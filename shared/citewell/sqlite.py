"""Opening SQLite the same way everywhere: WAL, a busy timeout, secure delete, foreign keys.

Opening an existing database only reads, so a search never queues behind a long ingest in
another process; a write that cannot get the lock in time raises ``Busy``, not a traceback.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from citewell.errors import Busy, HomeNotWritable, InvalidInput

_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def busy_seconds() -> float:
    """The wait for another writer, from ``CITEWELL_BUSY_SECONDS`` (default 30)."""
    from citewell.settings import settings

    return settings().busy_seconds


def is_busy(error: sqlite3.OperationalError) -> bool:
    """Whether SQLite gave up waiting for a lock another connection holds."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES  # extended codes (BUSY_SNAPSHOT, ...) keep the primary in the low byte
    return "locked" in str(error) or "busy" in str(error)


def busy_error(path: Path) -> Busy:
    return Busy(f"the knowledge base at {path.parent} is busy with another write ({path.name}); try again")


@contextmanager
def busy_as_error(path: Path) -> Iterator[None]:
    """Raise ``Busy`` naming ``path`` where SQLite says 'database is locked'; other errors pass."""
    try:
        yield
    except sqlite3.OperationalError as error:
        if is_busy(error):
            raise busy_error(path) from error
        raise


class Connection(sqlite3.Connection):
    """A connection whose statements report lock contention as ``Busy``, so every store built on
    ``connect`` gets the clear error without wrapping each statement."""

    def __init__(self, database: str | os.PathLike[str], *args: Any, **kwargs: Any) -> None:
        super().__init__(database, *args, **kwargs)
        self.path = Path(database)

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        with busy_as_error(self.path):
            return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        with busy_as_error(self.path):
            return super().executemany(sql, parameters)

    def executescript(self, script: str, /) -> sqlite3.Cursor:
        with busy_as_error(self.path):
            return super().executescript(script)


def connect(path: Path) -> Connection:
    """A connection that waits ``busy_seconds()`` for another writer, then raises ``Busy``;
    ``HomeNotWritable`` when the file or its folder cannot be written, ``InvalidInput`` when the
    path holds a folder or a file that is not a database."""
    seconds = busy_seconds()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=seconds, factory=Connection)
        conn.row_factory = sqlite3.Row
        _use_wal(conn, seconds)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA secure_delete=ON")  # deleted text is overwritten, not left in free pages
    except PermissionError as error:
        raise _not_writable(path, error) from None
    except sqlite3.DatabaseError as error:
        if path.exists() and not path.is_file():
            raise InvalidInput(f"{path} is a folder, not a database file: move it out of the home") from None
        if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            raise InvalidInput(
                f"{path} is not a SQLite database (damaged, or another program's file): restore it from a "
                "backup, or move it aside and the home starts again without what it held"
            ) from None
        # "unable to open" is also a full file table or a missing folder: a permission problem
        # only when the files or their folder really cannot be written.
        if _READ_ONLY.search(str(error)) or not _writable(path):
            raise _not_writable(path, error) from None
        raise
    return conn


def _writable(path: Path) -> bool:
    """The folder and the database's files (those that exist) can be written by this process."""
    files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
    return os.access(path.parent, os.W_OK) and all(os.access(f, os.W_OK) for f in files if f.exists())


def _not_writable(path: Path, error: Exception) -> HomeNotWritable:
    # Even a search writes: WAL mode keeps a shared-memory index and a log beside the file.
    return HomeNotWritable(
        f"cannot write to {path} ({error}). A home needs write access even to search "
        "(SQLite keeps its write-ahead log beside the database): run as the user who owns it, "
        "or copy the folder somewhere you can write."
    )


class PerThread:
    """One connection per thread on one file. A connection's transaction is the connection's, not
    the thread's: two threads sharing one would run each other's statements inside their own
    BEGIN ... COMMIT. Each thread gets its own (WAL: readers never wait; one writer at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()

    def get(self) -> Connection:
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
        return conn


_READ_ONLY = re.compile(r"readonly|read-only", re.IGNORECASE)


def _use_wal(conn: Connection, seconds: float) -> None:
    """Put the file in WAL mode: lock-free on a file already in it. Two first opens of a new file
    racing to switch it get SQLITE_BUSY at once, without SQLite's busy wait, so wait here."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except Busy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


class Transaction:
    """``with Transaction(conn):`` runs BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error.

    ``immediate=False`` starts a deferred transaction: a consistent read snapshot that takes
    no write lock. On a ``connect`` connection a lock wait that runs out raises ``Busy``.
    """

    def __init__(self, conn: sqlite3.Connection, immediate: bool = True) -> None:
        self.conn = conn
        self.begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute(self.begin)
        return self.conn

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


CHECKPOINT_WAIT_SECONDS = 2.0  # then the removal is reported pending, not waited on


RECLAIM_BYTES = 16 * 1024 * 1024


def compact_file(conn: sqlite3.Connection, removed: bool) -> bool:
    """Make a file's deletions physical; False when that could not finish now (another
    connection holds the write lock or pins the log), so the removal stays pending.

    ``secure_delete`` zeroes what a delete frees, but not all of it: when SQLite rebalances a
    b-tree it rebuilds pages without clearing their unused space, so the copy a row left on the
    page it moved from outlives the row's delete (the fuzz found deleted text on live leaf
    pages, between their cell pointers and their cells). Only rewriting the file clears that:
    after a removal the file is ``VACUUM``ed, otherwise only once freed pages are most of it
    and more than 16 MB (to give the disk back). Then the log is checkpointed and truncated.
    """
    if removed or _mostly_free(conn):
        try:
            conn.execute("VACUUM")
        except (Busy, sqlite3.OperationalError):  # a writer elsewhere, or a statement open here
            return False
    return checkpoint(conn)


def _mostly_free(conn: sqlite3.Connection) -> bool:
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    return free * size >= RECLAIM_BYTES and free * 2 >= pages


def checkpoint(conn: sqlite3.Connection) -> bool:
    """Copy the write-ahead log into the database and truncate it; False when a reader or
    writer in another connection kept part of the log, so deleted pages may survive there."""
    conn.execute(f"PRAGMA busy_timeout = {int(CHECKPOINT_WAIT_SECONDS * 1000)}")  # a reader may hold on for long
    try:
        busy, log, checkpointed = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except Busy:  # SQLite reports a blocked checkpoint in the row; this is belt and braces
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_seconds() * 1000)}")
    return busy == 0 and log == checkpointed


def _statements(script: str) -> Iterator[str]:
    """The script's statements one at a time: ``executescript`` would commit the open transaction."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):  # a ';' inside a trigger body or a string is not an end
            if pending.strip(" \t\r\n;"):
                yield pending
            pending = ""


@functools.cache
def _schema_objects(schema: str) -> frozenset[str]:
    """Names of every table, index and trigger the schema creates (FTS5 shadow tables included)."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.executescript(schema)
        return frozenset(row[0] for row in scratch.execute("SELECT name FROM sqlite_master"))
    finally:
        scratch.close()


def _has_schema(conn: sqlite3.Connection, schema: str, version: int, path: Path) -> bool:
    """True if the file holds all of this schema; False if it is new and empty (or lacks objects
    this version added); raises if it was written in another format."""
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if found == version:
        return _schema_objects(schema) <= names
    if found == 0 and not names:
        return False
    raise InvalidInput(
        f"{path} was written in storage format {found}, this citewell uses {version}: "
        "ingest into a new --home (or CITEWELL_HOME)"
    )


def ensure_schema(conn: sqlite3.Connection, schema: str, version: int, path: Path) -> None:
    """Create the schema in a new file; refuse, clearly, a file written in another format.

    A file that already holds the schema is only read (no write lock), so opening never waits
    behind another process's write. Creation runs in BEGIN IMMEDIATE and checks again there,
    so two first opens cannot both create it.
    """
    with Transaction(conn, immediate=False):  # one snapshot for the version and the objects
        if _has_schema(conn, schema, version, path):
            return
    with Transaction(conn):
        if _has_schema(conn, schema, version, path):
            return
        for statement in _statements(schema):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {int(version)}")
