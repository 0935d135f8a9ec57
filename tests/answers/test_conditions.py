"""Answers that depend on a condition the question does not name: each condition's answer, cited,
or (beyond six conditions) the question asked back; the one answer when the question, or a
follow-up, names the condition; a model's conditions verified one by one."""

from __future__ import annotations

import re

import pytest

from citewell.answers.conditions import MAX_LISTED
from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator
from citewell.answers.prompt import draft_from_reply
from citewell.answers.service import ask, recorded_citations
from citewell.answers.verify import Rejection, verify
from citewell.conversations import ask_in_conversation
from citewell.deletion import delete_document
from citewell.evaluation.answers import AnswerCase, judge
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.answers import Answer, ConditionAnswer, Draft, Outcome
from citewell.models.evidence import EvidenceItem, EvidenceSpan
from citewell.models.identity import Identity
from tests import fake_model_service
from tests.conftest import make_services

STAFF = Identity(tenant="harbour", roles=frozenset({"staff"}), subject="u-1")

DEPOTS = b"""depot,field allowance per shift,night shift supplement
Harrowmere,14 pounds,38 pounds
Doveridge,11 pounds,35 pounds
Calder Street,9 pounds,30 pounds
Marrow Hills,16 pounds,42 pounds
"""
TRAVEL = b"""# Travel policy

## Hotels

Hotel stays are reimbursed up to 95 pounds per night, or 150 pounds per night in London.
Alcohol and minibar items are never reimbursed.

## Meals

The meal allowance is 9 pounds for a working trip of more than 5 hours and 22 pounds for a trip
of more than 10 hours.

## Annual leave

Full-time employees receive 26 days of paid annual leave per leave year. After five years of
continuous service the allowance rises to 29 days.

## Notice periods

Either side gives notice in writing.

- Permanent contract: 2 months.
- Fixed-term contract: 1 month.
- Internship: 2 weeks.
"""
ABROAD = b"""country,coworking allowance per day
France,25 euros
Germany,28 euros
Spain,20 euros
Italy,22 euros
Poland,15 euros
Czechia,14 euros
Austria,26 euros
Belgium,24 euros
"""


@pytest.fixture(scope="module")
def services(tmp_path_factory, embedder):
    services = make_services(tmp_path_factory.mktemp("conditions"), embedder)
    for name, data in (("depots.csv", DEPOTS), ("travel.md", TRAVEL), ("abroad.csv", ABROAD)):
        (outcome,) = ingest(services, [IngestRequest(document_id=name, tenant="harbour", allowed_roles=frozenset({"staff"}),
                                                     data=data, filename=name)])
        assert outcome.status == "published", outcome
    return services


def conditions(answer: Answer) -> list[tuple[str, str | None]]:
    return [(c.condition, c.answer) for c in answer.conditions]


def test_a_table_row_per_condition_is_answered_per_condition_each_cited(services):
    answer = ask(services, STAFF, "What is the field allowance per shift?")
    assert answer.outcome is Outcome.ANSWERED and not answer.refused
    assert conditions(answer) == [("Harrowmere", "14 pounds"), ("Doveridge", "11 pounds"), ("Calder Street", "9 pounds"),
                                  ("Marrow Hills", "16 pounds")]
    assert all(c.refs == ["S1"] for c in answer.conditions)
    assert answer.answer.splitlines()[0] == "It depends on the depot:"
    assert "- Doveridge: 11 pounds [S1]" in answer.answer.splitlines()
    (citation,) = answer.citations
    assert citation.document_id == "depots.csv" and "Marrow Hills" in citation.quote and "Harrowmere" in citation.quote


def test_a_question_that_names_the_condition_gets_one_answer(services):
    answer = ask(services, STAFF, "What is the night shift supplement at Marrow Hills?")
    assert answer.outcome is Outcome.ANSWERED and answer.conditions == []
    assert answer.answer.startswith("42 pounds") and "38 pounds" not in answer.answer


def test_values_in_one_sentence_are_given_per_condition_and_the_named_one_alone(services):
    # "allowance", not "limit": the policy says "reimbursed up to", and "the hotel limit" stands
    # just under the answer threshold (0.70), so it is quoted as not confirmed.
    answer = ask(services, STAFF, "What is the hotel allowance per night?")
    assert conditions(answer) == [("", "95 pounds per night"), ("in London", "150 pounds per night")]
    assert answer.answer.splitlines()[1:] == ["- in London: 150 pounds per night [S1]", "- otherwise: 95 pounds per night [S1]"]
    london = ask(services, STAFF, "hotel allowance per night in London")
    assert london.conditions == [] and london.answer.startswith("150 pounds per night.")
    elsewhere = ask(services, STAFF, "hotel allowance per night outside London")
    assert elsewhere.conditions == [] and elsewhere.answer.startswith("95 pounds per night.")
    meals = ask(services, STAFF, "What is the meal allowance?")
    assert conditions(meals) == [("for a working trip of more than 5 hours", "9 pounds"),
                                 ("for a trip of more than 10 hours", "22 pounds")]


