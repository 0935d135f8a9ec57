"""MetadataStore on one DynamoDB table (partition key ``pk``, sort key ``sk``).

Item layout, by partition:
- ``T#tenant``: ``D#doc`` document records (``version`` and ``generation`` beside the JSON, for
  conditional writes), ``U#doc#upload`` upload intents (``received``: the object version that
  used the upload's form, set once at parse), ``R#doc#revision`` revision markers
  (with the chunk count), ``A#answer`` answer records, ``Q#key`` cached answers (with a TTL),
  ``EPOCH`` the tenant's corpus epoch, ``V#conversation`` conversation heads (``version`` for
  conditional writes, ``subject``, ``turn_count``), ``VT#conversation#seq`` their turns, one item
  each (``seq`` zero-padded, so a follow-up reads the latest few and a view one page of them with
  one Query of a key range, and a conversation never nears the 400 KB item limit), and
  ``VA#answer#conversation#seq`` entries: the turns that got an answer. Two keys per
  conversation read only what is asked: ``VS#subject-hash#updated#conversation`` (a subject's
  latest conversations, newest first) and ``VU#updated#conversation`` (those idle since a time,
  for the expiry sweep). An ask writes the
  head (a compare-and-set), the new turn, its entry and the moved keys in one transaction: 7
  items at any length. Nothing of a conversation has a TTL: the expiry sweep removes a head with
  every turn, where a TTL would take turns and head apart. A head written before turns were
  items (``record`` holding every turn, no ``turn_count``; ``VA#answer#conversation`` entries) is
  read as it is and split at its first write. Document ids cannot contain ``#``, so no prefix of one
  document's keys matches another's.
  ``G#tag-sha256#doc`` entries name the documents carrying a tag, written and removed in one
  transaction with the record, so a tag filter reads its tag's entries, not every record;
  ``TAGINDEX`` says the tenant's records from before those entries were indexed.
- ``C#tenant#doc#revision``: ``K#chunk_id`` chunk records.
- ``H#content_hash``: ``REF#tenant#doc#revision#chunk_id`` (``REF##`` and its SHA-256 when that is over
  1,024 bytes), one reference per chunk record using that text, written before the record and
  deleted before it, so a strongly consistent query of the partition says whether a cached
  embedding is still used (an index could lag).
- ``X#tenant#doc``: ``revision#answer`` entries: the answers that cite or considered a revision.
- ``E#identity``: ``hash`` cached embeddings (float32 bytes).
- ``TENANTS``: ``tenant``, and ``IDENTITIES``: ``identity``: registries, so the audit's inventories
  are queries per tenant (its whole ``T#`` partition in one) and per identity, never a scan.
  ``T#tenant`` also holds ``XI#doc`` for each document answers rest on (its ``X#`` partition).
- ``AUDIT#run``: ``P#page`` checkpoints of an audit run (how many of the page's items are done),
  with the table's TTL.
Every document write is a compare-and-set on ``version``.
"""

from __future__ import annotations

import contextvars
import hashlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import numpy as np

from citewell.boto_deadline import bound_by_deadline
from citewell.errors import Conflict
from citewell.filters import SearchFilter, checked_scope
from citewell.leases import Lease
from citewell.models.answers import AnswerRecord
from citewell.models.chunks import Chunk
from citewell.models.conversations import Conversation, Turn, head_json, latest, stored_head
from citewell.models.documents import Document, DocumentStatus, Upload
from citewell.models.identity import Identity
from citewell.models.removals import Removal
from citewell.models.values import new_token, sha256_text, utcnow
from citewell.ports import DocumentPage

CACHE_TTL_SECONDS = 7 * 24 * 3600
AUDIT_TTL_SECONDS = 7 * 24 * 3600  # an audit run's checkpoints outlive any run (one every 6 hours) and then go
SORT_KEY_BYTES = 1024  # DynamoDB's limit; a partition key may take 2,048 (every other key here fits the longest ids)
PARALLEL = 16  # concurrent DynamoDB calls of one bulk read or delete (boto3 clients are thread-safe, resources are not)
BATCH_WRITE = 25  # DynamoDB's BatchWriteItem limit
PAGE_READ = 1000  # records one listing request reads at most: a reader of few of many documents gets short pages, not a timeout
TURN_WRITES = 45  # turns one transaction writes, each with its answer entry, beside the head and 4 lookup keys (100 at most)
SEQ_DIGITS = 10  # a turn's seq in its sort key, zero-padded so keys sort as numbers
DELETE_TRIES = 8  # reads of a record rewritten while it is deleted, before the delete gives up
TAG_MARKER = "TAGINDEX"  # in a tenant's partition: every record's tags have their G# entries
SEGMENTS = "123456789abcdef"  # sort-key bounds splitting a partition of SHA-256 hex keys into 16 ranges read at once


