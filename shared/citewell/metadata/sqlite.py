"""MetadataStore on SQLite: document records, chunk records and the embedding cache."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from citewell.filters import SearchFilter, checked_scope
from citewell.leases import Lease
from citewell.models.answers import AnswerRecord
from citewell.models.chunks import Chunk
from citewell.models.conversations import Conversation, Turn, head_json, latest, stored_head
from citewell.models.documents import Document, DocumentStatus, Upload
from citewell.models.identity import Identity
from citewell.models.removals import Removal
from citewell.models.values import new_token, utcnow
from citewell.ports import DocumentPage
from citewell.sqlite import Connection, PerThread, Transaction, compact_file, ensure_schema

SCHEMA_VERSION = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    record TEXT NOT NULL,
    version INTEGER NOT NULL,
    generation TEXT NOT NULL,
    PRIMARY KEY (tenant, document_id)
);
CREATE TABLE IF NOT EXISTS document_tags (
    tenant TEXT NOT NULL,
    tag TEXT NOT NULL,
    document_id TEXT NOT NULL,
    PRIMARY KEY (tenant, tag, document_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS uploads (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    upload_id TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (tenant, document_id, upload_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (tenant, document_id, revision, chunk_id)
);
CREATE INDEX IF NOT EXISTS chunks_by_hash ON chunks (content_hash);
CREATE TABLE IF NOT EXISTS citations (
    tenant TEXT NOT NULL,
    document_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    PRIMARY KEY (tenant, document_id, revision, answer_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS answers (
    tenant TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (tenant, answer_id)
);
CREATE TABLE IF NOT EXISTS answer_cache (
    cache_key TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    answer_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tenant_epochs (
    tenant TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS removals (
    removal_id TEXT PRIMARY KEY,
    record TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS conversations (
    tenant TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (tenant, conversation_id)
);
CREATE INDEX IF NOT EXISTS conversations_by_subject ON conversations (tenant, subject, updated_at);
CREATE INDEX IF NOT EXISTS conversations_by_age ON conversations (updated_at);
CREATE TABLE IF NOT EXISTS conversation_answers (
    tenant TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    PRIMARY KEY (tenant, answer_id, conversation_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS conversation_turns (
    tenant TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    answer_id TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (tenant, conversation_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS conversation_turns_by_answer ON conversation_turns (tenant, conversation_id, answer_id);
CREATE TABLE IF NOT EXISTS embeddings (
    identity TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (identity, content_hash)
) WITHOUT ROWID;
"""
_BATCH = 500  # SQLite's default bound-parameter limit leaves room for this many


