"""Conversations: follow-up questions made standalone, the thread and history they leave, and the
feedback an asker gives an answer.

Every question asked through the API joins a conversation (a new one unless it names one), so
a caller's history and the feedback on what they were answered are theirs alone: a
conversation belongs to exactly one identity (tenant, subject, roles), and any other caller is
told it does not exist. A turn keeps only what the caller typed, the standalone question it
was answered as, its answer's id and its feedback; the answer's text stays in the answer
record. When that answer is withdrawn (a source deleted or replaced) the turn loses its words
and feedback with it (:func:`citewell.deletion.withdraw_turns`), and a turn whose answer the caller may no longer
read (a document narrowed since) is shown without them. Turns expire
``CITEWELL_CONVERSATION_DAYS`` after a conversation's last question.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from citewell.answers.followups import standalone
from citewell.answers.service import NOT_KEPT
from citewell.cursors import decode, encode
from citewell.deletion import compact, removing, withdraw_turns
from citewell.errors import GeneratorUnavailable, InvalidInput, NotFound
from citewell.models.answers import Answer, AnswerRecord, Outcome
from citewell.models.conversations import Conversation, Feedback, Turn
from citewell.models.identity import Identity
from citewell.models.values import utcnow
from citewell.ports import ConversationRecords, Generator
from citewell.records import update_conversation
from citewell.services import Services
from citewell.settings import settings

HISTORY = 20  # recent questions a caller is shown
THREAD_PAGE = 20  # turns a view of a conversation shows unless asked for another number
THREAD_PAGE_MAX = 100  # a page's answers are read in one batch (DynamoDB's BatchGetItem takes 100 keys)
CONTEXT_TURNS = 3  # earlier questions a model is given to rewrite a follow-up
FOLLOW_UP_TURNS = 12  # latest turns a follow-up reads to find those (withdrawn ones skipped): no more at turn 5,000
REWRITE_UNAVAILABLE = "follow-up rewritten by rules"  # in ``degraded`` when the model could not rewrite it
TURN_NOT_KEPT = "turn not kept"  # in ``degraded`` when the request's deadline left no time to write the turn


class ShownTurn(BaseModel):
    """A turn as its owner sees it: without its words when its answer is withdrawn or no longer theirs to read."""

    seq: int
    answer_id: str
    asked: str
    question: str
    at: datetime
    withdrawn: bool
    answer: str | None = None
    outcome: str | None = None
    feedback: Feedback | None = None


class Thread(BaseModel):
    """A page of a conversation: its latest turns, or those before a cursor, oldest first."""

    conversation_id: str
    created_at: datetime
    updated_at: datetime
    turn_count: int = 0  # every turn the conversation has, shown on this page or not
    turns: list[ShownTurn] = Field(default_factory=list)
    next: str | None = None  # the cursor of the page of earlier turns; None: this page reaches turn 1


class _TurnsCursor(BaseModel):
    """Where the next page of a view starts: the turns of this conversation before seq ``before``."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["turns"] = "turns"
    conversation: str = Field(min_length=1, max_length=128)
    before: int = Field(ge=2, le=10**10)


class HistoryItem(BaseModel):
    conversation_id: str
    seq: int
    answer_id: str
    question: str
    at: datetime


def expired(conversation: Conversation, now: datetime | None = None) -> bool:
    """Past ``CITEWELL_CONVERSATION_DAYS`` since its last question."""
    return conversation.expired(settings().conversation_days, now)


def owned(conversations: ConversationRecords, identity: Identity, conversation_id: str,
          last: int | None = None, before: int | None = None) -> Conversation:
    """The caller's live conversation of this id, with its latest ``last`` turns (None: all) before
    seq ``before`` (None: to the newest); NotFound for anyone else's, an expired one, or none."""
    found = (conversations.get_conversation(identity.tenant, conversation_id, last=last, before=before)
             if not identity.is_empty else None)
    if found is None or not found.owned_by(identity) or expired(found):
        raise NotFound(f"no conversation {conversation_id!r} for this caller")
    return found


def _visible(services: Services, identity: Identity, answer_id: str) -> AnswerRecord | None:
    from citewell.answers.service import recorded_citations

    try:
        return recorded_citations(services, identity, answer_id)
    except NotFound:
        return None


def _earlier(services: Services, identity: Identity, conversation: Conversation) -> list[str]:
    """The standalone questions of the latest turns whose answers the caller may still read."""
    found: list[str] = []
    for turn in reversed(conversation.turns):
        if len(found) == CONTEXT_TURNS:
            break
        if not turn.withdrawn and turn.question and _visible(services, identity, turn.answer_id) is not None:
            found.insert(0, turn.question)
    return found


