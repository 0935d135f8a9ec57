"""Opening SQLite the same way everywhere: WAL, a busy timeout, secure delete, foreign keys."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from citewell.errors import InvalidInput


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA secure_delete=ON")  # deleted text is overwritten, not left in free pages
    return conn


class Transaction:
    """``with Transaction(conn):`` runs BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error.

    ``immediate=False`` starts a deferred transaction: a consistent read snapshot that takes
    no write lock.
    """

    def __init__(self, conn: sqlite3.Connection, immediate: bool = True) -> None:
        self.conn = conn
        self.begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute(self.begin)
        return self.conn

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


def ensure_schema(conn: sqlite3.Connection, schema: str, version: int, path: Path) -> None:
    """Create the schema in a new file; refuse, clearly, a file written in another format."""
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    if found == version or (found == 0 and tables == 0):
        conn.executescript(schema)
        conn.execute(f"PRAGMA user_version = {int(version)}")
        return
    raise InvalidInput(
        f"{path} was written in storage format {found}, this citewell uses {version}: "
        "ingest into a new --home (or CITEWELL_HOME)"
    )
