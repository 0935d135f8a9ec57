"""A long conversation on real stores (SQLite, and DynamoDB on moto held to DynamoDB's own limits):
its turns are stored each on its own, so a 5,000-turn conversation keeps answering, an ask costs
the same calls and writes at turn 5,001 as at turn 21, a delete withdraws every turn's words and
a deleted conversation takes every turn with it; a conversation stored whole (as before) is read
and split at its first write."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from citewell.conversations import thread
from citewell.deletion import delete_document
from citewell.metadata.dynamodb import TURN_WRITES
from citewell.models.conversations import Conversation, Turn
from tests.answers.test_conversations import ANNA, MEALS, add, turn
from tests.strict_aws import StrictAws

LONG = 5000
ASKED = "How much is the meal allowance in Manchester?"
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


def seeded(services, answer_id: str, turns: int, answered: int | None = None) -> str:
    """A conversation of ANNA's holding ``turns`` turns; the latest ``answered`` (all, for None) got
    ``answer_id`` (a cached answer to the same question), the earlier ones answers of their own.

    On DynamoDB the turns go in as the store writes them (its own items) by BatchWriteItem: moto
    copies the whole table for every item of a transaction, which at 10,000 items is an
    emulator's cost, not DynamoDB's; the head is written by the store."""
    answered = turns if answered is None else answered
    every = [Turn(seq=n, answer_id=answer_id if n > turns - answered else f"{n:032x}", asked=ASKED, question=ASKED)
             for n in range(1, turns + 1)]
    head = Conversation(conversation_id=f"long{turns}", tenant=ANNA.tenant, subject=ANNA.subject, roles=["staff"])
    store = services.conversations
    if getattr(store, "table", None) is None:
        stored = store.save_conversation(head.model_copy(update={"turns": every}))
    else:
        with store.table.batch_writer() as batch:
            for turn_ in every:
                for write in store._turn_writes(head.tenant, head.conversation_id, turn_):
                    batch.put_item(Item=write["Put"]["Item"])
        stored = store.save_conversation(head.model_copy(update={"turn_count": turns}))
    assert stored is not None and stored.turn_count == turns
    return head.conversation_id


def every_item(table) -> list[dict]:
    """The whole table, page after page (a Scan stops at 1 MB)."""
    items, kwargs = [], {}
    while True:
        page = table.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class Calls:
    """Every DynamoDB call a store's client makes: its operation and the items it writes."""

    def __init__(self, client) -> None:
        self.operations: Counter[str] = Counter()
        self.items_written = 0
        client.meta.events.register("before-call.dynamodb", StrictAws._dynamodb)  # DynamoDB's key and 400 KB item limits
        client.meta.events.register("before-call.dynamodb", self._count)

    def _count(self, model, params, **_) -> None:
        self.operations[model.name] += 1
        body = json.loads(params.get("body") or b"{}")
        if model.name in ("PutItem", "UpdateItem", "DeleteItem"):
            self.items_written += 1
        elif model.name == "TransactWriteItems":
            self.items_written += sum(1 for entry in body["TransactItems"] if "ConditionCheck" not in entry)
        elif model.name == "BatchWriteItem":
            self.items_written += sum(len(writes) for writes in body["RequestItems"].values())

    def taken(self) -> tuple[dict[str, int], int]:
        taken = dict(self.operations), self.items_written
        self.operations.clear()
        self.items_written = 0
        return taken


def test_a_5000_turn_conversation_keeps_answering_at_a_constant_cost_and_goes_whole(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, ASKED)
    short, long = seeded(services, first.answer_id, 20), seeded(services, first.answer_id, LONG, answered=20)
    turn(services, ANNA, "what about Leeds?", short)  # the follow-up's answer computed and cached once
    table = getattr(services.conversations, "table", None)
    calls = Calls(table.meta.client) if table is not None else None

    at_21 = turn(services, ANNA, "what about Leeds?", short)
    cost_at_21 = calls.taken() if calls else None
    at_5001 = turn(services, ANNA, "what about Leeds?", long)
    cost_at_5001 = calls.taken() if calls else None
    assert at_5001.question == at_21.question == "How much is the meal allowance in Leeds?"
    assert at_5001.answer_id == at_21.answer_id and "16 pounds" in at_5001.answer
    if calls is not None:
        assert cost_at_5001 == cost_at_21, (cost_at_21, cost_at_5001)  # every call and every item written alike
        operations, written = cost_at_5001
        assert sum(operations.get(w, 0) for w in WRITES) == 1 and operations["TransactWriteItems"] == 1, operations
        assert written == 7  # the head, its two lookup keys put and two removed, the turn and its answer entry

    stored = services.conversations.get_conversation(ANNA.tenant, long)
    assert stored.turn_count == LONG + 1 and [t.seq for t in stored.turns] == list(range(1, LONG + 2))
    assert [t.seq for t in services.conversations.get_conversation(ANNA.tenant, long, last=3).turns] == [LONG - 1, LONG, LONG + 1]

    delete_document(services, "northpier", "meals.md")  # the latest 21 turns' answers rested on it
    emptied = services.conversations.get_conversation(ANNA.tenant, long)
    assert len(emptied.turns) == LONG + 1
    assert [t.seq for t in emptied.turns if t.withdrawn] == list(range(LONG - 19, LONG + 2))
    assert all(not t.asked and not t.question for t in emptied.turns if t.withdrawn)
    if calls is not None:  # the 21 turns in one transaction: only the turns that got those answers are written
        assert calls.operations["TransactWriteItems"] >= 1

    assert services.conversations.delete_conversation(ANNA.tenant, long) == 1
    assert services.conversations.get_conversation(ANNA.tenant, long) is None
    assert long not in {c.conversation_id for c in services.conversations.conversation_inventory()}
    if table is not None:
        left = [i["sk"] for i in every_item(table) if long in str(i["sk"]) or i.get("conversation_id") == long]
        assert not left, left[:5]


