"""Conversations and feedback on real stores (SQLite, and DynamoDB on moto): a follow-up made
standalone and answered, a thread only its owner sees, feedback only on what the caller was
given, and a deleted or narrowed source taking the turn's words and feedback with it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from citewell.answers.followups import standalone
from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator
from citewell.answers.service import ask
from citewell.audit import audit
from citewell.conversations import ask_in_conversation, give_feedback, history, thread, unhelpful
from citewell.deletion import delete_document, expire_conversations
from citewell.errors import NotFound
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.answers import Outcome
from citewell.models.identity import Identity
from citewell.models.values import utcnow
from tests import fake_model_service

ANNA = Identity(tenant="northpier", roles=frozenset({"staff"}), subject="anna")
BEN = Identity(tenant="northpier", roles=frozenset({"staff"}), subject="ben")
ANNA_AS_HR = Identity(tenant="northpier", roles=frozenset({"hr"}), subject="anna")
OTHER_TENANT = Identity(tenant="southgate", roles=frozenset({"staff"}), subject="anna")

LEAVE = (b"# Annual leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n\n"
         b"Part-time staff receive annual leave pro rata to their contracted hours.\n")
MEALS = (b"# Meal allowance\n\nThe meal allowance in Manchester is 18 pounds per day.\n\n"
         b"The meal allowance in Leeds is 16 pounds per day.\n")


def add(services, data: bytes, doc_id: str, roles=("staff",)) -> None:
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset(roles),
                                                 data=data, filename=doc_id)])
    assert outcome.status in ("published", "unchanged"), outcome


def turn(services, identity, asked, conversation_id=None, generator=None):
    from citewell.answers.extractive.generator import ExtractiveGenerator

    generator = generator or ExtractiveGenerator(services.embedder, services.embeddings)
    return ask_in_conversation(services, identity, asked, conversation_id,
                               lambda question: ask(services, identity, question, generator), generator)


@pytest.mark.parametrize(("previous", "asked", "expected"), [
    ("How many days of annual leave do full-time staff get?", "and for part-time staff?",
     "How many days of annual leave do part-time staff get?"),
    ("How much is the meal allowance in Manchester?", "what about Leeds?", "How much is the meal allowance in Leeds?"),
    ("How much is the meal allowance?", "What about Leeds?", "How much is the meal allowance in Leeds?"),
    ("How long do I have to submit an expense claim?", "and who approves it?", "who approves the expense claim?"),
    ("What is the mileage rate for cars?", "what about bicycles?", "What is the mileage rate for bicycles?"),
    ("How many days of annual leave do staff get?", "Where do I report phishing?", "Where do I report phishing?"),
    ("How many days of annual leave?", "what about the hotel allowance?", "what about the hotel allowance?"),
    ("How many days of annual leave?", "what about contractors?", "How many days of annual leave for contractors?"),
    ("How many days of annual leave do staff get?", "and how long is the probation period?", "how long is the probation period?"),
])
def test_rules_carry_the_subject_and_replace_the_condition(previous, asked, expected):
    assert standalone(previous, asked) == expected


def test_a_follow_up_is_answered_as_its_standalone_question_in_the_same_conversation(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
    assert first.outcome is Outcome.ANSWERED and "18 pounds" in first.answer and first.question is None
    follow = turn(services, ANNA, "what about Leeds?", first.conversation_id)
    assert follow.conversation_id == first.conversation_id
    assert follow.question == "How much is the meal allowance in Leeds?"
    assert follow.outcome is Outcome.ANSWERED and "16 pounds" in follow.answer
    shown = thread(services, ANNA, first.conversation_id)
    assert [(t.asked, t.question) for t in shown.turns] == [
        ("How much is the meal allowance in Manchester?", "How much is the meal allowance in Manchester?"),
        ("what about Leeds?", "How much is the meal allowance in Leeds?")]
    assert [h.question for h in history(services, ANNA)] == ["what about Leeds?", "How much is the meal allowance in Manchester?"]
    assert history(services, BEN) == []
    same = turn(services, ANNA, "and how much is the meal allowance in Leeds?", first.conversation_id)
    assert same.question is None and "16 pounds" in same.answer  # only "and" was taken off: no rewrite to show
    assert [(t.asked, t.question) for t in thread(services, ANNA, first.conversation_id).turns][-1] == (
        "and how much is the meal allowance in Leeds?", "and how much is the meal allowance in Leeds?")


@pytest.mark.parametrize("intruder", [BEN, ANNA_AS_HR, OTHER_TENANT, Identity(tenant="northpier", roles=frozenset({"staff"}))])
def test_another_identity_cannot_read_continue_or_give_feedback_on_a_conversation(services, intruder):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
    with pytest.raises(NotFound):
        thread(services, intruder, first.conversation_id)
    with pytest.raises(NotFound):
        turn(services, intruder, "what about Leeds?", first.conversation_id)
    with pytest.raises(NotFound):
        give_feedback(services, intruder, first.answer_id, False, "wrong")
    assert thread(services, ANNA, first.conversation_id).turns[0].feedback is None


def test_feedback_is_kept_on_the_askers_turn_and_listed_for_the_operator(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
    given = give_feedback(services, ANNA, first.answer_id, False, "  I meant the evening rate  ")
    assert given.feedback.helpful is False and given.feedback.comment == "I meant the evening rate"
    assert thread(services, ANNA, first.conversation_id).turns[0].feedback.comment == "I meant the evening rate"
    (conversation, kept, record), = unhelpful(services)
    assert (conversation.subject, kept.question, record.answer_id) == ("anna", first.question or kept.asked, first.answer_id)
    assert unhelpful(services, since=utcnow() + timedelta(minutes=1)) == []
    give_feedback(services, ANNA, first.answer_id, True, None)
    assert unhelpful(services) == []
    with pytest.raises(NotFound):
        give_feedback(services, ANNA, "0" * 32, True, None)


def test_deleting_a_cited_document_withdraws_the_turns_words_and_feedback(services):
    add(services, LEAVE, "leave.md")
    kept = turn(services, ANNA, "How many days of annual leave do full-time staff get?")
    add(services, MEALS, "meals.md")  # after the first answer: it was not among that answer's evidence
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?", kept.conversation_id)
    give_feedback(services, ANNA, first.answer_id, False, "Manchester evening rate")
    report = delete_document(services, "northpier", "meals.md")
    assert report.removed["conversations"] == 1
    shown = thread(services, ANNA, first.conversation_id).turns
    assert shown[1].withdrawn and shown[1].asked == shown[1].question == "" and shown[1].feedback is None
    assert not shown[0].withdrawn and "27 days" in shown[0].answer and kept.answer_id == shown[0].answer_id
    stored = services.conversations.get_conversation("northpier", first.conversation_id)
    assert "Manchester" not in stored.model_dump_json()
    assert unhelpful(services) == []
    assert [h.question for h in history(services, ANNA)] == ["How many days of annual leave do full-time staff get?"]
    # a follow-up now cannot carry the withdrawn question's words
    follow = turn(services, ANNA, "what about Leeds?", first.conversation_id)
    assert "meal" not in (follow.question or "")
    assert [f.kind for f in audit(services).findings if f.kind in ("withdrawn_turn", "expired_conversations")] == []


def test_a_delete_landing_between_the_answer_and_its_turn_takes_the_turns_words(services):
    """The delete withdraws the answer before the turn is kept: the turn, once kept, sees that and goes too."""
    from citewell.answers.extractive.generator import ExtractiveGenerator

    add(services, MEALS, "meals.md")
    generator = ExtractiveGenerator(services.embedder, services.embeddings)

    def answered_then_deleted(question):
        answer = ask(services, ANNA, question, generator)
        delete_document(services, "northpier", "meals.md")  # another process, between the record and the turn
        return answer

    first = ask_in_conversation(services, ANNA, "How much is the meal allowance in Manchester?", None,
                                answered_then_deleted, generator)
    assert services.answers.get_answer("northpier", first.answer_id).source_deleted
    stored = services.conversations.get_conversation("northpier", first.conversation_id)
    assert [t.withdrawn for t in stored.turns] == [True] and "Manchester" not in stored.model_dump_json()
    assert [f.kind for f in audit(services).findings if f.kind == "withdrawn_turn"] == []


class Killed(BaseException):
    """kill -9 of the deleting process at a store call."""


def test_a_delete_killed_after_withdrawing_the_answer_takes_the_turns_words_on_its_rerun(services, monkeypatch):
    """The withdrawn answer no longer names the document, so the turns go before it does: a rerun still finds them."""
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
    give_feedback(services, ANNA, first.answer_id, False, "Manchester evening rate")

    def killed(*args, **kwargs):  # the answer records are withdrawn; their cache entries and turns come next
        raise Killed

    monkeypatch.setattr(services.answers, "drop_cached_answers", killed)
    with pytest.raises(Killed):
        delete_document(services, "northpier", "meals.md")
    monkeypatch.undo()
    assert services.answers.get_answer("northpier", first.answer_id).source_deleted
    delete_document(services, "northpier", "meals.md")  # the rerun (a restart, the next delete or the audit)
    stored = services.conversations.get_conversation("northpier", first.conversation_id)
    assert [t.withdrawn for t in stored.turns] == [True] and "Manchester" not in stored.model_dump_json()
    assert [f.kind for f in audit(services).findings if f.kind == "withdrawn_turn"] == []


def test_a_narrowed_document_hides_the_turn_from_its_owner(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
    add(services, MEALS, "meals.md", roles=("hr",))
    shown = thread(services, ANNA, first.conversation_id).turns
    assert shown[0].withdrawn and shown[0].asked == "" and shown[0].answer is None
    assert history(services, ANNA) == []
    with pytest.raises(NotFound):
        give_feedback(services, ANNA, first.answer_id, False, None)


def test_the_audit_withdraws_a_turn_a_withdrawal_missed(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
    record = services.answers.get_answer("northpier", first.answer_id)
    services.answers.put_answer(record.model_copy(update={"answer": None, "question": "", "source_deleted": True}))
    found = [f for f in audit(services).findings if f.kind == "withdrawn_turn"]
    assert len(found) == 1 and not found[0].repaired
    assert [f.repaired for f in audit(services, repair=True).findings if f.kind == "withdrawn_turn"] == [True]
    assert "Manchester" not in services.conversations.get_conversation("northpier", first.conversation_id).model_dump_json()


def test_conversations_expire_after_their_days(services, monkeypatch):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
    later = utcnow() + timedelta(days=31)
    assert expire_conversations(services, now=utcnow()) == 0
    monkeypatch.setenv("CITEWELL_CONVERSATION_DAYS", "0.00001")  # under a second
    import time

    time.sleep(1)
    with pytest.raises(NotFound):
        thread(services, ANNA, first.conversation_id)
    assert [f.kind for f in audit(services).findings if f.kind == "expired_conversations"] == ["expired_conversations"]
    assert expire_conversations(services, now=later) == 1
    assert services.conversations.get_conversation("northpier", first.conversation_id) is None


def test_a_model_generator_rewrites_the_follow_up_and_rules_stand_in_when_it_fails(services):
    add(services, MEALS, "meals.md")
    model, server = fake_model_service.start()
    try:
        generator = OpenAICompatibleGenerator(base_url=model.url, model="m", retries=0)
        first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
        model.replies.append(model.chat("What is the daily meal allowance in Leeds?"))
        model.replies.append(model.chat('"The meal allowance in Leeds is 16 pounds per day." [S1]'))
        follow = turn(services, ANNA, "what about Leeds?", first.conversation_id, generator)
        assert follow.question == "What is the daily meal allowance in Leeds?"
        sent = model.requests[0]["json"]["messages"]
        assert "rewrite" in sent[0]["content"] and "Manchester" in sent[1]["content"] and "what about Leeds?" in sent[1]["content"]
        model.replies.append(fake_model_service.Reply(status=400, body={"error": "bad"}))
        model.respond = lambda body: model.chat('"The meal allowance in Leeds is 16 pounds per day." [S1]')
        again = turn(services, ANNA, "and in Leeds?", first.conversation_id, generator)
        assert again.question == "What is the daily meal allowance in Leeds?"
        assert any(d.startswith("follow-up rewritten by rules") for d in again.degraded)
    finally:
        server.shutdown()


def test_an_api_caller_never_reaches_the_cli_operators_conversations(services):
    from citewell.api.callers import claims_identity
    from citewell.api.settings import ApiSettings

    add(services, MEALS, "meals.md")
    operator = Identity(tenant="northpier", roles=frozenset({"staff"}))  # the CLI's: no subject
    first = turn(services, operator, "How much is the meal allowance in Manchester?")
    for claims in ({"custom:tenant": "northpier", "cognito:groups": ["staff"]},
                   {"custom:tenant": "northpier", "cognito:groups": ["staff"], "sub": ""}):
        caller = claims_identity(claims, ApiSettings())
        with pytest.raises(NotFound):
            thread(services, caller, first.conversation_id)
        assert history(services, caller) == []


def test_tokens_without_a_subject_never_share_a_conversation(services):
    from citewell.api.callers import claims_identity
    from citewell.api.settings import ApiSettings

    add(services, MEALS, "meals.md")
    unnamed = {"custom:tenant": "northpier", "cognito:groups": ["staff"]}
    asker, other = claims_identity(unnamed, ApiSettings()), claims_identity(unnamed, ApiSettings())
    first = turn(services, asker, "How much is the meal allowance in Manchester?")
    with pytest.raises(NotFound):
        thread(services, other, first.conversation_id)
    assert history(services, other) == []


def test_history_and_the_expiry_sweep_read_only_what_they_ask_for(services):
    """On DynamoDB, a subject's history reads that subject's entries and the sweep the idle ones'
    (counted by what each query scanned), not the tenant's whole partition; a follow-up moves the
    conversation's entries, leaving no stale one behind."""
    add(services, MEALS, "meals.md")
    anna = [turn(services, ANNA, "How much is the meal allowance in Manchester?") for _ in range(2)]
    for _ in range(3):
        turn(services, BEN, "How much is the meal allowance in Leeds?")
    turn(services, ANNA, "what about Leeds?", anna[0].conversation_id)  # anna's first is now her latest
    scanned: list[int] = []
    table = getattr(services.conversations, "table", None)
    if table is not None:
        table.meta.client.meta.events.register("after-call.dynamodb.Query",
                                               lambda parsed, **_: scanned.append(parsed.get("ScannedCount", 0)))
    latest = services.conversations.conversations_of("northpier", "anna", last=0)  # the heads alone
    assert [c.conversation_id for c in latest] == [anna[0].conversation_id, anna[1].conversation_id]
    assert [c.conversation_id for c in services.conversations.conversations_of("northpier", "anna", limit=1, last=0)] == [
        anna[0].conversation_id]
    assert services.conversations.conversations_idle_since(utcnow() - timedelta(days=1)) == []
    assert len(services.conversations.conversations_idle_since(utcnow() + timedelta(seconds=1))) == 5
    if table is not None:  # anna's 2 entries, then 1 of them; the tenant registry, then no idle entry or the 5
        assert scanned == [2, 1, 1, 0, 1, 5], scanned
    assert expire_conversations(services, now=utcnow() + timedelta(days=31)) == 5
    assert services.conversations.conversations_of("northpier", "anna") == []
    if table is not None:  # nothing of a conversation is left: its entries went with it
        left = table.query(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": "T#northpier"})["Items"]
        assert not [i["sk"] for i in left if i["sk"].startswith(("V#", "VS#", "VU#", "VA#", "VT#"))]


def test_the_audit_lists_again_a_conversation_stored_without_its_lookup_keys(services):
    add(services, MEALS, "meals.md")
    first = turn(services, ANNA, "How much is the meal allowance in Manchester?")
    table = getattr(services.conversations, "table", None)
    if table is None:
        pytest.skip("SQLite finds conversations by its own indexes")
    keys = [i["sk"] for i in table.query(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": "T#northpier"})["Items"]
            if i["sk"].startswith(("VS#", "VU#"))]
    for sk in keys:  # as a conversation written before the keys were kept
        table.delete_item(Key={"pk": "T#northpier", "sk": sk})
    assert services.conversations.conversations_of("northpier", "anna") == []
    (found,) = [f for f in audit(services, repair=True).findings if f.kind == "unlisted_conversation"]
    assert found.repaired and first.conversation_id in found.detail
    assert [c.conversation_id for c in services.conversations.conversations_of("northpier", "anna")] == [first.conversation_id]
    assert not [f for f in audit(services).findings if f.kind == "unlisted_conversation"]
