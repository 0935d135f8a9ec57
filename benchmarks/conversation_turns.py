"""A long conversation on DynamoDB: what one ask costs the record store at turn n, and where the
record stored whole (before turns were items of their own) stopped.

Runs the real :class:`DynamoMetadataStore` against moto: a conversation of n turns (questions of
100 or 2,000 characters), then one ask's store part as :func:`citewell.conversations.ask_in_conversation`
makes it (the head and its latest ``FOLLOW_UP_TURNS`` turns read, the head and the new turn
written), counting every call, every item written and the largest item through botocore's
``before-call`` event, and timing it on moto. Moto copies the whole table for each item of a
transaction, so its time grows with the table: an emulator's cost; the scaled figure is the
calls times typical in-region latencies. The whole-record figures are the record a conversation
of n turns was (its JSON, as DynamoDB counts an item) against the 400 KB item limit.

    python -m benchmarks.conversation_turns [--turns 1 100 1000 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from typing import Any

ITEM_BYTES = 400 * 1024  # DynamoDB's item limit
LATENCY_S = {"GetItem": 0.005, "Query": 0.006, "TransactWriteItems": 0.020, "BatchWriteItem": 0.020, "PutItem": 0.006}
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
    """Calls per operation, items written and the largest item, from each request's JSON."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.written = 0
        self.largest = 0
        client.meta.events.register("before-call.dynamodb", self._seen)

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
        self.written = self.largest = 0


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


def ask_cost(turns: int, chars: int) -> dict[str, Any]:
    """One ask's record-store part at turn ``turns + 1`` of a conversation of ``turns`` turns."""
    import boto3
    from moto import mock_aws

    from citewell.conversations import FOLLOW_UP_TURNS
    from citewell.metadata.dynamodb import TABLE_DEFINITION, DynamoMetadataStore
    from citewell.models.conversations import Conversation, Turn
    from citewell.models.values import utcnow
    from citewell.records import update_conversation

    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    question = ("How many days of annual leave do part-time staff get in their first year? " * 40)[:chars]
    with mock_aws():
        resource = boto3.resource("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
        resource.create_table(TableName="citewell-metadata", **TABLE_DEFINITION)
        store = DynamoMetadataStore("citewell-metadata", resource)
        head = Conversation(conversation_id="c" * 32, tenant="northpier", subject="anna", roles=["staff"])
        with store.table.batch_writer() as batch:  # the turns as the store writes them (moto's transactions copy the table)
            for n in range(1, turns + 1):
                for write in store._turn_writes(head.tenant, head.conversation_id,
                                                Turn(seq=n, answer_id=f"{n:032x}", asked=question, question=question)):
                    batch.put_item(Item=write["Put"]["Item"])
        assert store.save_conversation(head.model_copy(update={"turn_count": turns})) is not None
        calls = Calls(store.table.meta.client)
        started = time.perf_counter()
        current = store.get_conversation(head.tenant, head.conversation_id, last=FOLLOW_UP_TURNS)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1, 100, 1000, 5000])
    args = parser.parse_args()
    for chars in (100, 2000):
        print(f"whole record: last turn under 400 KB with {chars}-character questions: {last_whole_turn(chars):,}")
    print("| turns before the ask | question chars | calls | write calls | items written | largest item | moto | scaled |")
    print("|---|---|---|---|---|---|---|---|")
    for chars in (100, 2000):
        for turns in args.turns:
            cost = ask_cost(turns, chars)
            calls = ", ".join(f"{name} {count}" for name, count in sorted(cost["calls"].items()))
            print(f"| {turns:,} | {chars:,} | {calls} | {cost['write_calls']} | {cost['written']} | "
                  f"{cost['largest_item']:,} B | {cost['moto_s'] * 1000:.0f} ms | {cost['scaled_s'] * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