def rewrite(generator: Generator, earlier: Sequence[str], asked: str, degraded: list[str]) -> str:
    """``asked`` made standalone: by the model when the generator has one, else (or when it fails) by rules."""
    if not earlier:
        return asked
    by_model = getattr(generator, "rewrite", None)
    if by_model is not None:
        try:
            return str(by_model(list(earlier), asked)) or asked
        except GeneratorUnavailable as error:
            degraded.append(f"{REWRITE_UNAVAILABLE}: {generator.name} ({error.message})")
    return standalone(earlier[-1], asked)


def _chosen(services: Services, identity: Identity, conversation: Conversation, asked: str) -> str:
    """A reply to a clarifying question that is only one of the conditions it listed ("Germany")
    is the follow-up "for Germany"; anything else is as asked."""
    latest = next((t for t in reversed(conversation.turns) if not t.withdrawn), None)
    record = _visible(services, identity, latest.answer_id) if latest is not None else None
    if record is None or record.outcome is not Outcome.CLARIFY:
        return asked
    bare = " ".join(asked.strip(" ?.!").split()).lower()
    named = next((c.condition for c in record.conditions if c.condition and c.condition.lower() == bare), None)
    return f"for {named}" if named else asked


_LEAD = re.compile(r"^(?:and|also|but|so)\b[\s,]*", re.I)


def rewritten(question: str, asked: str) -> bool:
    """Whether the standalone question says more than the words asked: "and when do carried days
    expire?" made "when do carried days expire?" is the same question, not shown as a rewrite."""
    def bare(text: str) -> str:
        return " ".join(_LEAD.sub("", text.strip()).split()).strip(" ?.!").lower()

    return bare(question) != bare(asked)


def ask_in_conversation(
    services: Services, identity: Identity, asked: str, conversation_id: str | None,
    answer: Callable[[str], Answer], generator: Generator,
) -> Answer:
    """Rewrite a follow-up, answer it with ``answer`` (the standalone question in, an answer out)
    and keep the turn. A new conversation is started when none is named."""
    conversation = (owned(services.conversations, identity, conversation_id, FOLLOW_UP_TURNS) if conversation_id is not None
                    else Conversation(conversation_id=uuid.uuid4().hex, tenant=identity.tenant, subject=identity.subject,
                                      roles=sorted(identity.roles)))
    degraded: list[str] = []
    question = rewrite(generator, _earlier(services, identity, conversation), _chosen(services, identity, conversation, asked),
                       degraded)
    result = answer(question)
    result.degraded = [*result.degraded, *degraded]
    result.conversation_id = conversation.conversation_id
    result.question = question if rewritten(question, asked) else None
    if identity.is_empty:
        return result
    if any(note.startswith(NOT_KEPT) for note in result.degraded):  # no record to rest a turn on: none is kept
        result.conversation_id = conversation_id  # a new conversation was never written
        return result
    turn = Turn(seq=0, answer_id=result.answer_id, asked=asked, question=question)

    def joined(current: Conversation) -> Conversation:  # the head and the one turn added: a write as small at any length
        at, seq = utcnow(), current.turn_count + 1
        return current.model_copy(update={
            "turns": [turn.model_copy(update={"seq": seq, "at": at})], "turn_count": seq, "updated_at": at})

    try:
        update_conversation(services.conversations, conversation, joined)
    except TimeoutError:  # the answer is recorded; the turn, unless its write landed, is not
        result.degraded = [*result.degraded, f"{TURN_NOT_KEPT}: the request had no time left to write it"]
        result.conversation_id = conversation_id
        return result
    # A delete that withdrew the answer before the turn was kept found no turn to withdraw: the
    # turn, kept, reads its answer back (an answer never kept, as after sources kept changing, too).
    record = services.answers.get_answer(identity.tenant, result.answer_id)
    if record is None or record.source_deleted:
        with removing(services):  # as every removal of words: seen through by a compaction
            withdraw_turns(services.conversations, identity.tenant, [result.answer_id])
        compact(services)
    return result


