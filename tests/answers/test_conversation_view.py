"""A long conversation viewed on real stores (SQLite, and DynamoDB on moto held to DynamoDB's own
limits): the view is a page of the newest turns and a cursor back to the earlier ones, so a
5,000-turn conversation's view reads what a 20-turn one's does; paging back reaches turn 1 with
every turn once; a cursor cut short, edited or another conversation's is refused, and another
caller gets nothing of the conversation with its id or its cursor."""

from __future__ import annotations

from collections import Counter

import pytest

from citewell.conversations import THREAD_PAGE, THREAD_PAGE_MAX, _TurnsCursor, thread
from citewell.cursors import decode, encode
from citewell.deletion import delete_document
from citewell.errors import InvalidInput, NotFound
from tests.answers.test_conversation_length import ASKED, LONG, seeded
from tests.answers.test_conversations import ANNA, BEN, MEALS, OTHER_TENANT, add, turn
from tests.strict_aws import StrictAws


class DynamoReads:
    """Every DynamoDB call a store's client makes, the items each returned and its reply's bytes."""

    def __init__(self, client) -> None:
        self.operations: Counter[str] = Counter()
        self.items = self.bytes = 0
        client.meta.events.register("before-call.dynamodb", StrictAws._dynamodb)  # DynamoDB's key and 400 KB item limits
        client.meta.events.register("before-call.dynamodb", self._call)
        client.meta.events.register("after-call.dynamodb", self._reply)

    def _call(self, model, **_) -> None:
        self.operations[model.name] += 1

    def _reply(self, http_response, parsed, model, **_) -> None:
        self.bytes += len(http_response.content or b"")
        if model.name in ("Query", "Scan"):
            self.items += int(parsed.get("Count", 0))
        elif model.name == "GetItem":
            self.items += "Item" in parsed
        elif model.name == "BatchGetItem":
            self.items += sum(len(found) for found in parsed.get("Responses", {}).values())

    def taken(self) -> tuple[dict[str, int], int]:
        taken = dict(self.operations), self.items
        self.operations.clear()
        self.items = self.bytes = 0
        return taken


class SqliteReads:
    """The statements a SQLite store's connection runs and the virtual-machine steps they take: a
    statement reading 5,000 rows takes thousands of steps where one reading 20 takes a few hundred."""

    STEP = 1  # every step: a larger period is counted afresh by each sqlite3_step, and a row takes fewer

    def __init__(self, conn) -> None:
        self.statements = self.steps = 0
        conn.set_trace_callback(self._statement)
        conn.set_progress_handler(self._step, self.STEP)

    def _statement(self, _sql: str) -> None:
        self.statements += 1

    def _step(self) -> int:
        self.steps += self.STEP
        return 0  # go on

    def taken(self) -> tuple[int, int]:
        taken = self.statements, self.steps
        self.statements = self.steps = 0
        return taken


def _reads(services):
    table = getattr(services.conversations, "table", None)
    return DynamoReads(table.meta.client) if table is not None else SqliteReads(services.conversations.conn)