class SqliteMetadataStore:
    def __init__(self, path: Path) -> None:
        self._connections = PerThread(path)
        ensure_schema(self.conn, _SCHEMA, SCHEMA_VERSION, path)

    @property
    def conn(self) -> Connection:
        """This thread's connection: a server answers requests in several threads at once."""
        return self._connections.get()

    # -- documents ---------------------------------------------------------------------

    def get_document(self, tenant: str, document_id: str) -> Document | None:
        row = self.conn.execute(
            "SELECT record FROM documents WHERE tenant = ? AND document_id = ?", (tenant, document_id)
        ).fetchone()
        return Document.model_validate_json(row["record"]) if row else None

    def get_documents(self, tenant: str, document_ids: Iterable[str]) -> dict[str, Document]:
        ids = sorted(set(document_ids))
        found: dict[str, Document] = {}
        for offset in range(0, len(ids), _BATCH):
            part = ids[offset : offset + _BATCH]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                f"SELECT record FROM documents WHERE tenant = ? AND document_id IN ({marks})", (tenant, *part)
            ):
                doc = Document.model_validate_json(row["record"])
                found[doc.document_id] = doc
        return found

    def list_documents(self, tenant: str) -> list[Document]:
        rows = self.conn.execute("SELECT record FROM documents WHERE tenant = ? ORDER BY document_id", (tenant,))
        return [Document.model_validate_json(r["record"]) for r in rows]

    def page_documents(self, tenant: str, limit: int, after: str | None = None, reader: Identity | None = None) -> DocumentPage:
        """By the primary key from ``after`` on, the reader's roles checked in the same query."""
        where, params = ["tenant = ?", "document_id > ?"], [tenant, after or ""]
        if reader is not None:
            if not reader.can_see(tenant, reader.roles):
                return DocumentPage([], None)
            roles = sorted(reader.roles)
            marks = ", ".join("?" * len(roles))
            where.append(f"EXISTS (SELECT 1 FROM json_each(record, '$.allowed_roles') WHERE value IN ({marks}))")
            params += roles
        rows = self.conn.execute(f"SELECT record FROM documents WHERE {' AND '.join(where)} ORDER BY document_id LIMIT ?",
                                 [*params, limit + 1]).fetchall()
        documents = [Document.model_validate_json(r["record"]) for r in rows[:limit]]
        return DocumentPage(documents, documents[-1].document_id if len(rows) > limit else None)

    def find_documents(self, identity: Identity, wanted: SearchFilter) -> frozenset[str]:
        """The filter resolved in SQL over the records (the ids and the prefix on the key), as
        :meth:`SearchFilter.admits` decides, among the records the identity may read."""
        from citewell.filters import MAX_SCOPE

        roles = sorted(identity.roles)
        marks = ", ".join("?" * len(roles))
        where = ["tenant = ?", f"EXISTS (SELECT 1 FROM json_each(record, '$.allowed_roles') WHERE value IN ({marks}))"]
        params: list[object] = [identity.tenant, *roles]
        if wanted.document_ids:
            where.append(f"document_id IN ({', '.join('?' * len(wanted.document_ids))})")
            params += sorted(wanted.document_ids)
        if wanted.prefix:  # ids sort byte-wise: every id under "a/" lies in ["a/", "a0")
            where.append("document_id >= ? AND document_id < ?")
            params += [wanted.prefix, wanted.prefix[:-1] + "0"]
        if wanted.source is not None:
            where.append("json_extract(record, '$.source') = ?")
            params.append(wanted.source)
        for tag in sorted(wanted.tags):  # by key: a tag narrows before any record is read
            where.append("document_id IN (SELECT document_id FROM document_tags WHERE tenant = ? AND tag = ?)")
            params += [identity.tenant, tag]
        if wanted.locale:
            where.append("(lower(json_extract(record, '$.locale')) = ? "
                         "OR substr(lower(json_extract(record, '$.locale')), 1, ?) = ?)")
            params += [wanted.locale.lower(), len(wanted.locale) + 1, wanted.locale.lower() + "-"]
        if wanted.effective_on:
            day = wanted.effective_on.isoformat()
            where.append("(json_extract(record, '$.effective_from') IS NULL OR "
                         "julianday(json_extract(record, '$.effective_from')) < julianday(?, '+1 day'))")
            where.append("(json_extract(record, '$.effective_until') IS NULL OR "
                         "julianday(json_extract(record, '$.effective_until')) > julianday(?))")
            params += [day, day]
        rows = self.conn.execute(f"SELECT document_id FROM documents WHERE {' AND '.join(where)} LIMIT ?",
                                 [*params, MAX_SCOPE + 1])
        return checked_scope(frozenset(r[0] for r in rows))

    def save_document(self, document: Document) -> Document | None:
        stored = document.model_copy(update={"version": document.version + 1, "updated_at": utcnow()})
        values = (stored.model_dump_json(), stored.version, stored.generation, document.tenant, document.document_id)
        with Transaction(self.conn):
            if document.version == 0:
                cursor = self.conn.execute(
                    "INSERT OR IGNORE INTO documents (record, version, generation, tenant, document_id) VALUES (?, ?, ?, ?, ?)",
                    values,
                )
            else:
                cursor = self.conn.execute(
                    "UPDATE documents SET record = ?, version = ?, generation = ? WHERE tenant = ? AND document_id = ? "
                    "AND version = ?",
                    (*values, document.version),
                )
            if cursor.rowcount == 1:  # the tags a filter looks up by key (records written before tags had none)
                self.conn.execute("DELETE FROM document_tags WHERE tenant = ? AND document_id = ?",
                                  (document.tenant, document.document_id))
                self.conn.executemany("INSERT INTO document_tags (tenant, tag, document_id) VALUES (?, ?, ?)",
                                      [(document.tenant, tag, document.document_id) for tag in sorted(stored.tags)])
        return stored if cursor.rowcount == 1 else None

    def delete_document(self, tenant: str, document_id: str, generation: str | None = None) -> int:
        with Transaction(self.conn):
            cursor = self.conn.execute(
                "DELETE FROM documents WHERE tenant = ? AND document_id = ? AND (? IS NULL OR generation = ?)",
                (tenant, document_id, generation, generation),
            )
            if cursor.rowcount:
                self.conn.execute("DELETE FROM document_tags WHERE tenant = ? AND document_id = ?", (tenant, document_id))
        return cursor.rowcount

    # -- upload intents ------------------------------------------------------------------

    def put_upload(self, upload: Upload) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO uploads (tenant, document_id, upload_id, record) VALUES (?, ?, ?, ?)",
            (upload.tenant, upload.document_id, upload.upload_id, upload.model_dump_json()),
        )

    def get_upload(self, tenant: str, document_id: str, upload_id: str) -> Upload | None:
        row = self.conn.execute(
            "SELECT record FROM uploads WHERE tenant = ? AND document_id = ? AND upload_id = ?", (tenant, document_id, upload_id)
        ).fetchone()
        return Upload.model_validate_json(row["record"]) if row else None

    def list_uploads(self, tenant: str, document_id: str) -> list[Upload]:
        rows = self.conn.execute("SELECT record FROM uploads WHERE tenant = ? AND document_id = ?", (tenant, document_id))
        return sorted((Upload.model_validate_json(r["record"]) for r in rows), key=lambda u: u.seq)

    def delete_upload(self, tenant: str, document_id: str, upload_id: str) -> int:
        return self.conn.execute(
            "DELETE FROM uploads WHERE tenant = ? AND document_id = ? AND upload_id = ?", (tenant, document_id, upload_id)
        ).rowcount

    def upload_inventory(self) -> list[Upload]:
        return [Upload.model_validate_json(r["record"]) for r in self.conn.execute("SELECT record FROM uploads")]

    # -- chunk records -----------------------------------------------------------------

    def put_chunks(self, chunks: Sequence[Chunk]) -> None:
        with Transaction(self.conn):
            self.conn.executemany(
                "DELETE FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ?",
                sorted({(c.tenant, c.document_id, c.revision) for c in chunks}),
            )
            self.conn.executemany(
                "INSERT INTO chunks (tenant, document_id, revision, chunk_id, position, content_hash, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (c.tenant, c.document_id, c.revision, c.chunk_id, i, c.content_hash, c.record_json())
                    for i, c in enumerate(chunks)
                ],
            )

    def get_chunks(self, tenant: str, document_id: str, revision: str) -> list[Chunk]:
        rows = self.conn.execute(
            "SELECT record FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ? ORDER BY position",
            (tenant, document_id, revision),
        )
        return [Chunk.model_validate_json(r["record"]) for r in rows]

    def chunk_pages(self, tenant: str, document_id: str, revision: str, size: int = _BATCH) -> Iterator[list[Chunk]]:
        """By primary key, ``size`` records a statement: no read stays open between pages."""
        after = ""
        while rows := self.conn.execute(
                "SELECT chunk_id, record FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ? AND chunk_id > ? "
                "ORDER BY chunk_id LIMIT ?", (tenant, document_id, revision, after, size)).fetchall():
            yield [Chunk.model_validate_json(r["record"]) for r in rows]
            if len(rows) < size:
                return
            after = rows[-1]["chunk_id"]

    def set_access(self, tenant: str, document_id: str, revision: str, allowed_roles: frozenset[str], title: str) -> int:
        """One transaction a page; only rows still there are updated."""
        count = 0
        for page in self.chunk_pages(tenant, document_id, revision):
            stamped = [c.model_copy(update={"allowed_roles": allowed_roles, "title": title}) for c in page]
            with Transaction(self.conn):
                self.conn.executemany(
                    "UPDATE chunks SET content_hash = ?, record = ? "
                    "WHERE tenant = ? AND document_id = ? AND revision = ? AND chunk_id = ?",
                    [(c.content_hash, c.record_json(), tenant, document_id, revision, c.chunk_id) for c in stamped])
            count += len(page)
        return count

    def get_chunks_by_id(self, tenant: str, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], Chunk]:
        wanted = sorted(set(keys))
        found: dict[tuple[str, str, str], Chunk] = {}
        for document_id, revision, chunk_id in wanted:
            row = self.conn.execute(
                "SELECT record FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ? AND chunk_id = ?",
                (tenant, document_id, revision, chunk_id),
            ).fetchone()
            if row:
                found[(document_id, revision, chunk_id)] = Chunk.model_validate_json(row["record"])
        return found

    def chunk_revisions(self, tenant: str, document_id: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT DISTINCT revision FROM chunks WHERE tenant = ? AND document_id = ? ORDER BY revision", (tenant, document_id)
        )
        return [r["revision"] for r in rows]

    def hashes_in_use(self, content_hashes: Iterable[str]) -> set[str]:
        hashes = sorted(set(content_hashes))
        used: set[str] = set()
        for offset in range(0, len(hashes), _BATCH):
            part = hashes[offset : offset + _BATCH]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(f"SELECT DISTINCT content_hash FROM chunks WHERE content_hash IN ({marks})", part)
            used.update(r[0] for r in rows)
        return used

    def delete_chunks(self, tenant: str, document_id: str, revision: str) -> int:
        cursor = self.conn.execute(
            "DELETE FROM chunks WHERE tenant = ? AND document_id = ? AND revision = ?", (tenant, document_id, revision)
        )
        return cursor.rowcount

    # -- conversations -------------------------------------------------------------------

    def save_conversation(self, conversation: Conversation) -> Conversation | None:
        """Store the head over the version it was read at (0: a new one) and the turns it carries,
        one row each; None if another writer got there first. A record holding its turns (written
        before turns had rows) has them moved to rows first, in the same transaction. Its answers
        are indexed so a withdrawal finds its turns."""
        turns = sorted({t.seq: t for t in conversation.turns}.values(), key=lambda t: t.seq)
        stored = conversation.model_copy(update={"version": conversation.version + 1, "turns": turns,
                                                 "turn_count": max([conversation.turn_count, *(t.seq for t in turns)])})
        with Transaction(self.conn):
            row = self.conn.execute("SELECT version, record FROM conversations WHERE tenant = ? AND conversation_id = ?",
                                    (conversation.tenant, conversation.conversation_id)).fetchone()
            if (row["version"] if row else 0) != conversation.version:
                return None
            whole = stored_head(row["record"])[1] if row else None
            if whole:
                self._put_turns(stored, whole, replace=False)
            self.conn.execute(
                "INSERT OR REPLACE INTO conversations (tenant, conversation_id, subject, version, updated_at, record) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (stored.tenant, stored.conversation_id, stored.subject, stored.version, stored.updated_at.isoformat(),
                 head_json(stored)),
            )
            self._put_turns(stored, turns, replace=True)
        return stored

    def _snapshot(self) -> AbstractContextManager[object]:
        """A read snapshot (a head and its turns as of one moment), or the transaction already open."""
        return nullcontext() if self.conn.in_transaction else Transaction(self.conn, immediate=False)

    def _put_turns(self, conversation: Conversation, turns: Sequence[Turn], replace: bool) -> None:
        key = (conversation.tenant, conversation.conversation_id)
        self.conn.executemany(
            f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO conversation_turns "
            "(tenant, conversation_id, seq, answer_id, record) VALUES (?, ?, ?, ?, ?)",
            [(*key, t.seq, t.answer_id, t.model_dump_json()) for t in turns])
        self.conn.executemany(
            "INSERT OR IGNORE INTO conversation_answers (tenant, answer_id, conversation_id) VALUES (?, ?, ?)",
            [(key[0], a, key[1]) for a in sorted({t.answer_id for t in turns})])

    def _read(self, record: str, last: int | None = None, answers: Sequence[str] | None = None,
              before: int | None = None) -> Conversation:
        """A stored record with its turns: its latest ``last`` (None: all) of those before seq
        ``before`` (None: to the newest), or those that got ``answers``."""
        head, whole = stored_head(record)
        if whole is not None:
            turns = [t for t in whole if t.answer_id in answers] if answers is not None else latest(whole, last, before)
        elif last == 0:
            turns = []
        else:
            key = (head.tenant, head.conversation_id)
            if answers is None and before is not None:  # a page of a view: the key's index, read back from ``before``
                rows = list(self.conn.execute(
                    "SELECT record FROM conversation_turns WHERE tenant = ? AND conversation_id = ? AND seq < ? "
                    "ORDER BY seq DESC LIMIT ?", (*key, before, -1 if last is None else last)))
            elif answers is not None:
                rows = [r for offset in range(0, len(answers), _BATCH) for r in self.conn.execute(
                    "SELECT record FROM conversation_turns WHERE tenant = ? AND conversation_id = ? "
                    f"AND answer_id IN ({','.join('?' * len(answers[offset : offset + _BATCH]))})",
                    (*key, *answers[offset : offset + _BATCH]))]
            elif last is None:
                rows = list(self.conn.execute(
                    "SELECT record FROM conversation_turns WHERE tenant = ? AND conversation_id = ?", key))
            else:
                rows = list(self.conn.execute("SELECT record FROM conversation_turns WHERE tenant = ? AND conversation_id = ? "
                                              "ORDER BY seq DESC LIMIT ?", (*key, last)))
            turns = sorted((Turn.model_validate_json(r[0]) for r in rows), key=lambda t: t.seq)
        return head.model_copy(update={"turns": turns})

    def get_conversation(self, tenant: str, conversation_id: str, last: int | None = None,
                         before: int | None = None) -> Conversation | None:
        with self._snapshot():  # the head and its turns as of one moment
            row = self.conn.execute("SELECT record FROM conversations WHERE tenant = ? AND conversation_id = ?",
                                    (tenant, conversation_id)).fetchone()
            return self._read(row["record"], last, before=before) if row else None

    def conversations_of(self, tenant: str, subject: str, limit: int = 50, last: int | None = None) -> list[Conversation]:
        """The subject's conversations in ``tenant``, the latest first."""
        with self._snapshot():
            rows = list(self.conn.execute(
                "SELECT record FROM conversations WHERE tenant = ? AND subject = ? ORDER BY updated_at DESC LIMIT ?",
                (tenant, subject, limit),
            ))
            return [self._read(r[0], last) for r in rows]

    def conversations_answering(self, tenant: str, answer_ids: Iterable[str]) -> list[Conversation]:
        """Every conversation with a turn that got one of these answers, carrying those turns."""
        ids = sorted(set(answer_ids))
        found: dict[str, None] = {}
        with self._snapshot():
            for offset in range(0, len(ids), _BATCH):
                part = ids[offset : offset + _BATCH]
                rows = self.conn.execute(
                    "SELECT conversation_id FROM conversation_answers "
                    f"WHERE tenant = ? AND answer_id IN ({','.join('?' * len(part))})",
                    (tenant, *part),
                )
                found.update((r[0], None) for r in rows)
            heads = (self.conn.execute("SELECT record FROM conversations WHERE tenant = ? AND conversation_id = ?",
                                       (tenant, c)).fetchone() for c in found)
            return [self._read(h[0], answers=ids) for h in heads if h is not None]

    def delete_conversation(self, tenant: str, conversation_id: str) -> int:
        with Transaction(self.conn):
            for table in ("conversation_answers", "conversation_turns"):
                self.conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND conversation_id = ?", (tenant, conversation_id))
            return self.conn.execute("DELETE FROM conversations WHERE tenant = ? AND conversation_id = ?",
                                     (tenant, conversation_id)).rowcount

    def conversations_idle_since(self, before: datetime) -> list[Conversation]:
        rows = self.conn.execute("SELECT record FROM conversations WHERE julianday(updated_at) < julianday(?)",
                                 (before.astimezone(UTC).isoformat(),))
        return [stored_head(r[0])[0] for r in rows]

    def conversation_inventory(self) -> list[Conversation]:
        with self._snapshot():
            turns: dict[tuple[str, str], list[Turn]] = {}
            for r in self.conn.execute("SELECT tenant, conversation_id, record FROM conversation_turns ORDER BY tenant, "
                                       "conversation_id, seq"):
                turns.setdefault((r[0], r[1]), []).append(Turn.model_validate_json(r[2]))
            found = []
            for (record,) in self.conn.execute("SELECT record FROM conversations"):
                head, whole = stored_head(record)
                found.append(head.model_copy(update={"turns": whole if whole is not None
                                                     else turns.get((head.tenant, head.conversation_id), [])}))
            return found

    def conversation_keys(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.conn.execute("SELECT tenant, conversation_id FROM conversations")]

    # -- answers, the answer cache and tenant epochs --------------------------------------

    def put_answer(self, record: AnswerRecord) -> None:
        with Transaction(self.conn):
            self._put_answer(record)

    def record_answer(self, record: AnswerRecord, cache: tuple[str, int] | None = None) -> bool:
        """Store ``record`` (and its cache entry, ``(cache_key, epoch)``) only while every source
        it rests on is still served at the revision it read, in the same write transaction as that
        check: a delete either came first (nothing is written) or comes after and finds it."""
        with Transaction(self.conn):
            if not self._serving(record.tenant, record.rests_on()):
                return False
            self._put_answer(record)
            if cache is not None:
                self.put_cached_answer(cache[0], record.tenant, cache[1], record.answer_id)
        return True

    def _serving(self, tenant: str, sources: set[tuple[str, str]]) -> bool:
        documents = self.get_documents(tenant, {d for d, _ in sources})
        return all(
            (document := documents.get(d)) is not None and document.active_revision == r
            and document.status is not DocumentStatus.DELETING
            for d, r in sources
        )

    def _put_answer(self, record: AnswerRecord) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO answers (tenant, answer_id, record) VALUES (?, ?, ?)",
            (record.tenant, record.answer_id, record.model_dump_json()),
        )
        self.conn.execute("DELETE FROM citations WHERE tenant = ? AND answer_id = ?", (record.tenant, record.answer_id))
        self.conn.executemany(
            "INSERT OR IGNORE INTO citations (tenant, document_id, revision, answer_id) VALUES (?, ?, ?, ?)",
            [(record.tenant, document_id, revision, record.answer_id) for document_id, revision in sorted(record.rests_on())],
        )

    def answers_citing(self, tenant: str, document_id: str, revision: str | None = None) -> list[AnswerRecord]:
        rows = self.conn.execute(
            "SELECT DISTINCT a.record FROM citations c JOIN answers a ON a.tenant = c.tenant AND a.answer_id = c.answer_id "
            "WHERE c.tenant = ? AND c.document_id = ? AND (? IS NULL OR c.revision = ?)",
            (tenant, document_id, revision, revision),
        )
        return [AnswerRecord.model_validate_json(r[0]) for r in rows]

    def drop_cached_answers(self, tenant: str, answer_ids: Iterable[str]) -> int:
        ids = sorted(set(answer_ids))
        return sum(
            self.conn.execute("DELETE FROM answer_cache WHERE tenant = ? AND answer_id = ?", (tenant, i)).rowcount for i in ids
        )

    def get_answer(self, tenant: str, answer_id: str) -> AnswerRecord | None:
        row = self.conn.execute(
            "SELECT record FROM answers WHERE tenant = ? AND answer_id = ?", (tenant, answer_id)
        ).fetchone()
        return AnswerRecord.model_validate_json(row["record"]) if row else None

    def get_answers(self, tenant: str, answer_ids: Iterable[str]) -> dict[str, AnswerRecord]:
        wanted, found = sorted(set(answer_ids)), dict[str, AnswerRecord]()
        for offset in range(0, len(wanted), _BATCH):
            part = wanted[offset : offset + _BATCH]
            rows = self.conn.execute(f"SELECT answer_id, record FROM answers WHERE tenant = ? AND answer_id IN "
                                     f"({','.join('?' * len(part))})", (tenant, *part))
            found.update((r["answer_id"], AnswerRecord.model_validate_json(r["record"])) for r in rows)
        return found

    def tenant_epoch(self, tenant: str) -> int:
        row = self.conn.execute("SELECT epoch FROM tenant_epochs WHERE tenant = ?", (tenant,)).fetchone()
        return int(row["epoch"]) if row else 0

    def bump_epoch(self, tenant: str) -> int:
        """Every publish or delete in a tenant moves its epoch and drops its cached answers (returns how many)."""
        with Transaction(self.conn):
            self.conn.execute(
                "INSERT INTO tenant_epochs (tenant, epoch) VALUES (?, 1) "
                "ON CONFLICT (tenant) DO UPDATE SET epoch = epoch + 1",
                (tenant,),
            )
            return self.conn.execute("DELETE FROM answer_cache WHERE tenant = ?", (tenant,)).rowcount

    def get_cached_answer(self, cache_key: str, tenant: str, epoch: int) -> str | None:
        row = self.conn.execute(
            "SELECT answer_id FROM answer_cache WHERE cache_key = ? AND tenant = ? AND epoch = ?",
            (cache_key, tenant, epoch),
        ).fetchone()
        return row["answer_id"] if row else None

    def put_cached_answer(self, cache_key: str, tenant: str, epoch: int, answer_id: str) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO answer_cache (cache_key, tenant, epoch, answer_id) VALUES (?, ?, ?, ?)",
            (cache_key, tenant, epoch, answer_id),
        )

    # -- inventories, for the audit ---------------------------------------------------------

    def all_documents(self) -> list[Document]:
        return [Document.model_validate_json(r["record"]) for r in self.conn.execute("SELECT record FROM documents")]

    def chunk_inventory(self) -> list[tuple[str, str, str, int]]:
        """``(tenant, document_id, revision, chunk records)`` for every revision with records."""
        rows = self.conn.execute(
            "SELECT tenant, document_id, revision, COUNT(*) FROM chunks GROUP BY tenant, document_id, revision"
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def cited_documents(self) -> list[tuple[str, str]]:
        rows = self.conn.execute("SELECT DISTINCT tenant, document_id FROM citations ORDER BY tenant, document_id")
        return [(r[0], r[1]) for r in rows]

    def stale_citations(self, tenant: str, document_id: str, served: str | None) -> list[tuple[str, str]]:
        """The primary key's range, less the served revision's."""
        rows = self.conn.execute(
            "SELECT revision, answer_id FROM citations WHERE tenant = ? AND document_id = ? AND revision IS NOT ? "
            "ORDER BY revision, answer_id", (tenant, document_id, served))
        return [(r[0], r[1]) for r in rows]

    def cache_inventory(self) -> list[tuple[str, str]]:
        """``(tenant, answer_id)`` of every cached answer."""
        return [(r[0], r[1]) for r in self.conn.execute("SELECT tenant, answer_id FROM answer_cache")]

    def embedding_identities(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self.conn.execute("SELECT identity, COUNT(*) FROM embeddings GROUP BY identity")}

    def delete_identity(self, identity: str) -> int:
        return self.conn.execute("DELETE FROM embeddings WHERE identity = ?", (identity,)).rowcount

    # -- embedding cache ---------------------------------------------------------------

    def get_embeddings(self, identity: str, content_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        hashes = sorted(set(content_hashes))
        found: dict[str, np.ndarray] = {}
        for offset in range(0, len(hashes), _BATCH):
            part = hashes[offset : offset + _BATCH]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                f"SELECT content_hash, vector FROM embeddings WHERE identity = ? AND content_hash IN ({marks})",
                (identity, *part),
            ):
                found[row["content_hash"]] = np.frombuffer(row["vector"], dtype=np.float32)
        return found

    def delete_embeddings(self, identity: str, content_hashes: Iterable[str]) -> int:
        hashes = sorted(set(content_hashes))
        with Transaction(self.conn):
            return sum(
                self.conn.execute("DELETE FROM embeddings WHERE identity = ? AND content_hash = ?", (identity, h)).rowcount
                for h in hashes
            )

    # -- removals awaiting their compaction -------------------------------------------------

    def begin_removal(self, owner: Lease | None) -> str:
        removal = Removal(removal_id=new_token(), owner=owner)
        self.conn.execute("INSERT INTO removals (removal_id, record) VALUES (?, ?)",
                          (removal.removal_id, removal.model_dump_json()))
        return removal.removal_id

    def end_removal(self, removal_id: str) -> None:
        row = self.conn.execute("SELECT record FROM removals WHERE removal_id = ?", (removal_id,)).fetchone()
        if row:
            done = Removal.model_validate_json(row["record"]).model_copy(update={"done": True})
            self.conn.execute("UPDATE removals SET record = ? WHERE removal_id = ?", (done.model_dump_json(), removal_id))

    def removals(self) -> list[Removal]:
        return [Removal.model_validate_json(r["record"]) for r in self.conn.execute("SELECT record FROM removals")]

    def clear_removals(self, removal_ids: Iterable[str]) -> None:
        with Transaction(self.conn):
            self.conn.executemany("DELETE FROM removals WHERE removal_id = ?", [(i,) for i in sorted(set(removal_ids))])

    def delete_unused_embeddings(self, identity: str, content_hashes: Iterable[str]) -> int:
        hashes = sorted(set(content_hashes))
        with Transaction(self.conn):
            return sum(
                self.conn.execute(
                    "DELETE FROM embeddings WHERE identity = ? AND content_hash = ? "
                    "AND NOT EXISTS (SELECT 1 FROM chunks WHERE content_hash = ?)", (identity, h, h),
                ).rowcount
                for h in hashes
            )

    def compact(self, removed: bool) -> bool:
        """Rewrite the file after a removal and truncate its log (see ``compact_file``)."""
        return compact_file(self.conn, removed)

    def embedding_hashes(self, identity: str, low: str | None = None, high: str | None = None) -> set[str]:
        rows = self.conn.execute("SELECT content_hash FROM embeddings WHERE identity = ? AND content_hash >= ? "
                                 "AND (? IS NULL OR content_hash < ?)", (identity, low or "", high, high))
        return {r[0] for r in rows}

    def put_embeddings(self, identity: str, vectors: dict[str, np.ndarray]) -> None:
        with Transaction(self.conn):
            self.conn.executemany(
                "INSERT OR REPLACE INTO embeddings (identity, content_hash, vector) VALUES (?, ?, ?)",
                [(identity, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()],
            )