class DynamoMetadataStore:
    def __init__(self, table_name: str, resource: Any = None) -> None:
        if resource is None:
            import boto3

            resource = boto3.resource("dynamodb")
        self.table = resource.Table(table_name)
        # Inside a request each attempt, connect and read, ends before its deadline (one retry at most).
        self.client = bound_by_deadline(self.table.meta.client, store=True)
        self._registered: set[tuple[str, str]] = set()  # registry entries this container already wrote

    # -- helpers -----------------------------------------------------------------------

    def _query(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        return self._pages(self.table.query, kwargs)

    @staticmethod
    def _pages(operation: Callable[..., dict[str, Any]], kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every item of a query, following ``LastEvaluatedKey`` page by page."""
        while True:
            page = operation(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _prefixed(self, pk: str, prefix: str, consistent: bool = False) -> Iterator[dict[str, Any]]:
        from boto3.dynamodb.conditions import Key

        condition = Key("pk").eq(pk) & Key("sk").begins_with(prefix) if prefix else Key("pk").eq(pk)
        return self._query(KeyConditionExpression=condition, ConsistentRead=consistent)

    def _batch_get(self, keys: Sequence[tuple[str, str]], consistent: bool = False) -> Iterator[dict[str, Any]]:
        """Items by key, 100 keys a request, retrying what DynamoDB leaves unprocessed."""
        for offset in range(0, len(keys), 100):
            part = [{"pk": pk, "sk": sk} for pk, sk in keys[offset : offset + 100]]
            request: dict[str, Any] = {self.table.name: {"Keys": part, "ConsistentRead": consistent}}
            while request:
                reply = self.client.batch_get_item(RequestItems=request)
                yield from reply["Responses"].get(self.table.name, [])
                request = reply.get("UnprocessedKeys") or {}

    def _delete_all(self, keys: Iterable[tuple[str, str]]) -> int:
        """Delete by key, 25 keys a BatchWriteItem, ``PARALLEL`` at once: a 10,000-chunk document's
        20,000 items go in 800 calls that fit the API function's 30 s (see BENCHMARKS.md)."""
        unique = sorted(set(keys))
        parts = [unique[i : i + BATCH_WRITE] for i in range(0, len(unique), BATCH_WRITE)]
        self._each(self._write_batch, parts)
        return len(unique)

    def _write_batch(self, part: Sequence[tuple[str, str]]) -> None:
        request: dict[str, Any] = {self.table.name: [{"DeleteRequest": {"Key": {"pk": pk, "sk": sk}}} for pk, sk in part]}
        while request:
            request = self.client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}

    @staticmethod
    def _each(work: Callable[[Any], Any], parts: Sequence[Any]) -> list[Any]:
        """``work`` on every part, ``PARALLEL`` at once; the first failure is raised."""
        if len(parts) <= 1:
            return [work(p) for p in parts]
        contexts = [contextvars.copy_context() for _ in parts]  # each call keeps the request's deadline
        with ThreadPoolExecutor(min(PARALLEL, len(parts))) as pool:
            return list(pool.map(lambda run: run[0].run(work, run[1]), zip(contexts, parts)))

    def _register(self, registry: str, name: str) -> None:
        """An idempotent registry entry, written once per container."""
        if (registry, name) not in self._registered:
            self.table.put_item(Item={"pk": registry, "sk": name})
            self._registered.add((registry, name))

    def _tenants(self) -> list[str]:
        return sorted(str(i["sk"]) for i in self._prefixed("TENANTS", ""))

    def _tenant_keys(self, prefix: str) -> list[tuple[str, str]]:
        """``(tenant, the key after prefix)`` of every item under ``prefix`` in every tenant's
        partition, its sort key alone read (the records are left out of the reply)."""
        found = []
        for tenant in self._tenants():
            keys = self._query(KeyConditionExpression="pk = :pk AND begins_with(sk, :p)", ProjectionExpression="sk",
                               ExpressionAttributeValues={":pk": f"T#{tenant}", ":p": prefix})
            found += [(tenant, str(i["sk"])[len(prefix):]) for i in keys]
        return found

    def _tenant_items(self, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(tenant, item)`` of every item under ``prefix`` in every tenant's partition."""
        for tenant in self._tenants():
            for item in self._prefixed(f"T#{tenant}", prefix):
                yield tenant, item

    # -- documents ---------------------------------------------------------------------

    def get_document(self, tenant: str, document_id: str) -> Document | None:
        item = self.table.get_item(Key={"pk": f"T#{tenant}", "sk": f"D#{document_id}"}, ConsistentRead=True).get("Item")
        return Document.model_validate_json(item["record"]) if item else None

    def get_documents(self, tenant: str, document_ids: Iterable[str]) -> dict[str, Document]:
        items = self._batch_get([(f"T#{tenant}", f"D#{i}") for i in sorted(set(document_ids))], consistent=True)
        documents = (Document.model_validate_json(item["record"]) for item in items)
        return {d.document_id: d for d in documents}

    def list_documents(self, tenant: str) -> list[Document]:
        return [Document.model_validate_json(i["record"]) for i in self._prefixed(f"T#{tenant}", "D#")]

    def page_documents(self, tenant: str, limit: int, after: str | None = None, reader: Identity | None = None) -> DocumentPage:
        """A Query of the ``D#`` keys from ``after`` on, the reader's roles checked on each record
        before it is taken. At most ``PAGE_READ`` records are read: past that the page ends
        short, at the last record read, so a request costs the same whatever the reader may see."""
        from boto3.dynamodb.conditions import Key

        if reader is not None and not reader.can_see(tenant, reader.roles):
            return DocumentPage([], None)
        request: dict[str, Any] = {"KeyConditionExpression": Key("pk").eq(f"T#{tenant}") & Key("sk").begins_with("D#"),
                                   "ConsistentRead": True}
        if after:
            request["ExclusiveStartKey"] = {"pk": f"T#{tenant}", "sk": f"D#{after}"}
        taken: list[Document] = []
        read, last = 0, after
        while True:
            reply = self.table.query(**request, Limit=min(PAGE_READ - read, limit + 1 - len(taken)))
            for item in reply.get("Items", []):
                read += 1
                document = Document.model_validate_json(item["record"])
                if reader is None or reader.can_see(document.tenant, document.allowed_roles):
                    taken.append(document)
                last = document.document_id
            more = "LastEvaluatedKey" in reply
            if len(taken) > limit:
                return DocumentPage(taken[:limit], taken[limit - 1].document_id)
            if not more:
                return DocumentPage(taken, None)
            if read >= PAGE_READ:
                return DocumentPage(taken, last)
            request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]

    def find_documents(self, identity: Identity, wanted: SearchFilter) -> frozenset[str]:
        """The filter resolved over the tenant's records: named ids by key, tags by their ``G#``
        entries (the rarest tag's), else the records under the prefix. Every record read is
        checked against the whole filter and the caller's roles, so an entry out of date admits
        nothing."""
        tenant = identity.tenant
        if wanted.document_ids:
            records = list(self.get_documents(tenant, wanted.document_ids).values())
        elif wanted.tags:
            self._index_tags(tenant)
            named = [{i["sk"].rsplit("#", 1)[1] for i in self._prefixed(f"T#{tenant}", f"G#{_tag_key(t)}#", True)}
                     for t in sorted(wanted.tags)]
            ids = set.intersection(*named)
            if wanted.prefix:
                ids = {i for i in ids if i.startswith(wanted.prefix)}
            records = list(self.get_documents(tenant, ids).values()) if ids else []
        else:
            records = [Document.model_validate_json(i["record"])
                       for i in self._prefixed(f"T#{tenant}", f"D#{wanted.prefix or ''}")]
        return checked_scope(frozenset(d.document_id for d in records
                                       if identity.can_see(d.tenant, d.allowed_roles) and wanted.admits(d)))

    def _index_tags(self, tenant: str) -> None:
        """Once per tenant, the ``G#`` entries of records written before tags were looked up by
        key. Each record's entries go in a transaction that checks its version, so a record
        rewritten meanwhile keeps the entries its own write made; the ``TAGINDEX`` marker is
        written after every record was read, and only then are the entries trusted."""
        if (f"T#{tenant}", TAG_MARKER) in self._registered:
            return
        marker = {"pk": f"T#{tenant}", "sk": TAG_MARKER}
        if "Item" not in self.table.get_item(Key=marker, ConsistentRead=True):
            for item in self._prefixed(f"T#{tenant}", "D#", True):
                document = Document.model_validate_json(item["record"])
                if not document.tags:
                    continue
                check = {"ConditionCheck": {"TableName": self.table.name, "Key": {"pk": item["pk"], "sk": item["sk"]},
                                            "ConditionExpression": "version = :v",
                                            "ExpressionAttributeValues": {":v": item["version"]}}}
                try:
                    self.client.transact_write_items(TransactItems=[check, *self._tag_writes(document, "Put")])
                except self.client.exceptions.TransactionCanceledException:
                    pass  # rewritten or deleted since it was read: that write kept the entries right
            self.table.put_item(Item=marker)
        self._registered.add((f"T#{tenant}", TAG_MARKER))

    def _tag_writes(self, document: Document, action: str, tags: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Transaction items putting or deleting a document's tag entries."""
        chosen = document.tags if tags is None else tags
        keys = [{"pk": f"T#{document.tenant}", "sk": f"G#{_tag_key(t)}#{document.document_id}"} for t in sorted(chosen)]
        if action == "Put":
            return [{"Put": {"TableName": self.table.name, "Item": {**k, "document_id": document.document_id}}} for k in keys]
        return [{"Delete": {"TableName": self.table.name, "Key": k}} for k in keys]

    def save_document(self, document: Document) -> Document | None:
        """A compare-and-set on ``version``. When the tags change, the record and its ``G#``
        entries are written in one transaction, so a tag lookup never misses a record."""
        self._register("TENANTS", document.tenant)
        stored = document.model_copy(update={"version": document.version + 1, "updated_at": utcnow()})
        item = {
            "pk": f"T#{document.tenant}", "sk": f"D#{document.document_id}", "record": stored.model_dump_json(),
            "version": stored.version, "generation": stored.generation,
        }
        condition: dict[str, Any] = (
            {"ConditionExpression": "attribute_not_exists(pk)"} if document.version == 0 else
            {"ConditionExpression": "version = :expected", "ExpressionAttributeValues": {":expected": document.version}}
        )
        before: frozenset[str] = frozenset()
        if document.version:
            current = self.table.get_item(Key={"pk": item["pk"], "sk": item["sk"]}, ConsistentRead=True).get("Item")
            if current is None or current["version"] != document.version:
                return None
            before = Document.model_validate_json(current["record"]).tags
        try:
            if before == stored.tags:
                self.table.put_item(Item=item, **condition)
            else:
                writes = [{"Put": {"TableName": self.table.name, "Item": item, **condition}},
                          *self._tag_writes(stored, "Put", stored.tags - before),
                          *self._tag_writes(stored, "Delete", before - stored.tags)]
                self.client.transact_write_items(TransactItems=writes)
        except (self.client.exceptions.ConditionalCheckFailedException, self.client.exceptions.TransactionCanceledException):
            return None
        return stored

    def delete_document(self, tenant: str, document_id: str, generation: str | None = None) -> int:
        """The record and its tag entries, in one transaction when it has tags (checked against
        the version read, and read again if a write came between)."""
        key = {"pk": f"T#{tenant}", "sk": f"D#{document_id}"}
        for _ in range(DELETE_TRIES):
            current = self.table.get_item(Key=key, ConsistentRead=True).get("Item")
            if current is None or (generation is not None and current.get("generation") != generation):
                return 0
            document = Document.model_validate_json(current["record"])
            check = {"ConditionExpression": "version = :v", "ExpressionAttributeValues": {":v": current["version"]}}
            try:
                if not document.tags:
                    self.table.delete_item(Key=key, **check)
                else:
                    self.client.transact_write_items(TransactItems=[
                        {"Delete": {"TableName": self.table.name, "Key": key, **check}}, *self._tag_writes(document, "Delete")])
            except (self.client.exceptions.ConditionalCheckFailedException,
                    self.client.exceptions.TransactionCanceledException):
                continue  # written since it was read: read it again
            return 1
        raise Conflict(f"{document_id} was rewritten {DELETE_TRIES} times while it was being deleted: delete it again")

    # -- upload intents ------------------------------------------------------------------

    def put_upload(self, upload: Upload) -> None:
        self._register("TENANTS", upload.tenant)
        self.table.put_item(Item={
            "pk": f"T#{upload.tenant}", "sk": f"U#{upload.document_id}#{upload.upload_id}", "record": upload.model_dump_json(),
        })

    def get_upload(self, tenant: str, document_id: str, upload_id: str) -> Upload | None:
        key = {"pk": f"T#{tenant}", "sk": f"U#{document_id}#{upload_id}"}
        item = self.table.get_item(Key=key, ConsistentRead=True).get("Item")
        return Upload.model_validate_json(item["record"]) if item else None

    def claim_upload(self, tenant: str, document_id: str, upload_id: str, received: str) -> str | None:
        """Record ``received`` (the object that used the upload's form) on the intent, once.

        Returns what the intent holds afterwards: ``received`` when it was first or the same (a
        redelivery), the object that came first otherwise, None when the intent is gone (never
        re-created: the condition needs the item)."""
        key = {"pk": f"T#{tenant}", "sk": f"U#{document_id}#{upload_id}"}
        try:
            self.table.update_item(
                Key=key, UpdateExpression="SET received = :r",
                ConditionExpression="attribute_exists(pk) AND (attribute_not_exists(received) OR received = :r)",
                ExpressionAttributeValues={":r": received},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            item = self.table.get_item(Key=key, ConsistentRead=True).get("Item")
            return str(item["received"]) if item and "received" in item else None
        return received

    def list_uploads(self, tenant: str, document_id: str) -> list[Upload]:
        items = self._prefixed(f"T#{tenant}", f"U#{document_id}#", consistent=True)
        return sorted((Upload.model_validate_json(i["record"]) for i in items), key=lambda u: u.seq)

    def delete_upload(self, tenant: str, document_id: str, upload_id: str) -> int:
        reply = self.table.delete_item(Key={"pk": f"T#{tenant}", "sk": f"U#{document_id}#{upload_id}"}, ReturnValues="ALL_OLD")
        return 1 if reply.get("Attributes") else 0

    def upload_inventory(self) -> list[Upload]:
        return [Upload.model_validate_json(i["record"]) for _, i in self._tenant_items("U#")]

    # -- chunk records -----------------------------------------------------------------

    def put_chunks(self, chunks: Sequence[Chunk]) -> None:
        for tenant, document_id, revision in sorted({(c.tenant, c.document_id, c.revision) for c in chunks}):
            self.delete_chunks(tenant, document_id, revision)
        counts: dict[tuple[str, str, str], int] = {}
        for tenant in sorted({c.tenant for c in chunks}):
            self._register("TENANTS", tenant)
        with self.table.batch_writer() as references:  # flushed first: a record never exists without its reference
            for chunk in chunks:
                references.put_item(Item=self._reference(chunk.content_hash, chunk.tenant, chunk.document_id, chunk.revision,
                                                         chunk.chunk_id))
        with self.table.batch_writer() as batch:
            for position, chunk in enumerate(chunks):
                key = (chunk.tenant, chunk.document_id, chunk.revision)
                counts[key] = counts.get(key, 0) + 1
                batch.put_item(Item={
                    "pk": f"C#{chunk.tenant}#{chunk.document_id}#{chunk.revision}", "sk": f"K#{chunk.chunk_id}",
                    "position": position, "content_hash": chunk.content_hash, "record": chunk.record_json(),
                })
            for (tenant, document_id, revision), count in counts.items():
                batch.put_item(Item={"pk": f"T#{tenant}", "sk": f"R#{document_id}#{revision}", "chunks": count,
                                     "document_id": document_id, "revision": revision})

    def get_chunks(self, tenant: str, document_id: str, revision: str) -> list[Chunk]:
        items = sorted(self._prefixed(f"C#{tenant}#{document_id}#{revision}", "K#"), key=lambda i: int(i["position"]))
        return [Chunk.model_validate_json(i["record"]) for i in items]

    def chunk_pages(self, tenant: str, document_id: str, revision: str, size: int = PAGE_READ) -> Iterator[list[Chunk]]:
        """One Query page (``size`` records, or 1 MB read) at a time, in sort-key order (``K#chunk_id``),
        never the partition whole."""
        kwargs: dict[str, Any] = {"KeyConditionExpression": "pk = :pk AND begins_with(sk, :k)", "Limit": size,
                                  "ExpressionAttributeValues": {":pk": f"C#{tenant}#{document_id}#{revision}", ":k": "K#"},
                                  "ProjectionExpression": "#r", "ExpressionAttributeNames": {"#r": "record"}}
        while True:
            page = self.table.query(**kwargs)
            if items := page.get("Items", []):
                yield [Chunk.model_validate_json(i["record"]) for i in items]
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def set_access(self, tenant: str, document_id: str, revision: str, allowed_roles: frozenset[str], title: str) -> int:
        """One strongly consistent Query page (``PAGE_READ`` records) at a time, written back in
        batches with its position; where the title moved a record's content hash, its new
        reference is written before it and the old one removed after, as ``put_chunks`` orders them."""
        pk = f"C#{tenant}#{document_id}#{revision}"
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :k)", "Limit": PAGE_READ, "ConsistentRead": True,
            "ExpressionAttributeValues": {":pk": pk, ":k": "K#"}, "ProjectionExpression": "sk, #p, content_hash, #r",
            "ExpressionAttributeNames": {"#p": "position", "#r": "record"}}
        count = 0
        while True:
            page = self.table.query(**kwargs)
            stamped = [(item, Chunk.model_validate_json(item["record"]).model_copy(
                update={"allowed_roles": allowed_roles, "title": title})) for item in page.get("Items", [])]
            moved = [(str(item["content_hash"]), c) for item, c in stamped if c.content_hash != item["content_hash"]]
            with self.table.batch_writer() as references:
                for _, c in moved:
                    references.put_item(Item=self._reference(c.content_hash, tenant, document_id, revision, c.chunk_id))
            with self.table.batch_writer() as batch:
                for item, c in stamped:
                    batch.put_item(Item={"pk": pk, "sk": item["sk"], "position": item["position"],
                                         "content_hash": c.content_hash, "record": c.record_json()})
            self._delete_all((ref["pk"], ref["sk"]) for ref in (
                self._reference(old, tenant, document_id, revision, c.chunk_id) for old, c in moved))
            count += len(stamped)
            if "LastEvaluatedKey" not in page:
                return count
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def get_chunks_by_id(self, tenant: str, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], Chunk]:
        found = {}
        for document_id, revision, chunk_id in sorted(set(keys)):
            item = self.table.get_item(Key={"pk": f"C#{tenant}#{document_id}#{revision}", "sk": f"K#{chunk_id}"}).get("Item")
            if item:
                found[(document_id, revision, chunk_id)] = Chunk.model_validate_json(item["record"])
        return found

    def chunk_revisions(self, tenant: str, document_id: str) -> list[str]:
        prefixed = self._prefixed(f"T#{tenant}", f"R#{document_id}#")
        return sorted(i["revision"] for i in prefixed if i["document_id"] == document_id)

    @staticmethod
    def _reference(content_hash: str, tenant: str, document_id: str, revision: str, chunk_id: str) -> dict[str, str]:
        """The reference's key names the chunk record. A long document id appears in it twice (once
        in the chunk id), so a name over DynamoDB's 1,024-byte sort key is ``REF##`` and its SHA-256:
        stable, unique, and never a name (a tenant is never empty). A name that fits keeps the
        spelling it was always written with."""
        name = f"{tenant}#{document_id}#{revision}#{chunk_id}"
        sk = f"REF#{name}"
        if len(sk.encode("utf-8")) > SORT_KEY_BYTES:
            sk = f"REF##{sha256_text(name)}"
        return {"pk": f"H#{content_hash}", "sk": sk}

    def hashes_in_use(self, content_hashes: Iterable[str]) -> set[str]:
        """One strongly consistent ``Limit=1`` key-only Query per hash (a reference's sort key
        names its chunk, so no BatchGetItem can ask), ``PARALLEL`` at once."""
        def used(content_hash: str) -> bool:
            page = self.client.query(TableName=self.table.name, KeyConditionExpression="pk = :pk",
                                     ExpressionAttributeValues={":pk": f"H#{content_hash}"}, Limit=1, ConsistentRead=True,
                                     ProjectionExpression="pk")
            return bool(page.get("Items"))

        hashes = sorted(set(content_hashes))
        return {h for h, hit in zip(hashes, self._each(used, hashes)) if hit}

    def delete_chunks(self, tenant: str, document_id: str, revision: str) -> int:
        pk = f"C#{tenant}#{document_id}#{revision}"
        items = list(self._query(KeyConditionExpression="pk = :pk AND begins_with(sk, :k)", ConsistentRead=True,
                                 ExpressionAttributeValues={":pk": pk, ":k": "K#"}, ProjectionExpression="sk, content_hash"))
        # References first: a reference without its record would keep a deleted text's embedding.
        self._delete_all(
            (ref["pk"], ref["sk"]) for ref in (
                self._reference(str(i["content_hash"]), tenant, document_id, revision, str(i["sk"])[2:]) for i in items))
        count = self._delete_all((pk, i["sk"]) for i in items)
        self.table.delete_item(Key={"pk": f"T#{tenant}", "sk": f"R#{document_id}#{revision}"})
        return count

    # -- answers, cache, epochs --------------------------------------------------------

    def put_answer(self, record: AnswerRecord) -> None:
        self._register("TENANTS", record.tenant)
        for document_id in sorted({d for d, _ in record.rests_on()}):
            self._register(f"T#{record.tenant}", f"XI#{document_id}")
        previous = self.get_answer(record.tenant, record.answer_id)
        self.table.put_item(Item={"pk": f"T#{record.tenant}", "sk": f"A#{record.answer_id}", "record": record.model_dump_json()})
        if previous is not None:  # a rewritten answer (a withdrawn citation) drops its old index entries
            self._delete_all(
                (f"X#{record.tenant}#{document_id}", f"{revision}#{record.answer_id}")
                for document_id, revision in previous.rests_on()
            )
        with self.table.batch_writer() as batch:
            for document_id, revision in sorted(record.rests_on()):
                batch.put_item(Item={
                    "pk": f"X#{record.tenant}#{document_id}", "sk": f"{revision}#{record.answer_id}",
                    "tenant": record.tenant, "document_id": document_id, "revision": revision, "answer_id": record.answer_id,
                })

    def record_answer(self, record: AnswerRecord, cache: tuple[str, int] | None = None) -> bool:
        """The index entries first (a delete after this finds them), then the answer in one
        transaction with a check that each source's record is still the version read here and
        serves the revision read; when a source changed, the entries go again and nothing stays."""
        sources = record.rests_on()
        documents = self.get_documents(record.tenant, {d for d, _ in sources})
        if not all((d := documents.get(doc)) is not None and d.active_revision == rev and d.status is not DocumentStatus.DELETING
                   for doc, rev in sources):
            return False
        self._register("TENANTS", record.tenant)
        for document_id in sorted(documents):
            self._register(f"T#{record.tenant}", f"XI#{document_id}")
        entries = [(f"X#{record.tenant}#{d}", f"{r}#{record.answer_id}", d, r) for d, r in sorted(sources)]
        with self.table.batch_writer() as batch:
            for pk, sk, document_id, revision in entries:
                batch.put_item(Item={"pk": pk, "sk": sk, "tenant": record.tenant, "document_id": document_id,
                                     "revision": revision, "answer_id": record.answer_id})
        # The table's client takes and gives plain values (the resource's serializer is on it).
        items: list[dict[str, Any]] = [
            {"ConditionCheck": {
                "TableName": self.table.name, "Key": {"pk": f"T#{record.tenant}", "sk": f"D#{d.document_id}"},
                "ConditionExpression": "version = :v", "ExpressionAttributeValues": {":v": d.version},
            }} for d in documents.values()
        ]
        items.append({"Put": {"TableName": self.table.name, "Item": {
            "pk": f"T#{record.tenant}", "sk": f"A#{record.answer_id}", "record": record.model_dump_json()}}})
        if cache is not None:
            items.append({"Put": {"TableName": self.table.name, "Item": {
                "pk": f"T#{record.tenant}", "sk": f"Q#{cache[0]}", "epoch": cache[1], "answer_id": record.answer_id,
                "expires_at": int(time.time()) + CACHE_TTL_SECONDS}}})
        try:
            self.client.transact_write_items(TransactItems=items)
        except self.client.exceptions.TransactionCanceledException:
            self._delete_all((pk, sk) for pk, sk, _, _ in entries)
            return False
        return True

    def get_answer(self, tenant: str, answer_id: str) -> AnswerRecord | None:
        item = self.table.get_item(Key={"pk": f"T#{tenant}", "sk": f"A#{answer_id}"}, ConsistentRead=True).get("Item")
        return AnswerRecord.model_validate_json(item["record"]) if item else None

    def get_answers(self, tenant: str, answer_ids: Iterable[str]) -> dict[str, AnswerRecord]:
        """100 keys a BatchGetItem, strongly consistent as :meth:`get_answer` is."""
        items = self._batch_get([(f"T#{tenant}", f"A#{a}") for a in sorted(set(answer_ids))], consistent=True)
        return {r.answer_id: r for r in (AnswerRecord.model_validate_json(i["record"]) for i in items)}

    def answers_citing(self, tenant: str, document_id: str, revision: str | None = None) -> list[AnswerRecord]:
        entries = self._prefixed(f"X#{tenant}#{document_id}", f"{revision}#" if revision else "")
        records = [self.get_answer(tenant, i["answer_id"]) for i in entries]
        unique = {r.answer_id: r for r in records if r is not None}
        return list(unique.values())

    def drop_cached_answers(self, tenant: str, answer_ids: Iterable[str]) -> int:
        wanted = set(answer_ids)
        return self._delete_all((i["pk"], i["sk"]) for i in list(self._prefixed(f"T#{tenant}", "Q#")) if i["answer_id"] in wanted)

    def tenant_epoch(self, tenant: str) -> int:
        item = self.table.get_item(Key={"pk": f"T#{tenant}", "sk": "EPOCH"}, ConsistentRead=True).get("Item")
        return int(item["epoch"]) if item else 0

    def bump_epoch(self, tenant: str) -> int:
        self.table.update_item(
            Key={"pk": f"T#{tenant}", "sk": "EPOCH"}, UpdateExpression="ADD epoch :one", ExpressionAttributeValues={":one": 1}
        )
        return self._delete_all((i["pk"], i["sk"]) for i in list(self._prefixed(f"T#{tenant}", "Q#")))

    def get_cached_answer(self, cache_key: str, tenant: str, epoch: int) -> str | None:
        item = self.table.get_item(Key={"pk": f"T#{tenant}", "sk": f"Q#{cache_key}"}, ConsistentRead=True).get("Item")
        if not item or int(item["epoch"]) != epoch or int(item["expires_at"]) < time.time():
            return None
        return str(item["answer_id"])

    def put_cached_answer(self, cache_key: str, tenant: str, epoch: int, answer_id: str) -> None:
        self._register("TENANTS", tenant)
        self.table.put_item(Item={
            "pk": f"T#{tenant}", "sk": f"Q#{cache_key}", "epoch": epoch, "answer_id": answer_id,
            "expires_at": int(time.time()) + CACHE_TTL_SECONDS,
        })

    # -- conversations -------------------------------------------------------------------

    def save_conversation(self, conversation: Conversation) -> Conversation | None:
        """The head (a compare-and-set on ``version``), its lookup keys and the turns it carries,
        each with its answer entry, in one transaction: an ask writes 7 items whatever the length.
        A whole record (turns inside) read at the version is split first, and the caller reads
        again. More than ``TURN_WRITES`` turns go in several transactions, each moving the head."""
        tenant, cid = conversation.tenant, conversation.conversation_id
        turns = sorted({t.seq: t for t in conversation.turns}.values(), key=lambda t: t.seq)
        conversation = conversation.model_copy(update={"turn_count": max([conversation.turn_count, *(t.seq for t in turns)])})
        previous: Conversation | None = None
        if conversation.version:
            item = self.table.get_item(Key={"pk": f"T#{tenant}", "sk": f"V#{cid}"}, ConsistentRead=True).get("Item")
            if item is None or int(item["version"]) != conversation.version:
                return None
            previous, whole = stored_head(item["record"])
            if whole is not None:
                self._split(previous, whole)
                return None  # its head moved on: read it again
        self._register("TENANTS", tenant)
        version = conversation.version
        parts = [turns[i : i + TURN_WRITES] for i in range(0, len(turns), TURN_WRITES)] or [[]]
        for index, part in enumerate(parts):
            head = conversation.model_copy(update={"version": version + 1, "turns": []})
            writes = [self._head_write(head, version)]
            if index == 0:
                writes += self._lookup_writes(head, previous)
            writes += [w for t in part for w in self._turn_writes(tenant, cid, t)]
            try:
                self.client.transact_write_items(TransactItems=writes)
            except self.client.exceptions.TransactionCanceledException:
                return None
            version += 1
        return conversation.model_copy(update={"version": version, "turns": turns})

    def _head_write(self, head: Conversation, expected: int) -> dict[str, Any]:
        condition: dict[str, Any] = (
            {"ConditionExpression": "attribute_not_exists(pk)"} if expected == 0 else
            {"ConditionExpression": "version = :v AND attribute_exists(turn_count)",
             "ExpressionAttributeValues": {":v": expected}})
        return {"Put": {"TableName": self.table.name, "Item": {
            "pk": f"T#{head.tenant}", "sk": f"V#{head.conversation_id}", "record": head_json(head), "version": head.version,
            "subject": head.subject, "turn_count": head.turn_count}, **condition}}

    def _lookup_writes(self, head: Conversation, previous: Conversation | None) -> list[dict[str, Any]]:
        """The head's ``VS#``/``VU#`` keys put, and those of the head it replaces removed."""
        pk, new = f"T#{head.tenant}", _conversation_keys(head)
        old = set(_conversation_keys(previous)) - set(new) if previous is not None else set()
        return [*({"Put": {"TableName": self.table.name, "Item": {"pk": pk, "sk": sk, "conversation_id": head.conversation_id}}}
                  for sk in new),
                *({"Delete": {"TableName": self.table.name, "Key": {"pk": pk, "sk": sk}}} for sk in sorted(old))]

    def _turn_writes(self, tenant: str, cid: str, turn: Turn) -> list[dict[str, Any]]:
        """A turn's item and its answer entry (what a withdrawal finds it by)."""
        pk = f"T#{tenant}"
        return [{"Put": {"TableName": self.table.name, "Item": {
                    "pk": pk, "sk": _turn_key(cid, turn.seq), "record": turn.model_dump_json(), "conversation_id": cid,
                    "seq": turn.seq, "answer_id": turn.answer_id}}},
                {"Put": {"TableName": self.table.name, "Item": {
                    "pk": pk, "sk": f"VA#{turn.answer_id}#{cid}#{turn.seq:0{SEQ_DIGITS}d}", "conversation_id": cid,
                    "seq": turn.seq}}}]

    def _split(self, head: Conversation, whole: Sequence[Turn]) -> None:
        """A whole record's turns moved to items of their own: each written only where none is
        yet (a second splitter never undoes a write made since the first), then the head over the
        version read, then the record's answer entries that name no turn."""
        tenant, cid = head.tenant, head.conversation_id

        def put(part: Sequence[Turn]) -> None:
            for turn in part:
                turn_item, entry = (w["Put"]["Item"] for w in self._turn_writes(tenant, cid, turn))
                try:
                    self.table.put_item(Item=turn_item, ConditionExpression="attribute_not_exists(pk)")
                except self.client.exceptions.ConditionalCheckFailedException:
                    pass
                self.table.put_item(Item=entry)

        self._each(put, [whole[i : i + BATCH_WRITE] for i in range(0, len(whole), BATCH_WRITE)])
        try:
            self.table.put_item(Item={
                "pk": f"T#{tenant}", "sk": f"V#{cid}", "record": head_json(head.model_copy(update={"version": head.version + 1})),
                "version": head.version + 1, "subject": head.subject, "turn_count": head.turn_count},
                ConditionExpression="version = :v AND attribute_not_exists(turn_count)",
                ExpressionAttributeValues={":v": head.version})
        except self.client.exceptions.ConditionalCheckFailedException:
            return  # another writer split it (or moved it) first
        self._delete_all((f"T#{tenant}", f"VA#{a}#{cid}") for a in {t.answer_id for t in whole})

    def _turns(self, tenant: str, cid: str, last: int | None, upto: int) -> list[Turn]:
        """The conversation's turn items up to seq ``upto``, the latest ``last`` of them (None: all),
        by ``seq``: one Query of that key range, read back from ``upto`` a page of ``last`` items."""
        from boto3.dynamodb.conditions import Key

        if last == 0 or upto < 1:
            return []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(f"T#{tenant}") & Key("sk").between(f"VT#{cid}#", _turn_key(cid, upto)),
            "ConsistentRead": True, "ScanIndexForward": last is None}
        if last is not None:
            kwargs["Limit"] = last
        found: list[Turn] = []
        for item in self._query(**kwargs):
            found.append(Turn.model_validate_json(item["record"]))
            if last is not None and len(found) == last:
                break
        return sorted(found, key=lambda t: t.seq)

    def _with_turns(self, item: dict[str, Any], last: int | None, before: int | None = None) -> Conversation:
        """A stored head with its latest ``last`` turns before seq ``before`` (as of the head: none
        a later ask added, so a page is full whatever was asked meanwhile)."""
        head, whole = stored_head(item["record"])
        upto = head.turn_count if before is None else min(head.turn_count, before - 1)
        turns = latest(whole, last, before) if whole is not None else self._turns(head.tenant, head.conversation_id, last, upto)
        return head.model_copy(update={"turns": [t for t in turns if t.seq <= head.turn_count]})

    def get_conversation(self, tenant: str, conversation_id: str, last: int | None = None,
                         before: int | None = None) -> Conversation | None:
        item = self.table.get_item(Key={"pk": f"T#{tenant}", "sk": f"V#{conversation_id}"}, ConsistentRead=True).get("Item")
        return self._with_turns(item, last, before) if item else None

    def conversations_of(self, tenant: str, subject: str, limit: int = 50, last: int | None = None) -> list[Conversation]:
        """The subject's own ``VS#`` entries, newest first, a page of ``limit`` at a time, until
        ``limit`` of them are current: never another subject's, never the whole partition; then
        each one's latest ``last`` turns."""
        from boto3.dynamodb.conditions import Key

        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(f"T#{tenant}") & Key("sk").begins_with(f"VS#{_subject_key(subject)}#"),
            "ScanIndexForward": False, "Limit": limit, "ConsistentRead": True}
        found: dict[str, dict[str, Any]] = {}
        while len(found) < limit:
            page = self.table.query(**kwargs)
            entries = [e for e in page.get("Items", []) if e["conversation_id"] not in found]
            found.update(self._current(tenant, entries, lambda c, e: c.subject == subject and e["sk"].endswith(
                f"#{_stamp(c)}#{c.conversation_id}")))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        items = sorted(found.values(), key=lambda i: stored_head(i["record"])[0].updated_at, reverse=True)[:limit]
        return self._each(lambda i: self._with_turns(i, last), items)

    def conversations_idle_since(self, before: datetime) -> list[Conversation]:
        """Each tenant's ``VU#`` entries older than ``before``: what the expiry sweep removes."""
        from boto3.dynamodb.conditions import Key

        found = []
        for tenant in self._tenants():
            entries = list(self._query(KeyConditionExpression=Key("pk").eq(f"T#{tenant}")
                                       & Key("sk").between("VU#", f"VU#{_stamp_of(before)}"), ConsistentRead=True))
            idle = self._current(
                tenant, entries, lambda c, e: c.updated_at < before and e["sk"] == f"VU#{_stamp(c)}#{c.conversation_id}")
            found += [stored_head(i["record"])[0] for i in idle.values()]
        return found

    def _current(self, tenant: str, entries: Sequence[dict[str, Any]],
                 matches: Callable[[Conversation, dict[str, Any]], bool]) -> dict[str, dict[str, Any]]:
        """The head items ``entries`` point at whose records they still describe, in their order."""
        ids = list(dict.fromkeys(str(e["conversation_id"]) for e in entries))
        items = {str(i["sk"]).removeprefix("V#"): i
                 for i in self._batch_get([(f"T#{tenant}", f"V#{c}") for c in ids], consistent=True)}
        heads = {c: stored_head(i["record"])[0] for c, i in items.items()}
        return {i: items[i] for i in ids if i in items
                and any(e["conversation_id"] == i and matches(heads[i], e) for e in entries)}

    def conversations_answering(self, tenant: str, answer_ids: Iterable[str]) -> list[Conversation]:
        """The ``VA#answer#`` entries name each turn (``#seq``; a whole record's name only the
        conversation): the heads and those turns, read by key."""
        wanted = set(answer_ids)
        seqs: dict[str, set[int]] = {}
        for a in sorted(wanted):
            for entry in self._prefixed(f"T#{tenant}", f"VA#{a}#", True):
                seqs.setdefault(str(entry["conversation_id"]), set()).update([int(entry["seq"])] if "seq" in entry else [])
        heads = {str(i["sk"]).removeprefix("V#"): stored_head(i["record"])
                 for i in self._batch_get([(f"T#{tenant}", f"V#{c}") for c in sorted(seqs)], consistent=True)}
        keys = [(f"T#{tenant}", _turn_key(c, n)) for c, (_, whole) in heads.items() if whole is None for n in sorted(seqs[c])]
        turns: dict[str, list[Turn]] = {}
        for item in self._batch_get(keys, consistent=True):
            turns.setdefault(str(item["conversation_id"]), []).append(Turn.model_validate_json(item["record"]))
        found = []
        for c, (head, whole) in heads.items():
            mine = [t for t in (whole if whole is not None else turns.get(c, [])) if t.answer_id in wanted]
            if mine:
                found.append(head.model_copy(update={"turns": sorted(mine, key=lambda t: t.seq)}))
        return found

    def delete_conversation(self, tenant: str, conversation_id: str) -> int:
        """Every turn and entry, then the head, only while it is still the version whose turns
        were listed (an ask that came between is listed and removed on the next try)."""
        from boto3.dynamodb.conditions import Key

        pk, key = f"T#{tenant}", {"pk": f"T#{tenant}", "sk": f"V#{conversation_id}"}
        for _ in range(DELETE_TRIES):
            item = self.table.get_item(Key=key, ConsistentRead=True).get("Item")
            if item is None:
                return 0
            head, whole = stored_head(item["record"])
            listed = [(str(i["answer_id"]), int(i["seq"])) for i in self._query(
                KeyConditionExpression=Key("pk").eq(pk) & Key("sk").begins_with(f"VT#{conversation_id}#"),
                ConsistentRead=True, ProjectionExpression="answer_id, seq")]
            listed += [(t.answer_id, t.seq) for t in whole or []]
            self._delete_all([
                *((pk, f"VA#{a}#{conversation_id}#{n:0{SEQ_DIGITS}d}") for a, n in listed),
                *((pk, f"VA#{a}#{conversation_id}") for a, _ in listed),
                *((pk, _turn_key(conversation_id, n)) for _, n in listed),
                *((pk, sk) for sk in _conversation_keys(head))])
            try:
                self.table.delete_item(Key=key, ConditionExpression="version = :v",
                                       ExpressionAttributeValues={":v": item["version"]})
            except self.client.exceptions.ConditionalCheckFailedException:
                continue
            return 1
        raise Conflict(f"conversation {conversation_id!r} was written {DELETE_TRIES} times while it was being deleted")

    def conversation_inventory(self) -> list[Conversation]:
        turns: dict[tuple[str, str], list[Turn]] = {}
        for tenant, item in self._tenant_items("VT#"):
            turns.setdefault((tenant, str(item["conversation_id"])), []).append(Turn.model_validate_json(item["record"]))
        found = []
        for tenant, item in self._tenant_items("V#"):
            head, whole = stored_head(item["record"])
            mine = whole if whole is not None else turns.get((tenant, head.conversation_id), [])
            found.append(head.model_copy(update={"turns": sorted((t for t in mine if t.seq <= head.turn_count),
                                                                 key=lambda t: t.seq)}))
        return found

    def conversation_keys(self) -> list[tuple[str, str]]:
        return self._tenant_keys("V#")

    # -- embeddings --------------------------------------------------------------------

    def get_embeddings(self, identity: str, content_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        items = self._batch_get([(f"E#{identity}", h) for h in sorted(set(content_hashes))])
        return {item["sk"]: np.frombuffer(item["vector"].value, dtype=np.float32) for item in items}

    def put_embeddings(self, identity: str, vectors: dict[str, np.ndarray]) -> None:
        if vectors:
            self._register("IDENTITIES", identity)
        with self.table.batch_writer() as batch:
            for content_hash, vector in vectors.items():
                batch.put_item(Item={"pk": f"E#{identity}", "sk": content_hash,
                                     "vector": np.asarray(vector, dtype=np.float32).tobytes()})

    def delete_embeddings(self, identity: str, content_hashes: Iterable[str]) -> int:
        present = self.get_embeddings(identity, content_hashes)
        return self._delete_all((f"E#{identity}", h) for h in present)

    def delete_unused_embeddings(self, identity: str, content_hashes: Iterable[str]) -> int:
        hashes = set(content_hashes)
        return self.delete_embeddings(identity, hashes - self.hashes_in_use(hashes))

    # -- removals: a deleted item is gone once DynamoDB acknowledges it, and OpenSearch stops
    # serving a deleted row at its refresh, so no removal here waits on a compaction.

    def begin_removal(self, owner: Lease | None) -> str:
        return new_token()

    def end_removal(self, removal_id: str) -> None:
        return None

    def removals(self) -> list[Removal]:
        return []

    def clear_removals(self, removal_ids: Iterable[str]) -> None:
        return None

    def compact(self, removed: bool) -> bool:
        """Nothing to do: DynamoDB keeps no deleted item (point-in-time backups are the table's policy)."""
        return True

    def embedding_hashes(self, identity: str, low: str | None = None, high: str | None = None) -> set[str]:
        """Keys only, in 16 sort-key ranges read at once (the keys are SHA-256 hex; the ranges
        cover every string, so any other key is read too), or the one range asked for. DynamoDB
        counts a page's 1 MB before the projection, so this saves bytes sent, not pages: the
        ranges are what saves time."""
        if low is not None or high is not None:
            return set(self._hash_range(identity, low, high))
        bounds = [None, *SEGMENTS, None]
        parts = self._each(lambda n: self._hash_range(identity, bounds[n], bounds[n + 1]), list(range(len(SEGMENTS) + 1)))
        return {k for part in parts for k in part}

    def _hash_range(self, identity: str, low: str | None, high: str | None) -> list[str]:
        condition, values = "pk = :pk", {":pk": f"E#{identity}"}
        if low is None and high is not None:
            condition, values[":hi"] = condition + " AND sk < :hi", high
        elif high is None and low is not None:
            condition, values[":lo"] = condition + " AND sk >= :lo", low
        elif low is not None and high is not None:
            condition, values[":lo"], values[":hi"] = condition + " AND sk BETWEEN :lo AND :hi", low, high
        kwargs = {"KeyConditionExpression": condition, "ExpressionAttributeValues": values, "ProjectionExpression": "sk"}
        found = [str(i["sk"]) for i in self._query(**kwargs)]
        return [k for k in found if high is None or k < high]  # BETWEEN includes its upper bound

    # -- audit checkpoints: a run's pages, for its fanned-out invocations -----------------

    def audit_progress(self, run_id: str, page: int) -> int:
        item = self.table.get_item(Key={"pk": f"AUDIT#{run_id}", "sk": f"P#{page}"}, ConsistentRead=True).get("Item")
        return int(item["done"]) if item else 0

    def save_audit_progress(self, run_id: str, page: int, done: int) -> None:
        self.table.put_item(Item={"pk": f"AUDIT#{run_id}", "sk": f"P#{page}", "done": done,
                                  "expires_at": int(time.time()) + AUDIT_TTL_SECONDS})

    # -- inventories, for the audit ----------------------------------------------------

    def all_documents(self) -> list[Document]:
        return [Document.model_validate_json(i["record"]) for _, i in self._tenant_items("D#")]

    def chunk_inventory(self) -> list[tuple[str, str, str, int]]:
        return [(tenant, i["document_id"], i["revision"], int(i["chunks"])) for tenant, i in self._tenant_items("R#")]

    def cited_documents(self) -> list[tuple[str, str]]:
        """The tenants' ``XI#`` markers (kept after the last answer on a document goes)."""
        return self._tenant_keys("XI#")

    def stale_citations(self, tenant: str, document_id: str, served: str | None) -> list[tuple[str, str]]:
        """The ``X#`` partition's sort keys below ``served#`` and from ``served$`` on ('$' follows
        '#'): two ranges that leave out exactly the served revision's entries."""
        pk = f"X#{tenant}#{document_id}"
        if served is None:
            ranges = [("pk = :pk", {":pk": pk})]
        else:
            ranges = [("pk = :pk AND sk < :below", {":pk": pk, ":below": f"{served}#"}),
                      ("pk = :pk AND sk >= :above", {":pk": pk, ":above": f"{served}$"})]
        return [(str(i["revision"]), str(i["answer_id"])) for condition, values in ranges
                for i in self._query(KeyConditionExpression=condition, ExpressionAttributeValues=values)]

    def cache_inventory(self) -> list[tuple[str, str]]:
        return [(tenant, i["answer_id"]) for tenant, i in self._tenant_items("Q#")]

    def embedding_identities(self) -> dict[str, int]:
        counts = {}
        for identity in sorted(str(i["sk"]) for i in self._prefixed("IDENTITIES", "")):
            if count := self._count(f"E#{identity}"):
                counts[identity] = count
        return counts

    def _count(self, pk: str) -> int:
        from boto3.dynamodb.conditions import Key

        kwargs: dict[str, Any] = {"KeyConditionExpression": Key("pk").eq(pk), "Select": "COUNT"}
        total = 0
        while True:
            page = self.table.query(**kwargs)
            total += int(page.get("Count", 0))
            if "LastEvaluatedKey" not in page:
                return total
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def delete_identity(self, identity: str) -> int:
        pk = f"E#{identity}"
        keys = self._query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": pk}, ProjectionExpression="sk")
        removed = self._delete_all((pk, i["sk"]) for i in list(keys))
        self.table.delete_item(Key={"pk": "IDENTITIES", "sk": identity})
        self._registered.discard(("IDENTITIES", identity))
        return removed


def _stamp_of(at: datetime) -> str:
    """A time as a sort key orders it: UTC, fixed width, to the microsecond."""
    return at.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def _stamp(conversation: Conversation) -> str:
    return _stamp_of(conversation.updated_at)


def _subject_key(subject: str) -> str:
    """A subject as a key part: any subject (it may hold ``#``), fixed width."""
    return hashlib.sha256(subject.encode()).hexdigest()[:32]


def _turn_key(conversation_id: str, seq: int) -> str:
    """A turn's sort key: its conversation's, then its ``seq`` at fixed width, so they sort in order."""
    return f"VT#{conversation_id}#{seq:0{SEQ_DIGITS}d}"


def _conversation_keys(conversation: Conversation) -> tuple[str, str]:
    """The sort keys that find a conversation by its subject and by how long it has been idle."""
    stamp, cid = _stamp(conversation), conversation.conversation_id
    return f"VS#{_subject_key(conversation.subject)}#{stamp}#{cid}", f"VU#{stamp}#{cid}"


TABLE_DEFINITION = {
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
    "BillingMode": "PAY_PER_REQUEST",
}


def _tag_key(tag: str) -> str:
    """A tag in a sort key: its SHA-256, as a tag may hold '#' and be long (the lookup checks
    every record it names against the filter, so even a collision admits nothing)."""
    return hashlib.sha256(tag.encode("utf-8")).hexdigest()