def test_a_5000_turn_conversation_is_viewed_a_page_at_a_time_at_the_cost_of_a_short_one(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, ASKED)
    short, long = seeded(services, first.answer_id, THREAD_PAGE), seeded(services, first.answer_id, LONG, answered=THREAD_PAGE)
    reads = _reads(services)

    short_view = thread(services, ANNA, short)
    cost_short = reads.taken()
    long_view = thread(services, ANNA, long)
    cost_long = reads.taken()
    assert [t.seq for t in short_view.turns] == list(range(1, THREAD_PAGE + 1)) and short_view.next is None
    assert [t.seq for t in long_view.turns] == list(range(LONG - THREAD_PAGE + 1, LONG + 1)) and long_view.next
    assert long_view.turn_count == LONG and short_view.turn_count == THREAD_PAGE
    assert all(not t.withdrawn and "18 pounds" in (t.answer or "") for t in long_view.turns)
    if isinstance(reads, DynamoReads):
        # the head, one Query of the page's turns, the answers and their documents in a batch each
        assert cost_long == cost_short, (cost_short, cost_long)
        operations, items = cost_long
        assert operations == {"GetItem": 1, "Query": 1, "BatchGetItem": 2}, operations
        assert items == 1 + THREAD_PAGE + 1 + 1, items
    else:
        (short_statements, short_steps), (long_statements, long_steps) = cost_short, cost_long
        assert long_statements == short_statements, (cost_short, cost_long)
        assert long_steps <= short_steps * 1.2, (cost_short, cost_long)  # 5,000 turns read would be 100 times more

    # Paged back, 100 turns a page, every turn comes once, in order, down to turn 1; each page reads only itself.
    pages, cursor = [], None
    while True:
        page = thread(services, ANNA, long, cursor, THREAD_PAGE_MAX)
        cost = reads.taken()
        if isinstance(reads, DynamoReads):
            assert cost[0]["Query"] == 1 and cost[1] <= 1 + THREAD_PAGE_MAX + 1 + 1, cost
        pages.append([t.seq for t in page.turns])
        if (cursor := page.next) is None:
            break
    assert len(pages) == LONG // THREAD_PAGE_MAX
    assert [seq for page in reversed(pages) for seq in page] == list(range(1, LONG + 1))
    assert [t.seq for t in thread(services, ANNA, long, long_view.next).turns] == list(
        range(LONG - 2 * THREAD_PAGE + 1, LONG - THREAD_PAGE + 1))  # the default page follows on from the first
    older = thread(services, ANNA, long, long_view.next)
    assert all(t.withdrawn and not t.asked for t in older.turns)  # their answers were never recorded: no words


def test_a_cursor_reads_only_its_own_conversation_and_only_for_its_owner(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, ASKED)
    for asked in ("what about Leeds?", "and in Manchester?", "what about Leeds?"):
        turn(services, ANNA, asked, first.conversation_id)
    cid = first.conversation_id
    page = thread(services, ANNA, cid, limit=2)
    assert [t.seq for t in page.turns] == [3, 4] and page.next
    assert [t.seq for t in thread(services, ANNA, cid, page.next, limit=2).turns] == [1, 2]
    assert thread(services, ANNA, cid, page.next, limit=2).next is None

    # Cut short, edited, another endpoint's or another conversation's: refused, with what to do.
    other = turn(services, ANNA, "How much is the meal allowance in Leeds?").conversation_id
    cursor = decode(page.next, _TurnsCursor)
    for bad in (page.next[:-3], "not-a-cursor", "e30", encode(cursor.model_copy(update={"before": 0})),
                encode(cursor.model_copy(update={"before": 99})),
                page.next.replace(page.next[5], "A" if page.next[5] != "A" else "B", 1)):
        with pytest.raises(InvalidInput):
            thread(services, ANNA, cid, bad)
    with pytest.raises(InvalidInput, match="another conversation"):
        thread(services, ANNA, other, page.next)
    for limit in (0, THREAD_PAGE_MAX + 1):
        with pytest.raises(InvalidInput, match="limit"):
            thread(services, ANNA, cid, limit=limit)

    # Another subject, the same subject under other roles, another tenant: nothing, cursor or not.
    for stranger in (BEN, OTHER_TENANT):
        for cursor_ in (None, page.next):
            with pytest.raises(NotFound):
                thread(services, stranger, cid, cursor_)

    # A source deleted meanwhile: the page still reads, its turns without their words.
    delete_document(services, "northpier", "meals.md")
    withdrawn = thread(services, ANNA, cid, page.next, limit=2)
    assert [t.seq for t in withdrawn.turns] == [1, 2] and all(t.withdrawn and not t.asked and t.answer is None
                                                              for t in withdrawn.turns)
    # The conversation deleted meanwhile: its next page is gone too.
    assert services.conversations.delete_conversation(ANNA.tenant, cid) == 1
    with pytest.raises(NotFound):
        thread(services, ANNA, cid, page.next, limit=2)
