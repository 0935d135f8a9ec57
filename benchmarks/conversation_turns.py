"""A long conversation on DynamoDB: what one ask and one view cost the record store at turn n, and
where the record stored whole (before turns were items of their own) stopped.

Runs the real :class:`DynamoMetadataStore` against moto: a conversation of n turns (questions of
100 or 2,000 characters, answered by ten recorded answers citing one document), then

- one view as ``GET /conversations/{id}`` makes it (:func:`citewell.conversations.thread`: the
  newest page of turns, their answers and the documents those rest on), and the same view as it
  was before it was paged (every turn read, then each turn's answer and its documents one by one);
- one ask's store part as :func:`citewell.conversations.ask_in_conversation` makes it (the head
  and its latest ``FOLLOW_UP_TURNS`` turns read, the head and the new turn written),

counting every call, every item read and written, the bytes of every reply and the largest item
written through botocore's ``before-call`` and ``after-call`` events, and timing it on moto.
Moto copies the whole table for each item of a transaction, so its time grows with the table: an
emulator's cost; the scaled figure is the calls times typical in-region latencies. The
whole-record figures are the record a conversation of n turns was (its JSON, as DynamoDB counts
an item) against the 400 KB item limit.

    python -m benchmarks.conversation_turns [--turns 1 100 1000 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

ITEM_BYTES = 400 * 1024  # DynamoDB's item limit
LATENCY_S = {"GetItem": 0.005, "Query": 0.006, "BatchGetItem": 0.008, "TransactWriteItems": 0.020, "BatchWriteItem": 0.020,
             "PutItem": 0.006}
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


def _value_bytes(value: dict[str, Any]) -> int:
    ((kind, given),) = value.items()
    if kind == "S":
        return len(given.encode("utf-8"))
    if kind == "N":
        return (len(given.lstrip("-").replace(".", "").strip("0") or "0") + 1) // 2 + 1
    return len(json.dumps(given))


def _item_bytes(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


class Calls:
    """Calls per operation, items written and the largest item, from each request's JSON; items
    read and reply bytes, from each reply."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.written = self.largest = self.read = self.bytes = 0
        client.meta.events.register("before-call.dynamodb", self._seen)
        client.meta.events.register("after-call.dynamodb", self._replied)

    def _replied(self, http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        self.bytes += len(http_response.content or b"")
        if model.name in ("Query", "Scan"):
            self.read += int(parsed.get("Count", 0))
        elif model.name == "GetItem":
            self.read += "Item" in parsed
        elif model.name == "BatchGetItem":
            self.read += sum(len(found) for found in parsed.get("Responses", {}).values())

    def _seen(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.calls[model.name] += 1
        body = json.loads(params.get("body") or b"{}")
        items: list[dict[str, Any]] = []
        if model.name == "PutItem":
            items = [body["Item"]]
        elif model.name == "TransactWriteItems":
            items = [e["Put"]["Item"] for e in body["TransactItems"] if "Put" in e]
            self.written += sum(1 for e in body["TransactItems"] if "ConditionCheck" not in e) - len(items)
        elif model.name == "BatchWriteItem":
            for writes in body["RequestItems"].values():
                items += [w["PutRequest"]["Item"] for w in writes if "PutRequest" in w]
                self.written += sum(1 for w in writes if "DeleteRequest" in w)
        elif model.name in ("DeleteItem", "UpdateItem"):
            self.written += 1
        self.written += len(items)
        self.largest = max([self.largest, *(_item_bytes(i) for i in items)])

    def reset(self) -> None:
        self.calls.clear()
        self.written = self.largest = self.read = self.bytes = 0


def whole_record_bytes(turns: int, chars: int) -> int:
    """The item a conversation of ``turns`` turns was when stored whole: its record and attributes."""
    from citewell.models.conversations import Conversation, Turn

    question = ("How many days of annual leave do part-time staff get in their first year? " * 40)[:chars]
    conversation = Conversation(conversation_id="c" * 32, tenant="northpier", subject="anna", roles=["staff"], turns=[
        Turn(seq=n, answer_id=f"{n:032x}", asked=question, question=question) for n in range(1, turns + 1)])
    record = conversation.model_dump_json(exclude={"turn_count"})
    return _item_bytes({"pk": {"S": "T#northpier"}, "sk": {"S": "V#" + "c" * 32}, "record": {"S": record},
                        "version": {"N": str(turns)}, "subject": {"S": "anna"}, "expires_at": {"N": "1800000000"}})


def last_whole_turn(chars: int) -> int:
    """The last turn a conversation stored whole could keep under the 400 KB item limit."""
    low, high = 1, 20_000
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if whole_record_bytes(middle, chars) <= ITEM_BYTES else (low, middle - 1)
    return low


ANSWERS = 10  # distinct answers the turns got, each citing the one document


@contextmanager
def seeded(turns: int, chars: int) -> Iterator[tuple[Any, Any]]:
    """A moto table holding a conversation of ``turns`` turns, its answers and their document:
    the store and the services a view reads them through."""
    import boto3
    from moto import mock_aws

    from citewell.deployments import open_local
    from citewell.metadata.dynamodb import TABLE_DEFINITION, DynamoMetadataStore
    from citewell.models.answers import AnswerRecord, Citation, Outcome
    from citewell.models.conversations import Conversation, Turn
    from citewell.models.documents import Document, DocumentStatus
    from citewell.services import records

    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    question = ("How many days of annual leave do part-time staff get in their first year? " * 40)[:chars]
    with mock_aws(), tempfile.TemporaryDirectory() as home:
        resource = boto3.resource("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
        resource.create_table(TableName="citewell-metadata", **TABLE_DEFINITION)
        store = DynamoMetadataStore("citewell-metadata", resource)
        services = replace(open_local(Path(home)), **records(store))
        revision = "r" * 64
        assert store.save_document(Document(
            document_id="handbook.md", tenant="northpier", allowed_roles=frozenset({"staff"}), title="Handbook", source="test",
            status=DocumentStatus.PUBLISHED, active_revision=revision, chunk_count=1, generation="a" * 32)) is not None
        for n in range(ANSWERS):
            store.put_answer(AnswerRecord(
                answer_id=f"{n:032x}", tenant="northpier", roles=["staff"], question=question, refused=False,
                answer="Part-time staff receive annual leave pro rata to their contracted hours. [S1]", outcome=Outcome.ANSWERED,
                citations=[Citation(ref="S1", chunk_id=f"handbook.md#0#{n}", document_id="handbook.md", revision=revision,
                                    title="Handbook", quote="Part-time staff receive annual leave pro rata.")],
                generator="extractive"))
        head = Conversation(conversation_id="c" * 32, tenant="northpier", subject="anna", roles=["staff"])
        with store.table.batch_writer() as batch:  # the turns as the store writes them (moto's transactions copy the table)
            for n in range(1, turns + 1):
                for write in store._turn_writes(head.tenant, head.conversation_id,
                                                Turn(seq=n, answer_id=f"{n % ANSWERS:032x}", asked=question, question=question)):
                    batch.put_item(Item=write["Put"]["Item"])
        assert store.save_conversation(head.model_copy(update={"turn_count": turns})) is not None
        yield store, services


def _whole_view(services: Any, identity: Any, conversation_id: str) -> int:
    """The view as it was before it was paged: every turn read, then each turn's answer and the
    documents it rests on, one turn at a time. Returns the turns shown."""
    from citewell.answers.service import recorded_citations
    from citewell.errors import NotFound

    conversation = services.conversations.get_conversation(identity.tenant, conversation_id)
    for turn in conversation.turns:
        try:
            recorded_citations(services, identity, turn.answer_id)
        except NotFound:
            pass
    return len(conversation.turns)


def view_cost(store: Any, services: Any, turns: int, chars: int) -> dict[str, Any]:
    """One view of the conversation, paged (now) and whole (before)."""
    from citewell.conversations import THREAD_PAGE_MAX, thread
    from citewell.models.identity import Identity

    anna = Identity(tenant="northpier", roles=frozenset({"staff"}), subject="anna")
    calls = Calls(store.table.meta.client)
    found: dict[str, Any] = {"turns": turns, "chars": chars}
    thread(services, anna, "c" * 32)  # once untimed: the first call's imports are not the view's
    for name, view in (("paged", lambda: len(thread(services, anna, "c" * 32).turns)),
                       ("whole", lambda: _whole_view(services, anna, "c" * 32))):
        calls.reset()
        started = time.perf_counter()
        shown = view()
        took = time.perf_counter() - started
        found[name] = {"shown": shown, "calls": dict(calls.calls), "read": calls.read, "bytes": calls.bytes, "moto_s": took,
                       "scaled_s": sum(LATENCY_S.get(op, 0.006) * count for op, count in calls.calls.items())}
    # The reply's JSON: the page, and the whole thread the view returned before (every page's turns in one).
    page = thread(services, anna, "c" * 32)
    found["paged"]["reply"] = len(page.model_dump_json().encode())
    every, cursor = [], None
    while True:
        older = thread(services, anna, "c" * 32, cursor, THREAD_PAGE_MAX)
        every[:0] = older.turns
        if (cursor := older.next) is None:
            break
    found["whole"]["reply"] = len(page.model_copy(update={"turns": every, "next": None}).model_dump_json().encode())
    return found


def ask_cost(store: Any, turns: int, chars: int) -> dict[str, Any]:
    """One ask's record-store part at turn ``turns + 1`` of a conversation of ``turns`` turns."""
    from citewell.conversations import FOLLOW_UP_TURNS
    from citewell.models.conversations import Conversation, Turn
    from citewell.models.values import utcnow
    from citewell.records import update_conversation

    question = ("How many days of annual leave do part-time staff get in their first year? " * 40)[:chars]
    calls = Calls(store.table.meta.client)
    started = time.perf_counter()
    current = store.get_conversation("northpier", "c" * 32, last=FOLLOW_UP_TURNS)
    assert current is not None

    def joined(c: Conversation) -> Conversation:
        at, seq = utcnow(), c.turn_count + 1
        return c.model_copy(update={"turns": [Turn(seq=seq, answer_id="f" * 32, asked=question, question=question, at=at)],
                                    "turn_count": seq, "updated_at": at})

    stored = update_conversation(store, current, joined)
    took = time.perf_counter() - started
    assert stored is not None and stored.turn_count == turns + 1
    scaled = sum(LATENCY_S.get(name, 0.006) * count for name, count in calls.calls.items())
    return {"turns": turns, "chars": chars, "calls": dict(calls.calls), "written": calls.written,
            "largest_item": calls.largest, "moto_s": took, "scaled_s": scaled,
            "write_calls": sum(calls.calls.get(w, 0) for w in WRITES)}


def _calls(calls: dict[str, int]) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in sorted(calls.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1, 100, 1000, 5000])
    args = parser.parse_args()
    for chars in (100, 2000):
        print(f"whole record: last turn under 400 KB with {chars}-character questions: {last_whole_turn(chars):,}")
    views, asks = [], []
    for chars in (100, 2000):
        for turns in args.turns:
            with seeded(turns, chars) as (store, services):
                views.append(view_cost(store, services, turns, chars))
                asks.append(ask_cost(store, turns, chars))
    print("\nOne view (GET /conversations/{id}): paged, as now, and whole, as before")
    print("| turns | question chars | view | turns shown | calls | items read | bytes read | reply | moto | scaled |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for view in views:
        for name in ("paged", "whole"):
            cost = view[name]
            print(f"| {view['turns']:,} | {view['chars']:,} | {name} | {cost['shown']:,} | {_calls(cost['calls'])} | "
                  f"{cost['read']:,} | {cost['bytes']:,} | {cost['reply']:,} | {cost['moto_s'] * 1000:,.0f} ms | "
                  f"{cost['scaled_s'] * 1000:,.0f} ms |")
    print("\nOne ask")
    print("| turns before the ask | question chars | calls | write calls | items written | largest item | moto | scaled |")
    print("|---|---|---|---|---|---|---|---|")
    for cost in asks:
        print(f"| {cost['turns']:,} | {cost['chars']:,} | {_calls(cost['calls'])} | {cost['write_calls']} | {cost['written']} | "
              f"{cost['largest_item']:,} B | {cost['moto_s'] * 1000:.0f} ms | {cost['scaled_s'] * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