def _stored_whole(services, conversation: Conversation) -> None:
    """``conversation`` written as it was before turns were stored on their own: one record, turns inside."""
    record = conversation.model_dump_json(exclude={"turn_count"})
    table = getattr(services.conversations, "table", None)
    if table is not None:
        from citewell.metadata.dynamodb import _conversation_keys

        pk = f"T#{conversation.tenant}"
        table.put_item(Item={"pk": pk, "sk": f"V#{conversation.conversation_id}", "record": record,
                             "version": conversation.version, "subject": conversation.subject})
        for sk in [*_conversation_keys(conversation), *{f"VA#{t.answer_id}#{conversation.conversation_id}" for t in conversation.turns}]:
            table.put_item(Item={"pk": pk, "sk": sk, "conversation_id": conversation.conversation_id})
        return
    conn = services.conversations.conn
    with conn:
        conn.execute("INSERT INTO conversations (tenant, conversation_id, subject, version, updated_at, record) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (conversation.tenant, conversation.conversation_id, conversation.subject,
                                                   conversation.version, conversation.updated_at.isoformat(), record))
        conn.executemany("INSERT INTO conversation_answers (tenant, answer_id, conversation_id) VALUES (?, ?, ?)",
                         [(conversation.tenant, a, conversation.conversation_id) for a in {t.answer_id for t in conversation.turns}])


def test_a_conversation_stored_whole_is_read_and_split_at_its_first_write(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, ASKED)
    whole = Conversation(conversation_id="whole", tenant=ANNA.tenant, subject=ANNA.subject, roles=["staff"], version=3,
                         turns=[Turn(seq=n, answer_id=first.answer_id, asked=ASKED, question=ASKED) for n in (1, 2, 3)])
    _stored_whole(services, whole)
    read = services.conversations.get_conversation(ANNA.tenant, "whole")
    assert read.turn_count == 3 and [t.seq for t in read.turns] == [1, 2, 3]
    assert [t.seq for t in services.conversations.get_conversation(ANNA.tenant, "whole", last=1).turns] == [3]
    assert [t.seq for t in services.conversations.get_conversation(ANNA.tenant, "whole", last=1, before=3).turns] == [2]
    assert thread(services, ANNA, "whole", limit=2).next is not None  # a page of a record stored whole, too
    assert [c.conversation_id for c in services.conversations.conversations_answering(ANNA.tenant, [first.answer_id])
            if c.conversation_id == "whole"] == ["whole"]

    follow = turn(services, ANNA, "what about Leeds?", "whole")
    assert follow.question == "How much is the meal allowance in Leeds?"
    split = services.conversations.get_conversation(ANNA.tenant, "whole")
    assert split.turn_count == 4 and [t.seq for t in split.turns] == [1, 2, 3, 4] and split.version > whole.version
    table = getattr(services.conversations, "table", None)
    if table is not None:
        keys = {i["sk"] for i in every_item(table) if i["pk"] == "T#northpier"}
        assert {"VT#whole#0000000001", "VT#whole#0000000004"} <= keys
        assert f"VA#{first.answer_id}#whole" not in keys  # the record's entries give way to the turns'
        head = table.get_item(Key={"pk": "T#northpier", "sk": "V#whole"})["Item"]
        assert "turns" not in json.loads(head["record"]) and int(head["turn_count"]) == 4

    delete_document(services, "northpier", "meals.md")
    assert all(t.withdrawn for t in services.conversations.get_conversation(ANNA.tenant, "whole").turns)
    assert services.conversations.delete_conversation(ANNA.tenant, "whole") == 1
    if table is not None:
        assert not [i for i in every_item(table) if "whole" in str(i["sk"])]


@pytest.mark.parametrize("answers", [1, 2])
def test_a_withdrawal_of_many_turns_of_one_conversation_takes_them_all(services, answers):
    """More turns than one DynamoDB transaction holds, got by one or two answers: all lose their words."""
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, ASKED)
    second = turn(services, ANNA, "what about Leeds?", first.conversation_id)
    ids = [first.answer_id, second.answer_id][:answers]
    count = 2 * TURN_WRITES + 7
    services.conversations.save_conversation(Conversation(
        conversation_id="many", tenant=ANNA.tenant, subject=ANNA.subject, roles=["staff"],
        turns=[Turn(seq=n, answer_id=ids[n % answers], asked=ASKED, question=ASKED) for n in range(1, count + 1)]))
    from citewell.deletion import withdraw_turns

    assert withdraw_turns(services.conversations, ANNA.tenant, ids) >= 1
    stored = services.conversations.get_conversation(ANNA.tenant, "many")
    assert len(stored.turns) == count and all(t.withdrawn and not t.asked for t in stored.turns)