def test_a_sentence_that_opens_with_its_condition_is_a_condition_of_the_one_before(services):
    answer = ask(services, STAFF, "How many days of annual leave do full-time employees get?")
    assert conditions(answer) == [("", "26 days"), ("After five years of continuous service", "29 days")]
    later = ask(services, STAFF, "How many days of annual leave after five years of service?")
    assert later.conditions == [] and later.answer.startswith("29 days.")


def test_list_items_per_contract_type_after_their_introduction(services):
    answer = ask(services, STAFF, "How long is the notice period?")
    assert conditions(answer) == [("Permanent contract", "2 months"), ("Fixed-term contract", "1 month"),
                                  ("Internship", "2 weeks")]


def test_a_condition_the_evidence_lacks_is_not_answered_per_condition(services):
    answer = ask(services, STAFF, "How many days of annual leave do part-time employees get?")
    assert answer.conditions == [] and answer.outcome is not Outcome.ANSWERED


def test_more_conditions_than_an_answer_lists_are_asked_back_then_a_follow_up_names_one(services):
    def answering(question: str) -> Answer:
        return ask(services, STAFF, question)

    from citewell.answers.extractive.generator import ExtractiveGenerator

    extractive = ExtractiveGenerator(services.embedder, services.embeddings)
    first = ask_in_conversation(services, STAFF, "What is the coworking allowance per day?", None, answering, extractive)
    assert first.outcome is Outcome.CLARIFY and first.refused and first.closest == []
    assert len(first.conditions) == 8 > MAX_LISTED and all(c.answer is None and c.refs == ["S1"] for c in first.conditions)
    assert first.answer.startswith("Which country do you mean?") and "Germany" in first.answer and "28 euros" not in first.answer
    assert recorded_citations(services, STAFF, first.answer_id).outcome is Outcome.CLARIFY  # recorded like any reply
    then = ask_in_conversation(services, STAFF, "and in Germany?", first.conversation_id, answering, extractive)
    assert then.question == "What is the coworking allowance per day in Germany?"
    assert then.outcome is Outcome.ANSWERED and then.conditions == [] and then.answer.startswith("28 euros")
    # A bare reply naming one of the listed conditions is that follow-up; any other stays as asked.
    again = ask_in_conversation(services, STAFF, "What is the coworking allowance per day?", None, answering, extractive)
    spain = ask_in_conversation(services, STAFF, "Spain", again.conversation_id, answering, extractive)
    assert spain.question == "What is the coworking allowance per day for Spain?" and spain.answer.startswith("20 euros")
    other = ask_in_conversation(services, STAFF, "Doveridge", spain.conversation_id, answering, extractive)
    assert other.question is None  # the last reply answered: nothing is asked back


def test_deleting_the_source_withdraws_the_conditions_with_the_answer(tmp_path, embedder):
    services = make_services(tmp_path, embedder)
    ingest(services, [IngestRequest(document_id="depots.csv", tenant="harbour", allowed_roles=frozenset({"staff"}),
                                    data=DEPOTS, filename="depots.csv")])
    answer = ask(services, STAFF, "What is the field allowance per shift?")
    assert answer.conditions
    delete_document(services, "harbour", "depots.csv")
    record = services.answers.get_answer("harbour", answer.answer_id)
    assert record.source_deleted and record.answer is None and record.conditions == []
    assert "Doveridge" not in record.model_dump_json()


SOURCE = "Hotel stays are reimbursed up to 95 pounds per night, or 150 pounds per night in London."
EVIDENCE = [
    EvidenceItem(ref="S1", document_id="other.md", revision="r0", title="Other", section_path=[], text="Parking is free.",
                 spans=[EvidenceSpan(chunk_id="other.md#0#0", section_path=[], start=0, end=16)], rank=2),
    EvidenceItem(ref="S2", document_id="travel.md", revision="r1", title="Travel", section_path=["Hotels"], text=SOURCE,
                 spans=[EvidenceSpan(chunk_id="travel.md#1#0", section_path=["Hotels"], start=0, end=len(SOURCE))], rank=1),
]