def thread(services: Services, identity: Identity, conversation_id: str, cursor: str | None = None,
           limit: int = THREAD_PAGE) -> Thread:
    """One page of the caller's conversation: its latest ``limit`` turns, or, with the ``next``
    cursor a page returned, the ``limit`` before those; ``next`` pages back until turn 1. A page
    costs the same reads at turn 5,000 as at turn 5: the head, the page's turns (one ranged read
    back from the cursor) and, in one batch each, their answers and the documents those rest on.

    A cursor names only a turn of one conversation, so it reaches nothing the caller could not
    read without it: owner, tenant and expiry are checked from the caller's identity on every
    page (another's conversation, a deleted or expired one: NotFound), and a cursor that is
    garbled, another conversation's or past its turns is InvalidInput. A page of turns is
    stable: a question asked meanwhile adds a later turn, never shifts an earlier page, and a
    turn withdrawn meanwhile is shown without its words."""
    from citewell.answers.service import readable_answers

    if not 1 <= limit <= THREAD_PAGE_MAX:
        raise InvalidInput(f"limit must be a whole number from 1 to {THREAD_PAGE_MAX}")
    before = None
    if cursor is not None:
        found = decode(cursor, _TurnsCursor)
        if found.conversation != conversation_id:
            raise InvalidInput("this cursor pages another conversation: pass the `next` of this conversation's previous page")
        before = found.before
    conversation = owned(services.conversations, identity, conversation_id, last=limit, before=before)
    if before is not None and before > conversation.turn_count + 1:
        raise InvalidInput("the cursor points past this conversation's turns: pass the `next` of its previous page as it came")
    records = readable_answers(services, identity, {t.answer_id for t in conversation.turns if not t.withdrawn})
    turns = []
    for turn in conversation.turns:
        record = None if turn.withdrawn else records.get(turn.answer_id)
        if record is None or record.source_deleted:
            turns.append(ShownTurn(seq=turn.seq, answer_id=turn.answer_id, asked="", question="", at=turn.at, withdrawn=True))
        else:
            question = turn.question if rewritten(turn.question, turn.asked) else turn.asked
            turns.append(ShownTurn(seq=turn.seq, answer_id=turn.answer_id, asked=turn.asked, question=question,
                                   at=turn.at, withdrawn=False, answer=record.answer, outcome=record.outcome.value,
                                   feedback=turn.feedback))
    earlier = len(turns) == limit and turns[0].seq > 1
    return Thread(conversation_id=conversation.conversation_id, created_at=conversation.created_at,
                  updated_at=conversation.updated_at, turn_count=conversation.turn_count, turns=turns,
                  next=encode(_TurnsCursor(conversation=conversation.conversation_id, before=turns[0].seq)) if earlier else None)


def history(services: Services, identity: Identity, limit: int = HISTORY) -> list[HistoryItem]:
    """The caller's latest questions, newest first, across their live conversations."""
    if identity.is_empty:
        return []
    items = [
        HistoryItem(conversation_id=c.conversation_id, seq=t.seq, answer_id=t.answer_id, question=t.asked, at=t.at)
        for c in services.conversations.conversations_of(identity.tenant, identity.subject, last=limit)
        if c.owned_by(identity) and not expired(c)
        for t in c.turns if not t.withdrawn and t.asked
    ]
    items.sort(key=lambda i: i.at, reverse=True)
    return [i for i in items if _visible(services, identity, i.answer_id) is not None][:limit]


def give_feedback(services: Services, identity: Identity, answer_id: str, helpful: bool, comment: str | None) -> Turn:
    """Feedback on an answer the caller was given in one of their conversations (the latest turn
    that got it); NotFound for an answer they were not given or may no longer read."""
    missing = NotFound(f"no answer {answer_id!r} for this caller")
    if identity.is_empty or _visible(services, identity, answer_id) is None:
        raise missing
    mine = [c for c in services.conversations.conversations_answering(identity.tenant, [answer_id])
            if c.owned_by(identity) and not expired(c)]
    mine = [c for c in mine if any(t.answer_id == answer_id and not t.withdrawn for t in c.turns)]
    if not mine:
        raise missing
    conversation = max(mine, key=lambda c: c.updated_at)
    feedback = Feedback(helpful=helpful, comment=comment.strip() or None if comment else None)
    given: list[Turn] = []

    def noted(current: Conversation) -> Conversation | None:
        turn = max((t for t in current.turns if t.answer_id == answer_id and not t.withdrawn), key=lambda t: t.seq, default=None)
        if turn is None:
            return None
        given[:] = [turn.model_copy(update={"feedback": feedback})]
        return current.model_copy(update={"turns": given})

    def reread() -> Conversation | None:
        return next((c for c in services.conversations.conversations_answering(identity.tenant, [answer_id])
                     if c.conversation_id == conversation.conversation_id), None)

    if update_conversation(services.conversations, conversation, noted, reread) is None or not given:
        raise missing
    return given[0]


def unhelpful(services: Services, since: datetime | None = None,
              tenant: str | None = None) -> list[tuple[Conversation, Turn, AnswerRecord]]:
    """For the operator: every unhelpful feedback still held (of ``tenant`` alone, when named),
    with its answer record, oldest first."""
    found = []
    for conversation in services.conversations.conversation_inventory():
        if tenant is not None and conversation.tenant != tenant:
            continue
        for turn in conversation.turns:
            if turn.withdrawn or turn.feedback is None or turn.feedback.helpful:
                continue
            if since is not None and turn.feedback.at < since:
                continue
            record = services.answers.get_answer(conversation.tenant, turn.answer_id)
            if record is not None and not record.source_deleted:
                found.append((conversation, turn, record))
    found.sort(key=lambda f: f[1].feedback.at if f[1].feedback else f[1].at)
    return found
