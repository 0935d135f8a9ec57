"""DynamoDB resolves a tag filter by its tag's entries, not by reading every record of the
tenant, and those entries can only narrow: each record they name is checked against the filter
and the caller's roles (attacked with forged entries and another tenant's tags)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from citewell.filters import SearchFilter
from citewell.metadata.dynamodb import TAG_MARKER, DynamoMetadataStore, _tag_key
from citewell.models.documents import Document
from citewell.models.identity import Identity
from tests.conftest import moto_dynamodb

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
HR = SearchFilter(tags=frozenset({"hr"}))


def record(doc_id: str, tenant: str = "northpier", roles=("staff",), tags=()) -> Document:
    return Document(document_id=doc_id, tenant=tenant, allowed_roles=frozenset(roles), title=doc_id, source=f"test:{doc_id}",
                    tags=frozenset(tags))


@pytest.fixture
def dynamo(monkeypatch) -> Iterator[DynamoMetadataStore]:
    with moto_dynamodb(monkeypatch) as store:
        yield store


@contextmanager
def items_read(store: DynamoMetadataStore) -> Iterator[list[int]]:
    """Counts the items DynamoDB reads (Query's ScannedCount, GetItem and BatchGetItem's items)."""
    read = [0]

    def count(http_response, parsed, model, **_) -> None:  # noqa: ANN001
        if model.name == "Query":
            read[0] += int(parsed.get("ScannedCount", 0))
        elif model.name == "GetItem":
            read[0] += 1 if parsed.get("Item") else 0
        elif model.name == "BatchGetItem":
            read[0] += sum(len(v) for v in parsed.get("Responses", {}).values())

    events = store.client.meta.events
    events.register("after-call.dynamodb", count)
    try:
        yield read
    finally:
        events.unregister("after-call.dynamodb", count)


def items(store: DynamoMetadataStore, tenant: str = "northpier") -> list[dict]:
    return store.table.query(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": f"T#{tenant}"})["Items"]


def test_a_tag_filter_reads_its_tags_entries_not_every_record(dynamo):
    for n in range(300):
        assert dynamo.save_document(record(f"notes/{n:03}.md", tags=("hr",) if n % 100 == 0 else ()))
    dynamo.find_documents(STAFF, HR)  # the tenant's first tag lookup (see the backfill test)
    with items_read(dynamo) as read:
        assert dynamo.find_documents(STAFF, HR) == {"notes/000.md", "notes/100.md", "notes/200.md"}
    assert read[0] <= 3 + 3 + 1, read  # three entries, their three records, the marker


def test_records_written_before_tag_entries_are_found_once_indexed(dynamo):
    """A tenant's records from before the ``G#`` entries (written as the old layout wrote them)
    are indexed at its first tag lookup, and a record rewritten during it keeps its own entries."""
    for doc_id, tags in (("a.md", ("hr",)), ("b.md", ()), ("c.md", ("hr", "legal"))):
        stored = record(doc_id, tags=tags).model_copy(update={"version": 1})
        dynamo.table.put_item(Item={"pk": "T#northpier", "sk": f"D#{doc_id}", "record": stored.model_dump_json(),
                                    "version": 1, "generation": stored.generation})
    assert not [i for i in items(dynamo) if i["sk"].startswith("G#")]
    assert dynamo.find_documents(STAFF, HR) == {"a.md", "c.md"}
    assert dynamo.find_documents(STAFF, SearchFilter(tags=frozenset({"hr", "legal"}))) == {"c.md"}
    assert any(i["sk"] == TAG_MARKER for i in items(dynamo))
    # Another container (no memory of the marker) trusts the entries: it reads no record to find them.
    other = DynamoMetadataStore(dynamo.table.name, _resource(dynamo))
    with items_read(other) as read:
        assert other.find_documents(STAFF, HR) == {"a.md", "c.md"}
    assert read[0] <= 1 + 2 + 2, read


def _resource(store: DynamoMetadataStore):  # noqa: ANN202
    import boto3

    return boto3.resource("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")


def test_tag_entries_follow_the_record_and_leave_nothing_when_it_is_deleted(dynamo):
    stored = dynamo.save_document(record("a.md", tags=("hr", "2026")))
    stored = dynamo.save_document(stored.model_copy(update={"tags": frozenset({"legal", "2026"})}))
    entries = sorted(i["sk"] for i in items(dynamo) if i["sk"].startswith("G#"))
    assert entries == sorted(f"G#{_tag_key(t)}#a.md" for t in ("legal", "2026"))
    assert dynamo.delete_document("northpier", "a.md") == 1
    assert [i["sk"] for i in items(dynamo) if "a.md" in i["sk"]] == []  # no entry names the deleted document
    assert dynamo.delete_document("northpier", "a.md") == 0


def test_a_delete_for_another_generation_deletes_nothing(dynamo):
    dynamo.save_document(record("a.md", tags=("hr",)).model_copy(update={"generation": "a" * 32}))
    assert dynamo.delete_document("northpier", "a.md", generation="b" * 32) == 0
    assert dynamo.find_documents(STAFF, HR) == {"a.md"}
    assert dynamo.delete_document("northpier", "a.md", generation="a" * 32) == 1
    assert dynamo.find_documents(STAFF, HR) == frozenset()


def test_a_forged_or_stale_entry_admits_nothing_the_filter_or_the_roles_refuse(dynamo):
    """Entries naming a record without the tag, one the caller's roles do not open, another
    tenant's document or one that does not exist: the lookup checks each record it reads."""
    dynamo.save_document(record("open.md"))
    dynamo.save_document(record("salaries.md", roles=("hr",), tags=("hr",)))
    dynamo.save_document(record("theirs.md", tenant="bluefen", tags=("hr",)))
    dynamo.find_documents(STAFF, HR)
    for doc_id in ("open.md", "salaries.md", "theirs.md", "nowhere.md"):
        dynamo.table.put_item(Item={"pk": "T#northpier", "sk": f"G#{_tag_key('hr')}#{doc_id}", "document_id": doc_id})
    assert dynamo.find_documents(STAFF, HR) == frozenset()
    assert dynamo.find_documents(Identity(tenant="northpier", roles=frozenset({"hr"})), HR) == {"salaries.md"}
    bluefen = Identity(tenant="bluefen", roles=frozenset({"staff"}))
    assert dynamo.find_documents(bluefen, HR) == {"theirs.md"}
    assert dynamo.find_documents(bluefen, SearchFilter(tags=frozenset({"hr"}), prefix="sal/")) == frozenset()


def test_a_save_that_loses_its_race_writes_no_entries(dynamo):
    stored = dynamo.save_document(record("a.md", tags=("hr",)))
    assert dynamo.save_document(stored.model_copy(update={"tags": frozenset({"legal"})}))
    assert dynamo.save_document(stored.model_copy(update={"tags": frozenset({"secret"})})) is None  # stale version
    assert not [i for i in items(dynamo) if i["sk"].startswith(f"G#{_tag_key('secret')}#")]
    assert dynamo.find_documents(STAFF, SearchFilter(tags=frozenset({"legal"}))) == {"a.md"}