def test_a_model_reply_per_condition_is_verified_condition_by_condition():
    reply = 'It depends:\n- in London: "150 pounds per night in London" [S2]\n- otherwise: "up to 95 pounds per night" [S2]'
    draft = draft_from_reply(reply)
    assert [(c.condition, c.answer) for c in draft.conditions] == [
        ("in London", "150 pounds per night in London"), ("", "up to 95 pounds per night")]
    verdict = verify(draft, EVIDENCE, "What is the hotel limit?")
    assert verdict.rejected is None and verdict.outcome is Outcome.ANSWERED
    assert [c.refs for c in verdict.conditions] == [["S1"], ["S1"]]  # renumbered as the reader meets them
    assert verdict.answer == "It depends:\n- in London: 150 pounds per night in London [S1]\n- otherwise: up to 95 pounds per night [S1]"
    # A condition the source does not name, or an answer it does not hold, rejects the draft whole.
    for bad in ('- in Leeds: "150 pounds per night in London" [S2]\n- otherwise: "up to 95 pounds per night" [S2]',
                '- in London: "150 pounds per night in London" [S2]\n- otherwise: "up to 90 pounds per night" [S2]'):
        rejected = verify(draft_from_reply(bad), EVIDENCE, "What is the hotel limit?")
        assert rejected.rejected in (Rejection.CONDITION_NOT_IN_SOURCE, Rejection.QUOTE_NOT_IN_SOURCE), bad
    lying = Draft(text="It depends [S2].", refused=False, quotes={"S2": SOURCE},
                  conditions=[ConditionAnswer(condition="in Leeds", answer="150 pounds", refs=["S2"])])
    assert verify(lying, EVIDENCE).rejected is Rejection.CONDITION_NOT_IN_SOURCE
    elsewhere = Draft(text="It depends [S2].", refused=False, quotes={"S2": SOURCE},
                      conditions=[ConditionAnswer(condition="in London", answer="150 pounds", refs=["S1"])])
    assert verify(elsewhere, EVIDENCE).rejected is Rejection.CONDITION_NOT_IN_SOURCE  # cites what the draft does not


def test_a_model_that_asks_back_gives_a_clarifying_question():
    draft = draft_from_reply("Which city do you mean?\n- London [S2]\n- otherwise [S2]")
    assert draft.outcome is Outcome.CLARIFY and draft.refused
    verdict = verify(draft, EVIDENCE)
    assert verdict.outcome is Outcome.CLARIFY and verdict.answer.startswith("Which case do you mean?")
    assert "London, otherwise" in verdict.answer and verdict.answer.endswith("[S1]")


def test_the_prompt_asks_a_model_for_answers_per_condition_and_the_reply_reaches_the_caller(services):
    svc, server = fake_model_service.start()
    try:
        svc.respond = lambda request: svc.chat(_per_depot(request["messages"][1]["content"]))
        model = OpenAICompatibleGenerator(base_url=svc.url, model="m", retries=0)
        answer = ask(services, STAFF, "What is the field allowance per shift?", model)
    finally:
        server.shutdown()
    assert "different answers under different conditions" in svc.requests[0]["json"]["messages"][0]["content"]
    assert answer.outcome is Outcome.ANSWERED and answer.degraded == []
    assert conditions(answer) == [("Harrowmere", "14 pounds"), ("Doveridge", "11 pounds")]


def _per_depot(prompt: str) -> str:
    """What a model reading the prompt replies: two depots' rows, quoted with their source's number."""
    (ref,) = [ref for ref, text in re.findall(r'<source id="(S\d+)"[^>]*>(.*?)</source>', prompt, re.S) if "Harrowmere" in text]
    return f'It depends on the depot:\n- Harrowmere: "14 pounds" [{ref}]\n- Doveridge: "11 pounds" [{ref}]'


def test_eval_judges_a_clarifying_question_where_one_is_labelled():
    case = AnswerCase(id="c1", question="What is the coworking allowance?", tenant="t", roles=["staff"], refuse=False,
                      expected_documents=["abroad.csv"], must_contain=["Germany", "Spain"], clarify=True)
    asked = Answer(answer_id="a", answer="Which country do you mean? ... Germany, Spain. [S1]", refused=True,
                   outcome=Outcome.CLARIFY, citations=[{"ref": "S1", "document_id": "abroad.csv"}])
    assert judge(case, asked).correct
    answered = Answer(answer_id="b", answer="Germany 28 euros, Spain 20 euros [S1]", refused=False, outcome=Outcome.ANSWERED,
                      citations=[{"ref": "S1", "document_id": "abroad.csv"}])
    assert not judge(case, answered).correct  # labelled to be asked back: an answer picks for the asker
    plain = case.model_copy(update={"clarify": False})
    assert not judge(plain, asked).correct and judge(plain, answered).correct
