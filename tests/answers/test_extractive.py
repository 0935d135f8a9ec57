"""The extractive answerer: units, what a question asks for, direct answers, lists, refusals
with the closest passages, and ``citewell eval-answers``."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest

from citewell.answers.evidence import gather_evidence
from citewell.answers.extractive.direct import direct_answer
from citewell.answers.extractive.features import (
    ANSWER_FEATURES,
    UNIT_FEATURES,
    EvidenceCoverage,
    UnitFeatures,
    answer_features,
)
from citewell.answers.extractive.generator import ExtractiveGenerator, _who_is
from citewell.answers.extractive.kinds import DATE, NUMBER, Wants
from citewell.answers.extractive.question import identifiers, missing_share, negates, parts, specific_terms, stems, wants
from citewell.answers.extractive.quoting import _list_for, led_by, list_at, neighbour, quoted_by, quoted_units
from citewell.answers.extractive.refusal import (
    DEFAULT_UNCONFIRMED_THRESHOLD,
    LogisticModel,
    RefusalModel,
    shipped_model,
)
from citewell.answers.extractive.scoring import _holds_wanted, score_support
from citewell.answers.extractive.units import companions, run_around, units_of
from citewell.answers.extractive.vectors import CANDIDATES, UnitEmbeddings, _blocking
from citewell.answers.service import ask
from citewell.cli import main as cli
from citewell.evaluation.answers import AnswerCase, judge, score
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.metadata.sqlite import SqliteMetadataStore
from citewell.models.answers import Answer, Citation, Outcome
from citewell.models.evidence import EvidenceItem, EvidenceSpan
from citewell.models.identity import Identity
from citewell.search import search

SUPPORT = Identity(tenant="northpier", roles=frozenset({"support"}))
CODES = b"code,component,meaning,operator action\n" \
        b"E1027,spreader,Twistlock sensor disagrees with lock command,Stop the move and inspect the twistlock sensor\n" \
        b"E1043,hoist,Hoist motor over temperature,Let the motor cool for 20 minutes before resuming\n" \
        b"E2001,gantry,Wind speed above the operating limit,Park the crane and secure it with storm pins\n"
RUNBOOK = b"""# Crane runbook

## First response

1. Acknowledge the page in the on-call tool.
2. Open the incident channel and post the affected crane numbers.
3. Check the health dashboard for controller heartbeats.

## Restarting a controller

A controller that misses three heartbeats is fenced automatically. Restart it with
ccsctl restart only after the crane operator confirms the spreader is
parked.
"""


def item(text: str, headings: tuple[str, ...] = ()) -> EvidenceItem:
    return EvidenceItem(ref="S1", document_id="d", revision="r", title="T", section_path=list(headings), text=text,
                        spans=[EvidenceSpan(chunk_id="d#0#0", section_path=list(headings), start=0, end=len(text))], rank=1)


def add(services, data: bytes, doc_id: str, roles=("support",)):
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset(roles),
                                                 data=data, filename=doc_id)])
    assert outcome.status == "published", outcome


def test_records_are_whole_units_and_a_wrap_is_not_a_sentence_end():
    text = ("code: E1027; meaning: Twistlock sensor disagrees\n\ncode: E1043; meaning: Hoist motor hot\n\n"
            "Restart it with\nccsctl restart only after the operator confirms. Never restart two at once.")
    units = units_of(item(text))
    assert [u.text for u in units] == [
        "code: E1027; meaning: Twistlock sensor disagrees", "code: E1043; meaning: Hoist motor hot",
        "Restart it with ccsctl restart only after the operator confirms.", "Never restart two at once.",
    ]
    assert [u.record for u in units] == [True, True, False, False]


def test_a_question_that_asks_two_things_is_two_asks():
    assert parts("How long do I have to submit a claim, and who can approve a late one?") == [
        "How long do I have to submit a claim?", "who can approve a late one (claim)?"]
    assert parts("What are the salt and pepper rules?") == ["What are the salt and pepper rules?"]


def test_an_ask_that_points_back_takes_the_first_asks_words():
    assert parts("What is the leak allowance and how often can a customer get it?") == [
        "What is the leak allowance?", "how often can a customer get it (leak allowance)?"]
    assert parts("Who approves refunds, and when are refunds paid?") == [
        "Who approves refunds?", "when are refunds paid?"]
    # What the first ask is about is what follows its last function word, not its verbs.
    assert parts("Which release added SEPA mandates, and when was it released?")[1] == (
        "when was it released (release added SEPA mandates)?")


def test_what_an_apostrophe_leaves_is_no_term_of_the_question():
    # "s" found in no passage would weigh most of all the question's terms, and lower the
    # coverage of the row that answers "What is the Records Manager's extension?".
    assert stems("What is the Records Manager's extension?") == stems("Records Manager extension")
    assert "t" not in stems("Why don't invoices send?")


def test_the_names_and_numbers_a_question_is_about_must_be_in_the_passage():
    assert specific_terms("Is staff parking free at Fenwick Reservoir?") == {"fenwick", "reservoir"}
    assert specific_terms("When was Tallyforge 5.5 released?") == {"tallyforge", "5.5"}
    assert specific_terms("What does I do?") == set()
    assert missing_share({"fenwick", "reservoir"}, "staff parking is free at harrowmere treatment works") == 1.0
    assert missing_share({"tallyforge", "5.5"}, "tallyforge 5.4 release notes") == 0.5
    assert missing_share({"5.4"}, "version 5.4.1 shipped") == 1.0  # another version, not this one
    assert missing_share({"5.4"}, "tallyforge 5.4.") == 0.0


def test_what_a_question_asks_for():
    assert wants("How many days of annual leave do I get?") == {Wants.NUMBER}
    assert Wants.DATE in wants("When do carried days expire?")
    assert Wants.DATE in wants("In which months are access reviews done?")  # a time, though it opens with no "when"
    assert Wants.DATE not in wants("Which code means the endpoint failed?")
    assert Wants.PERSON in wants("Who owns the billing service?")
    assert Wants.STEPS in wants("What are the first response steps?")
    assert identifiers("What does error E1027 mean?") == {"e1027"}
    assert identifiers("What buffer size does the zlib example use for CHUNK?") == set()
    assert identifiers("When was Tallyforge 5.5 released?") == {"5.5"}  # a release, not a word
    assert "5.5" in stems("When was Tallyforge 5.5 released?") and "5.5" not in stems("Tallyforge 5.2, released 2025.")
    assert identifiers("Which code means the endpoint returned a non-2xx status?") == {"2xx"}  # "non-" is English
    assert identifiers("What does running python3.11 with -I change?") >= {"-i"}  # a short option its entry names
    assert identifiers("a well-known part-time job") == {"well-known", "part-time"}  # no option in a hyphenated word
    assert identifiers("What is WX-4012?") >= {"wx-4012"}


def test_a_plain_text_list_is_a_run_of_items_after_its_lead_in():
    text = ("How do I set up a payment plan?\n1. Check the balance and\nthe history.\n2. Agree the amount.\n"
            "3. Send the letter.\n\nA later paragraph. It has two sentences.")
    units = units_of(item(text))
    assert [u.text for u in units] == ["1. Check the balance and the history.", "2. Agree the amount.",
                                       "3. Send the letter.", "A later paragraph.", "It has two sentences."]
    assert all(u.asked == "How do I set up a payment plan?" for u in units[:3])
    assert [u.text for u in run_around(units, units[1])] == [u.text for u in units[:3]]


def test_a_sentence_or_heading_that_introduces_a_list_leads_it():
    text = "Customers in arrears can agree a plan. It lasts 24 months.\n\n1. Check the balance.\n2. Agree the amount."
    units = units_of(item(text))
    intro, run = list_at(units, units[1])
    assert intro is units[1] and [u.text for u in run] == ["1. Check the balance.", "2. Agree the amount."]
    assert list_at(units, units[0]) == (None, [units[0]])  # not the sentence right before the list


def test_a_unit_is_scored_with_the_sentence_or_heading_that_holds_what_it_lacks():
    text = "Tallyforge 5.3, released 20 January 2026\n\nAdded SEPA mandates.\n\nRafael Moutinho, Head of Support.\nApproves refunds."
    units = units_of(item(text, ("Release notes", "Tallyforge 5.3, released 20 January 2026")))
    beside = companions(units, {Wants.DATE})
    assert beside[1] is units[0] and beside[0] is None  # the heading dates the release
    beside = companions(units, {Wants.PERSON})
    assert beside[3] is units[2] and beside[2] is None  # the sentence before names who approves
    assert companions(units, {Wants.LIST}) == [None] * len(units)


def test_who_a_team_is_comes_from_the_unit_that_names_its_person_first():
    rule, = units_of(item("Working abroad needs the approval of People Operations."))
    directory = units_of(item("Solene Marchetti, People Operations Manager.\n\nPeople Operations sends the form to Owen Hale."))
    assert direct_answer("Who approves working abroad?", rule, frozenset({Wants.PERSON})) == "People Operations"
    hop = _who_is("People Operations", [rule], [rule, *directory])
    assert hop == ("Solene Marchetti", directory[0])
    assert _who_is("People Operations", [rule], [rule, directory[1]]) is None  # the name after it is someone else


def test_a_direct_answer_is_read_off_a_record_or_the_only_value_of_the_kind_asked():
    (record,) = units_of(item("code: E1027; meaning: Twistlock sensor disagrees; operator action: Stop the move"))
    assert direct_answer("What does error E1027 mean?", record, frozenset()) == "Twistlock sensor disagrees"
    assert direct_answer("What should the operator do for E1027?", record, frozenset()) == "Stop the move"
    # asked by one of its values, the row answers with the value asked for, not the given value's other form
    (locale,) = units_of(item("lcid_hex: 0x0411; lcid: 1041; locale: ja_JP"))
    assert direct_answer("Which locale does Windows LCID 0x0411 correspond to?", locale, frozenset()) == "ja_JP"
    assert direct_answer("What is the LCID of ja_JP in hex?", locale, frozenset()) == "0x0411"
    (sentence,) = units_of(item("Carried days expire on 31 March."))
    assert direct_answer("When do carried days expire?", sentence, frozenset({Wants.DATE})) == "31 March"
    (person,) = units_of(item("Name: Aisha Brennock; Role: HR Business Partner; Responsible for: Parental leave"))
    assert direct_answer("who do i talk to about parental leave", person, frozenset({Wants.PERSON})) == "Aisha Brennock"
    (two,) = units_of(item("Staff get 27 days, part-time staff 14 days."))
    assert direct_answer("How many days?", two, frozenset({Wants.NUMBER})) is None  # which one is asked is unclear
    (villa,) = units_of(item("The lakeside villa costs 830 000 dollars."))  # thousands grouped by a space
    assert direct_answer("How much does the villa cost?", villa, frozenset({Wants.MONEY})) == "830 000 dollars"
    (pallets,) = units_of(item("The depot holds 1\u202f250\u00a0000 pallets; call 020 7946 0000."))
    assert direct_answer("How many pallets?", pallets, frozenset({Wants.NUMBER})) is None  # three figures, none alone
    assert [m.group() for m in NUMBER.finditer(pallets.text)][0] == "1 250 000 pallets"  # no-break spaces read as spaces
    # A figure's unit is never a function word: the lead would read "1.60 and." or "137 if."
    (rust,) = units_of(item("To package orjson requires at least Rust 1.60 and the maturin build tool."))
    assert direct_answer("What minimum Rust version does packaging orjson require?", rust, frozenset({Wants.NUMBER})) == "1.60"
    (status,) = units_of(item("It will now exit with status 137 if the kill signal was sent."))
    assert direct_answer("What exit status does it give?", status, frozenset({Wants.NUMBER})) == "137"
    (memory,) = units_of(item("bunzip2 will require about 3700 kbytes to decompress."))
    assert direct_answer("How much memory does bunzip2 need?", memory, frozenset({Wants.NUMBER})) == "3700 kbytes"


def test_a_run_of_one_line_blocks_is_a_list_without_its_heading():
    text = "First response\n\nAcknowledge the page.\n\nOpen the channel.\n\nCheck the dashboard.\n\nNext\n\nA later paragraph. It has two sentences."
    units = units_of(item(text, ("Runbook", "First response")))
    assert [u.text for u in units if u.heading] == ["First response"]  # it names a section: never part of a list
    run = run_around(units, units[2])
    assert [u.text for u in run] == ["Acknowledge the page.", "Open the channel.", "Check the dashboard.", "Next"]


def test_an_error_code_is_answered_from_its_row(services):
    add(services, CODES, "error-codes.csv")
    answer = ask(services, SUPPORT, "What does error E1027 mean?")
    assert not answer.refused, answer
    assert answer.answer.startswith("Twistlock sensor disagrees with lock command")
    assert "E1043" not in answer.answer and answer.citations[0].document_id == "error-codes.csv"
    assert "code: E1027" in answer.citations[0].quote


def test_once_it_answers_a_question_for_steps_gets_the_whole_list(services):
    """Whether to answer is the fitted model's call; what an answer to a steps question holds is not."""
    add(services, RUNBOOK, "runbook.md")
    question = "What are the first response steps?"
    evidence = gather_evidence(services, SUPPORT, search(services, SUPPORT, question).hits)
    answering = RefusalModel(unit=shipped_model().unit,
                             answer=LogisticModel(features=("best_unit",), weights=[0.0], bias=10.0))  # always answers
    draft = ExtractiveGenerator(services.embedder, services.embeddings, answering).generate(question, evidence)
    steps = ("Acknowledge the page", "Open the incident channel", "Check the health dashboard")
    assert all(step in draft.text for step in steps) and "Restart it" not in draft.text, draft.text
    assert draft.text.startswith("1. Acknowledge") and draft.text.endswith("[S1]")


def test_a_refusal_offers_the_closest_passages_the_caller_may_read_as_passages(services):
    add(services, RUNBOOK, "runbook.md")
    add(services, b"# Salaries\n\nA shift lead earns 54000 euros.\n", "salaries.md", roles=("hr",))
    answer = ask(services, SUPPORT, "What is the salary of a crane operator in Singapore?")
    # Not answered: at most the runbook's sentence about crane operators, quoted as not confirmed.
    assert answer.refused and answer.outcome != Outcome.ANSWERED
    assert all(c.document_id == "runbook.md" for c in answer.citations) and "54000" not in answer.model_dump_json()
    assert answer.closest and all(p.document_id == "runbook.md" for p in answer.closest)


def test_eval_answers_reports_per_category(tmp_path, capsys):
    home = tmp_path / "home"
    (tmp_path / "error-codes.csv").write_bytes(CODES)
    assert cli(["--home", str(home), "ingest", str(tmp_path / "error-codes.csv"), "--tenant", "northpier",
                "--allow-roles", "support", "--json"]) == 0
    questions = [
        {"id": "1", "question": "What does error E1027 mean?", "tenant": "northpier", "roles": ["support"], "refuse": False,
         "category": "code", "expected_documents": ["error-codes.csv"], "must_contain": ["twistlock sensor"]},
        {"id": "2", "question": "What does error E1027 mean?", "tenant": "northpier", "roles": ["staff"], "refuse": True,
         "category": "forbidden", "must_not_contain": ["twistlock"]},
        {"id": "3", "question": "Who won the football cup in 1998?", "tenant": "northpier", "roles": ["support"],
         "refuse": True, "category": "out_of_corpus"},
    ]
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in questions))
    capsys.readouterr()
    assert cli(["--home", str(home), "eval-answers", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"]["answer_accuracy"] == 1.0 and report["overall"]["refusal_accuracy"] == 1.0
    assert report["overall"]["forbidden_text"] == 0 and report["overall"]["fabrications"] == 0
    assert set(report["by_category"]) == {"code", "forbidden", "out_of_corpus"}
    overall = report["overall"]
    assert overall["answerable_outcomes"] == {"answered_right": 1, "answered_wrong": 0, "unconfirmed_with_fact": 0,
                                              "unconfirmed_without_fact": 0, "not_found": 0,
                                              "asked_which_right": 0, "asked_which_wrong": 0}
    assert overall["must_refuse_outcomes"]["answered"] == 0 and sum(overall["must_refuse_outcomes"].values()) == 2
    assert overall["fact_shown"] == 1.0
    assert [j["outcome"] for j in report["judgements"]][0] == "answered"
    path.write_text('{"id": "x", "question": ""}\n')
    assert cli(["--home", str(home), "eval-answers", str(path), "--json"]) == 2
    assert "questions.jsonl:1" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_eval_answers_counts_each_outcome_and_a_leak_through_an_unconfirmed_quote():
    def case(**fields) -> AnswerCase:
        return AnswerCase(id=str(len(fields)), question="q", tenant="t", roles=["staff"], **fields)

    def reply(outcome: Outcome, text: str | None = None, document: str = "hours.md") -> Answer:
        cited = [Citation(ref="S1", document_id=document, quote=text or "")] if text else []
        return Answer(answer_id="a", answer=text, refused=outcome is not Outcome.ANSWERED, outcome=outcome, citations=cited)

    hours = case(refuse=False, expected_documents=["hours.md"], must_contain=["10:00"])
    near_miss = case(refuse=True, must_not_contain=["26 days"])  # out of corpus: a readable passage may be quoted
    secret = case(refuse=True, expected_documents=["salaries.md"], must_not_contain=["54000"])  # readable only by HR
    judged = [
        judge(hours, reply(Outcome.ANSWERED, "10:00 [S1]")),
        judge(hours, reply(Outcome.ANSWERED, "15:00 [S1]")),
        judge(hours, reply(Outcome.UNCONFIRMED, "Core hours are 10:00 to 15:00. [S1]")),
        judge(hours, reply(Outcome.UNCONFIRMED, "Core hours are 10:00 to 15:00. [S1]", document="other.md")),
        judge(hours, reply(Outcome.NOT_FOUND)),
        judge(near_miss, reply(Outcome.UNCONFIRMED, "Full-time staff get 26 days. [S1]")),
        judge(secret, reply(Outcome.UNCONFIRMED, "A shift lead earns 54000 euros. [S1]")),
        judge(secret, reply(Outcome.NOT_FOUND)),
    ]
    assert [j.correct for j in judged] == [True, False, False, False, False, True, False, True]
    assert [j.fact_in_quote for j in judged] == [False, False, True, False, False, False, False, False]
    assert judged[6].forbidden == ["54000"] and not judged[5].forbidden  # the quote leaked what only HR may read
    scores = score(judged)
    assert scores.answerable_outcomes.model_dump() == {"answered_right": 1, "answered_wrong": 1, "unconfirmed_with_fact": 1,
                                                       "unconfirmed_without_fact": 1, "not_found": 1,
                                                       "asked_which_right": 0, "asked_which_wrong": 0}
    assert scores.must_refuse_outcomes.model_dump() == {"answered": 0, "unconfirmed": 2, "not_found": 1, "asked_which": 0}
    assert (scores.fact_shown, scores.answer_accuracy, scores.fabrications, scores.forbidden_text) == (0.4, 0.2, 0, 1)
    assert scores.citation_precision == 1.0  # of answers only: an unconfirmed quote is not an answer's citation


def test_a_question_about_one_row_is_answered_from_that_row_and_a_question_for_rows_gets_the_table(services):
    add(services, CODES, "error-codes.csv")
    answer = ask(services, SUPPORT, "What should the operator do for error E1027?")
    assert not answer.refused, answer
    # The asked field once, the row it came from as the quote beneath (not the field twice)
    assert answer.answer == "Stop the move and inspect the twistlock sensor [S1]"
    [quoted] = [c.quote for c in answer.citations]
    assert "E1027" in quoted and "E1043" not in quoted
    rows = units_of(item("code: E1027; meaning: Twistlock\n\ncode: E1043; meaning: Hoist hot\n\nA closing sentence."))
    assert [u.text for u in run_around(rows, rows[1])] == ["code: E1027; meaning: Twistlock", "code: E1043; meaning: Hoist hot"]


def test_a_two_part_question_is_answered_when_each_part_is(services):
    policy = (b"# Security Policy\n\n## Data retention\n\nApplication logs are kept for 30 days. Audit logs are kept for "
              b"400 days by default.\n\n## Backups\n\nBackups are encrypted and stored in a second region. Deleted customer "
              b"accounts are purged from backups after 35 days.\n")
    add(services, policy, "security-policy.md")
    answer = ask(services, SUPPORT, "How long are application logs kept, and when are deleted accounts purged from backups?")
    assert not answer.refused, answer
    assert "30 days" in answer.answer and "35 days" in answer.answer


def test_the_answer_model_is_fitted_on_what_an_answer_would_quote(embedder):
    """A heading holds no added feature, yet an answer built on it quotes the list it heads:
    that answer is right, and the fit labels it so."""
    heading = "Tallyforge 5.4, released 3 March 2026"
    text = f"{heading}\n\nAdded bulk credit notes.\n\nAdded Polish invoice templates."
    question = "What was added in Tallyforge 5.4?"
    support = score_support(UnitEmbeddings(embedder), question, [item(text, ("Release notes", heading))])
    rank = next(r for r, u in enumerate(support.units) if u.heading)
    assert [u.text for u in quoted_by(question, support, rank)] == [
        heading, "Added bulk credit notes.", "Added Polish invoice templates."]
    dated = score_support(UnitEmbeddings(embedder), "When was bulk crediting added?", [item(text, ("Release notes", heading))])
    rank = next(r for r, u in enumerate(dated.units) if u.text == "Added bulk credit notes.")
    assert [u.text for u in quoted_by("When was bulk crediting added?", dated, rank)] == [heading, "Added bulk credit notes."]


def test_the_fit_chooses_the_second_operating_point_by_recall_and_an_older_file_gets_the_default():
    from benchmarks.calibrate_refusal import Observed, Question, choose_unconfirmed

    def observed(cosine: float, holds: bool, fit: bool = True) -> Observed:
        row = UnitFeatures(**dict.fromkeys(UNIT_FEATURES, 0.0) | {"cosine": cosine})
        question = Question(text="q", identity=SUPPORT, facts=["x"], answerable=True, source="answerset", fit=fit)
        return Observed(question, [row], [holds], EvidenceCoverage(0.0, 0.0), [holds], [frozenset({0})])

    model = RefusalModel(unit=LogisticModel(features=("cosine",), weights=[1.0], bias=0.0),
                         answer=LogisticModel(features=("best_cosine",), weights=[10.0], bias=-5.0))  # p = 0.5 at 0.5
    rows = [observed(c, True) for c in (0.9, 0.6, 0.45, 0.4, 0.2)] + [observed(0.1, False), observed(0.05, True, fit=False)]
    assert choose_unconfirmed(rows, model, 0.8) == 0.2689  # the fourth of five: p at cosine 0.4, rounded down
    assert choose_unconfirmed(rows, model, 1.0) == 0.0474  # all five, not the held-out one
    assert choose_unconfirmed(rows, model, 0.1) == 0.5  # never above the answer threshold
    shipped = json.loads(json.dumps(shipped_model().model_dump()))
    del shipped["unconfirmed_threshold"]
    assert RefusalModel.model_validate(shipped).unconfirmed_threshold == DEFAULT_UNCONFIRMED_THRESHOLD


def test_the_shipped_models_read_the_typed_rows_by_the_names_their_file_gives():
    """refusal_model.json names each model's features; a row holds one field per feature, in the
    order the fit writes them, and a model reads it by its own names in its own order. A file
    naming a feature no row holds is refused when it loads."""
    model = shipped_model()
    assert model.unit.features == UNIT_FEATURES and model.answer.features == ANSWER_FEATURES
    row = UnitFeatures(**{name: float(n) for n, name in enumerate(UNIT_FEATURES)})
    assert model.unit.logit(row) == model.unit.bias + sum(w * n for n, w in enumerate(model.unit.weights))
    backwards = LogisticModel(features=UNIT_FEATURES[::-1], weights=model.unit.weights[::-1], bias=model.unit.bias)
    assert backwards.logit(row) == pytest.approx(model.unit.logit(row))
    renamed = json.loads(json.dumps(model.model_dump()))
    renamed["unit"]["features"][0] = "cosine_similarity"
    with pytest.raises(ValueError, match="cosine_similarity"):
        RefusalModel.model_validate(renamed)


def test_an_answer_spread_over_two_sentences_quotes_the_neighbour_that_holds_the_rest():
    text = ("Rail travel is standard class. First class needs the written approval of a director. Taxis are "
            "reimbursed at cost.\n\nHotels are booked through the travel desk.")
    units = units_of(item(text, ("Expenses", "Travel")))
    rail, first, taxis, hotels = units
    question = "What approval does first class rail travel need?"
    assert neighbour(question, units, rail) is first  # the sentence after holds "approval" and "first"
    assert neighbour(question, units, first) is rail  # and from the other side, "rail travel"
    assert neighbour(question, units, taxis) is first  # the one after is in another paragraph; the one before is taken
    assert neighbour(question, units, hotels) is None  # alone in its paragraph: nothing is taken from another
    assert neighbour("Is rail travel standard class?", units, rail) is None  # the unit holds every word of the question


def test_the_fit_labels_an_answer_by_the_neighbour_it_quotes_too(embedder):
    text = "Rail travel is standard class. First class needs the written approval of a director."
    question = "What approval does first class rail travel need?"
    support = score_support(UnitEmbeddings(embedder), question, [item(text, ("Expenses",))])
    for rank in range(len(support.units)):
        assert [u.text for u in quoted_by(question, support, rank)] == [
            "Rail travel is standard class.", "First class needs the written approval of a director."]
    assert all(row.answer_coverage == 1.0 for row in support.unit_features)  # the two sentences hold every word asked
    assert support.features.answer_coverage == 1.0 > support.features.best_coverage
    assert support.quoted == [frozenset({0, 1})] * 2
    assert support.features.margin == support.probabilities[0]  # the sentence it quotes beside it is no rival


def test_the_lead_of_the_best_unit_is_over_the_best_unit_its_answer_does_not_quote():
    rows = [UnitFeatures(**dict.fromkeys(UNIT_FEATURES, 0.0)) for _ in range(3)]
    evidence = EvidenceCoverage(evidence_coverage=1.0, absent_terms=0.0)
    probabilities = np.array([0.6, 0.55, 0.1])
    together = [frozenset({0, 1}), frozenset({0, 1}), frozenset({2})]  # the first two are one list, or two sentences quoted together
    apart = [frozenset({0}), frozenset({1}), frozenset({2})]
    assert answer_features(rows, probabilities, evidence, together).margin == 0.5
    assert round(answer_features(rows, probabilities, evidence, apart).margin, 6) == 0.05


def test_a_list_written_in_one_sentence_is_the_kind_of_answer_a_list_question_wants():
    inline, plain = units_of(item("Owners can export invoices, customers and payments as CSV or JSON. Exports are kept a week."))
    assert _holds_wanted(inline, {Wants.LIST}, [inline, plain]) and not _holds_wanted(plain, {Wants.LIST}, [inline, plain])
    assert not _holds_wanted(inline, {Wants.STEPS}, [inline, plain])  # steps are a run of items, not a sentence


def test_an_answer_over_two_sentences_of_a_paragraph_quotes_both_in_the_order_written(services):
    policy = (b"# Expenses policy\n\n## Travel\n\nBook trains through the travel desk at least a week ahead. Rail travel "
              b"is standard class. First class needs the written approval of a director.\n\n## Meals\n\nMeals on a "
              b"trip are reimbursed up to 30 pounds a day.\n")
    add(services, policy, "expenses.md")
    answer = ask(services, SUPPORT, "What approval does first class rail travel need?")
    assert not answer.refused, answer
    assert "written approval of a director" in answer.answer and "30 pounds" not in answer.answer
    assert answer.answer.index("Rail travel is standard class.") < answer.answer.index("First class needs")
    assert answer.citations[0].document_id == "expenses.md"


def test_cached_answers_are_keyed_by_the_answering_code_as_well_as_the_model(tmp_path):
    import shutil
    from pathlib import Path

    import citewell.answers
    from citewell.answers.extractive.generator import answering_code

    package = Path(citewell.answers.__file__).parent
    same, changed = tmp_path / "same", tmp_path / "changed"
    for copy in (same, changed):
        shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    units = changed / "extractive" / "units.py"
    units.write_text(units.read_text() + "\n# a change to how units are read\n")

    assert answering_code(same) == answering_code(package)
    assert answering_code(changed) != answering_code(package)


def test_a_question_that_asks_what_is_not_so_is_not_answered_by_what_is(embedder):
    """SQuAD 2.0's negated questions ("What did the treaty not cover?") are nearly all unanswerable
    from a passage that only says what is so: a unit that does not negate is marked for both models."""
    assert negates("Which port does not accept hazardous cargo?") and negates("Why can't the crane move?")
    assert not negates("Which port accepts hazardous cargo?") and not negates("Notes on the knot")  # whole words only
    text = "Harwick accepts hazardous cargo on weekdays. Lowmoor does not accept hazardous cargo."
    negated = score_support(UnitEmbeddings(embedder), "Which port does not accept hazardous cargo?", [item(text)])
    by_text = {u.text: row.negation_missing for u, row in zip(negated.units, negated.unit_features)}
    assert by_text == {"Harwick accepts hazardous cargo on weekdays.": 1.0, "Lowmoor does not accept hazardous cargo.": 0.0}
    assert negated.features.negation_missing == by_text[negated.units[0].text]
    plain = score_support(UnitEmbeddings(embedder), "Which port accepts hazardous cargo?", [item(text)])
    assert all(row.negation_missing == 0.0 for row in plain.unit_features)  # a plain question asks for nothing negated
    model = shipped_model()
    assert model.unit.weights[model.unit.features.index("negation_missing")] < 0
    assert model.answer.weights[model.answer.features.index("negation_missing")] < 0


def test_a_price_asks_for_money_not_any_number(embedder):
    assert wants("How much does the Growth plan cost?") == {Wants.MONEY}
    assert wants("What is the fee for a replacement card?") == {Wants.MONEY}
    assert wants("Who is in charge of the billing service?") == {Wants.PERSON}  # a person in charge, not a charge
    assert wants("Which charges apply to a late payment?") == {Wants.MONEY}
    assert wants("How much did the city pay for the bridge?") == {Wants.MONEY}
    assert wants("How much leave do I get?") == {Wants.NUMBER}  # an amount, in no currency
    text = "The free trial lasts 30 days and includes every Growth feature. Growth: 89 euros per month, 5 users."
    trial, growth = units_of(item(text))
    assert growth.holds(Wants.MONEY) and not trial.holds(Wants.MONEY) and trial.holds(Wants.NUMBER)
    question = "How much does the Growth plan cost?"
    support = score_support(UnitEmbeddings(embedder), question, [item(text)])
    rows = {u.text: row for u, row in zip(support.units, support.unit_features)}
    assert rows[growth.text].type_match == 1.0 and rows[trial.text].type_mismatch == 1.0
    assert direct_answer(question, growth, frozenset({Wants.MONEY})) == "89 euros"


def test_a_code_the_question_does_not_name_marks_the_unit_that_answers_which_option(embedder):
    """"Which environment variable ...?" is answered by a sentence that names a new one; one that
    only repeats the question's own code, or names none, is marked for neither model as holding it."""
    text = ("FONTCONFIG_FILE is used to override the default configuration file.\n\n"
            "The FC_DEBUG value is read at start.\n\nThe configuration is read once.")  # three paragraphs: no companions
    question = "Which environment variable, besides FC_DEBUG, points fontconfig at another configuration file?"
    support = score_support(UnitEmbeddings(embedder), question, [item(text)], every_unit=True)
    rows = {u.text: row.code_match for u, row in zip(support.units, support.unit_features)}
    assert rows == {"FONTCONFIG_FILE is used to override the default configuration file.": 1.0,
                    "The FC_DEBUG value is read at start.": 0.0, "The configuration is read once.": 0.0}
    assert support.features.code_match == rows[support.units[0].text]
    plain = score_support(UnitEmbeddings(embedder), "Where is the configuration file?", [item(text)], every_unit=True)
    assert all(row.code_match == 0.0 for row in plain.unit_features)  # no code asked for


def test_a_unit_covering_the_situation_a_question_sets_out_more_than_its_ask_has_an_ask_gap(embedder):
    text = ("Group and wildcard limits are not applied to root.\n\n"
            "To apply a limit to the root user, the domain must be the literal username root.")
    question = "Group and wildcard limits are not applied to root. How do I apply a limit to the root user?"
    support = score_support(UnitEmbeddings(embedder), question, [item(text)], every_unit=True)
    gap = {u.text: row.ask_gap for u, row in zip(support.units, support.unit_features)}
    assert gap["Group and wildcard limits are not applied to root."] > 0.0
    assert gap["To apply a limit to the root user, the domain must be the literal username root."] == 0.0
    single = score_support(UnitEmbeddings(embedder), "How do I apply a limit to the root user?", [item(text)], every_unit=True)
    assert all(row.ask_gap == 0.0 for row in single.unit_features)  # a question of one sentence sets nothing out


class _Counting:
    """The real embedder, recording what each call was asked to embed."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, []
        self.identity, self.dims = inner.identity, inner.dims

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_a_second_answer_embeds_its_question_once_a_model_and_no_sentence_again(services, monkeypatch):
    """The runbook's sentences are embedded by the first answer and cached; the second embeds only
    its question: with the index's model for the search, and with the unit encoder to score the
    sentences (a build without the encoder scores them against the search's vector)."""
    import citewell.answers.extractive.vectors as vectors

    add(services, RUNBOOK, "runbook.md")
    ask(services, SUPPORT, "How do I restart a controller?")  # the runbook's sentences are embedded once
    counting = _Counting(services.embedder)
    services.embedder = counting
    encoder = vectors.shipped_unit_encoder()
    scoring = _Counting(encoder) if encoder else counting
    monkeypatch.setattr(vectors, "shipped_unit_encoder", lambda: scoring)
    ask(services, SUPPORT, "When is a controller fenced?")
    assert counting.calls[0] == ["When is a controller fenced?"]  # the search's
    assert scoring.calls == [["When is a controller fenced?"]]  # the question scored against cached sentences; nothing else


def test_unit_vectors_cached_by_one_encoder_are_never_read_by_another(embedder, tmp_path):
    """Unit vectors are cached under the encoder that made them: a retrained unit encoder (a new
    identity) embeds the sentences again instead of comparing its question with the old ones."""
    cache = SqliteMetadataStore(tmp_path / "metadata.db")
    evidence = [item("Rail travel is standard class. First class needs the written approval of a director. "
                     "Flights are booked through the travel desk.")]
    question = "Who approves first class travel?"
    first, again, retrained = _Counting(embedder), _Counting(embedder), _Counting(embedder)
    retrained.identity = "citewell-unit-encoder@0:384"
    score_support(UnitEmbeddings(embedder, cache, encoder=first), question, evidence, every_unit=True)
    assert len(first.calls[0]) == 4  # the question and its three sentences
    score_support(UnitEmbeddings(embedder, cache, encoder=again), question, evidence, every_unit=True)
    assert again.calls == [[question]]  # the same encoder: the sentences come from the cache
    score_support(UnitEmbeddings(embedder, cache, encoder=retrained), question, evidence, every_unit=True)
    assert len(retrained.calls[0]) == 4


HANDBOOK = [
    ("Expenses", "Claims must be submitted within 30 days of the expense. A late claim needs the approval of People "
     "Operations. Receipts are required for any item above 25 euros. Mileage is paid at 0.30 euros per kilometre. "
     "Meals on a trip are covered up to 40 euros a day."),
    ("Travel", "Rail travel is standard class. First class needs the written approval of a director. Flights are "
     "booked through the travel desk at least 14 days ahead. Hotel nights are capped at 140 euros in capital cities. "
     "Taxis are allowed after 22:00 or when carrying equipment."),
    ("Leave", "Annual leave is 27 days plus public holidays. Up to 5 unused days can be carried into the next year. "
     "Parental leave is 26 weeks at full pay. Sick leave must be reported to your manager before 10:00 on the first day. "
     "A doctor's note is needed after 7 calendar days."),
    ("Contacts", "The travel desk answers on extension 4410. Security incidents go to the duty officer on extension "
     "4999. Solene Marchetti, People Operations Manager, sits on the third floor."),
    ("Equipment", "Laptops are replaced every 4 years. A lost laptop must be reported to IT within 24 hours. Monitors "
     "and headsets can be ordered from the equipment portal. Personal devices may not hold customer data."),
]


def test_an_answer_embeds_only_the_sentences_that_could_change_it(embedder, tmp_path, monkeypatch):
    """The candidates left unembedded are bounded below the first unit and its rival: with every
    unit a candidate, the answer, the features the answer model reads and the ranking's head
    equal those of scoring every unit. With ``CANDIDATES`` the head is the same here, and a
    cold cache answers as a warm one."""
    import citewell.answers.extractive.vectors as vectors

    evidence = [item(text, (heading,)).model_copy(update={"ref": f"S{n}", "rank": n, "revision": f"r{n}"})
                for n, (heading, text) in enumerate(HANDBOOK, start=1)]
    questions = ["How many days do I have to submit a claim?", "Who approves a late claim?",
                 "What class is rail travel, and who can approve first class?", "How much is mileage paid?",
                 "When must sick leave be reported?", "How often are laptops replaced?",
                 "What is the extension of the travel desk?", "Can I carry unused leave into next year?",
                 "What is the capital of Peru?"]
    scorer = vectors.shipped_unit_encoder() or embedder  # the vectors the shipped models were fitted on
    every, bounded, capped = _Counting(scorer), _Counting(scorer), _Counting(scorer)
    answered = 0
    for number, question in enumerate(questions):
        full = score_support(UnitEmbeddings(every, encoder=every), question, evidence, every_unit=True)
        with monkeypatch.context() as uncapped:
            uncapped.setattr(vectors, "CANDIDATES", 10**6)
            pruned = score_support(UnitEmbeddings(bounded, encoder=bounded), question, evidence)
        assert [(u.item.ref, u.start) for u in pruned.units[:1]] == [(u.item.ref, u.start) for u in full.units[:1]]
        assert asdict(pruned.features) == pytest.approx(asdict(full.features), abs=1e-5), question
        first = score_support(UnitEmbeddings(capped, encoder=capped), question, evidence).units[0]
        assert (first.item.ref, first.start) == (full.units[0].item.ref, full.units[0].start), question
        # A generator whose unit cache holds every unit answers as one with an empty cache.
        warm = SqliteMetadataStore(tmp_path / f"warm{number}.db")
        score_support(UnitEmbeddings(embedder, warm), question, evidence, every_unit=True)
        cold = ExtractiveGenerator(embedder, SqliteMetadataStore(tmp_path / f"cold{number}.db"))
        draft = ExtractiveGenerator(embedder, warm).generate(question, evidence)
        assert cold.generate(question, evidence) == draft, question
        answered += not draft.refused
    assert answered >= 6
    units = sum(len(units_of(e)) for e in evidence)
    assert sum(map(len, every.calls)) == len(questions) * (units + 1)
    # The bound alone embeds 193 of 207 here: the unit model weighs the unit encoder's cosine at
    # 7.3 (MiniLM's at 3.7, when it saved over a fifth), so a unit's bound is loose; the cap does
    # the rest.
    assert sum(map(len, bounded.calls)) < 0.95 * len(questions) * (units + 1)
    assert sum(map(len, capped.calls)) <= len(questions) * (vectors.CANDIDATES + 1) < 0.6 * len(questions) * (units + 1)


def test_a_cold_answer_embeds_at_most_its_candidates_and_answers_as_a_warm_one(embedder, tmp_path):
    """Sixty sentences of evidence: a cold answer embeds its question and at most ``CANDIDATES``
    of them, and one whose cache holds every sentence's vector ranks the same candidates, so
    it answers alike."""
    from citewell.answers.extractive.unit_encoder import shipped_unit_encoder

    scorer = shipped_unit_encoder() or embedder
    filler = " ".join(f"Room {n} on floor {n % 7} has {n + 3} desks and a window facing the yard." for n in range(60))
    evidence = [item(f"{filler} Badges for new staff are printed by the security office within two working days.")]
    question = "Who prints badges for new staff?"
    cold = _Counting(scorer)
    pruned = score_support(UnitEmbeddings(cold, encoder=cold), question, evidence)
    assert sum(map(len, cold.calls)) <= CANDIDATES + 1 < len(units_of(evidence[0]))
    assert "security office" in pruned.units[0].text
    warm = SqliteMetadataStore(tmp_path / "warm.db")
    score_support(UnitEmbeddings(embedder, warm), question, evidence, every_unit=True)  # every sentence cached
    answers = [ExtractiveGenerator(embedder, store).generate(question, evidence)
               for store in (warm, SqliteMetadataStore(tmp_path / "cold.db"))]
    assert answers[0] == answers[1] and not answers[0].refused
    assert "security office" in answers[0].text


def test_embedding_stops_only_when_no_unit_left_could_rank_first_or_be_its_rival():
    nan = float("nan")
    # Units 0 and 1 scored (2.0 and 0.5); unit 0's answer quotes unit 2; units 2 and 3 not yet embedded.
    scores, cosines = np.array([2.0, 0.5, 0.0, 0.0]), np.array([0.6, 0.2, nan, nan])
    quoting = [frozenset({0, 2}), frozenset({1}), frozenset({2}), frozenset({3})]
    assert _blocking(scores, cosines, [2, 3], [1.5, 0.4], quoting, leading=1) == []
    assert _blocking(scores, cosines, [2, 3], [1.5, 0.6], quoting, leading=1) == [3]  # 3 could outscore the rival
    assert _blocking(scores, cosines, [3, 2], [0.4, 2.0], quoting, leading=1) == [2]  # 2 could rank first
    assert _blocking(scores, cosines, [2, 3], [1.5, 0.4], quoting, leading=2) == [2]  # 2 could rank second
    assert _blocking(scores, cosines, [2, 3], [0.4, 0.3], quoting, leading=2) == []
    only_first = np.array([2.0, nan, nan, nan])
    assert _blocking(scores, only_first, [1, 3], [1.0, 1.0], quoting, leading=1) == [1, 3]  # no rival scored yet
    assert _blocking(scores, only_first, [2], [1.9], quoting, leading=1) == []  # all that is left is quoted with it


def test_an_answer_is_never_a_heading_alone_a_bare_term_or_a_sentence_cut_off(embedder):
    from citewell.answers.extractive.eligible import answers_alone

    text = ("Release notes\n\nwww-data\n\nTests take arguments. A numeric argument n can be specified to tests as\n\n"
            "The daemon starts at boot. The daemon runs as the user www-data.\n\nversion: 14; codename: Forky")
    units = units_of(item(text, ("Release notes",)))
    by_text = {u.text: answers_alone(u, units, frozenset()) for u in units}
    assert by_text == {"Release notes": False, "www-data": False, "Tests take arguments.": True,
                       "A numeric argument n can be specified to tests as": False, "The daemon starts at boot.": True,
                       "The daemon runs as the user www-data.": True, "version: 14; codename: Forky": True}
    support = score_support(UnitEmbeddings(embedder), "Which user does the daemon run as?", [item(text, ("Release notes",))],
                            every_unit=True)
    assert support.units[0].text == "The daemon runs as the user www-data."
    assert {u.text for u in support.units} == {t for t, alone in by_text.items() if alone}


def test_a_code_the_question_names_is_found_as_a_whole_word_and_a_record_key_is_no_answer(embedder):
    assert missing_share({"14"}, "version: 5.0; release: 2009-02-14") == 1.0
    assert missing_share({"14"}, "version: 14; codename: forky") == 0.0
    record_item = item("code: TF-4031; HTTP status: 403; action: Create a new API key with the invoices:write scope")
    support = score_support(UnitEmbeddings(embedder), "how to fix TF-4031", [record_item], every_unit=True)
    assert support.unit_features[0].identifiers_found == 1.0  # its 4031 is the code's own, not a number apart
    assert identifiers("How do I reach the out-of-hours duty manager?") == {"out-of-hours"}  # a word, not a flag "-of-hours"
    assert identifiers("How many days of leave do part-time staff get?") == {"part-time"}  # not the "-time" of full-time
    assert identifiers("What does git stash --keep-index do?") == {"--keep-index"}
    (record,) = units_of(item("option: -n, --dry-run; description: Show what would be removed without removing it."))
    assert direct_answer("What does the --dry-run option do?", record, frozenset()) is None


def test_an_option_that_denies_what_is_asked_does_not_answer_it_beside_one_that_says_it(services):
    """grep's man page: ``--no-ignore-case`` ("Do not ignore case distinctions ...") shares every
    word of "Which grep option ignores case distinctions?" and answered it; ``-i`` is the answer.
    A question that asks for the opposite ("turns off", "not") may still be answered by it."""
    page = (b"GREP(1)\n\nNAME\n       grep - print lines that match patterns\n\nOPTIONS\n"
            b"   Matching Control\n"
            b"       -e PATTERNS, --regexp=PATTERNS\n              Use PATTERNS as the patterns.\n\n"
            b"       -i, --ignore-case\n              Ignore case distinctions in patterns and input data, so that\n"
            b"              characters that differ only in case match each other.\n\n"
            b"       --no-ignore-case\n              Do not ignore case distinctions in patterns and input data.\n"
            b"              This is the default.  This option is useful for passing to shell scripts that\n"
            b"              already use -i, to cancel its effects because the two options override each other.\n\n"
            b"       -v, --invert-match\n              Invert the sense of matching, to select non-matching lines.\n")
    add(services, page, "grep.1.txt")
    generator = ExtractiveGenerator(services.embedder, services.embeddings)
    answer = ask(services, SUPPORT, "Which grep option ignores case distinctions?", generator)
    assert answer.outcome == Outcome.ANSWERED and "--ignore-case" in answer.answer and "--no-ignore" not in answer.answer, answer
    opposite = ask(services, SUPPORT, "Which grep option turns off ignoring case?", generator)
    assert "--no-ignore-case" in (opposite.answer or "") + " ".join(c.text for c in opposite.closest), opposite


RESTRICTED = b"""6.10 The Restricted Shell
=========================

A restricted shell is used to set up an environment more controlled than the standard shell.
A restricted shell behaves identically to 'bash' with the exception that the following are
disallowed or not performed:

   * Changing directories with the 'cd' builtin.
   * Specifying command names containing slashes.
   * Redirecting output using the '>', '>|', '<>', '>&', '&>', and '>>'
     redirection operators.
   * Using the 'exec' builtin to replace the shell with another command.

These restrictions are enforced after any startup files are read.
"""


def test_one_item_of_a_list_is_quoted_with_the_sentence_that_says_what_the_list_is(services):
    """bash's RBASH: "* Changing directories with the 'cd' builtin." alone reads as allowed; the
    list is of what is disallowed. A question about the lead-in gets the list with it."""
    add(services, RESTRICTED, "RBASH")
    generator = ExtractiveGenerator(services.embedder, services.embeddings)
    lead = "the following are disallowed or not performed:"
    for question, item in (("Can I redirect output in a restricted shell?", "Redirecting output"),
                           ("In restricted bash, is changing directories with cd allowed?", "Changing directories")):
        answer = ask(services, SUPPORT, question, generator)
        text = " ".join((answer.answer or "").split())
        assert lead in text and item in text and text.index(lead) < text.index(item), answer
    listed = ask(services, SUPPORT, "What is disallowed in a restricted shell?", generator)
    assert all(item in (listed.answer or "") for item in ("Changing directories", "command names", "'exec' builtin")), listed


def test_a_value_leads_the_answer_only_from_a_sentence_about_what_was_asked(services):
    """"How many days of annual leave do part-time staff get?" was answered "27 days." off the
    full-time sentence beside the part-time one: the sentences answer it, not full-time's figure."""
    add(services, b"# Handbook\n\n## Annual leave\n\nFull-time staff receive 27 days of paid annual leave per calendar "
                  b"year, plus public holidays. Part-time staff receive leave pro rata to their contracted hours.\n", "handbook.md")
    generator = ExtractiveGenerator(services.embedder, services.embeddings)
    part = ask(services, SUPPORT, "How many days of annual leave do part-time staff get?", generator)
    assert part.outcome == Outcome.ANSWERED and "pro rata" in part.answer and not part.answer.startswith("27 days"), part
    full = ask(services, SUPPORT, "How many days of annual leave do full-time staff get?", generator)
    assert full.answer.startswith("27 days."), full


def test_a_time_of_day_written_out_answers_what_time(services):
    """"nine o'clock" is a time as "7:30" is: the sentence stating it answers "What time ...?"."""
    add(services, "# Café notes\n\nThe café opens at nine o’clock.\n\nThe bakery next door opens at 7:30.\n".encode(), "cafe.md")
    generator = ExtractiveGenerator(services.embedder, services.embeddings)
    answer = ask(services, SUPPORT, "What time does the café open?", generator)
    assert answer.outcome == Outcome.ANSWERED and "nine o’clock" in answer.answer and "7:30" not in answer.answer, answer
    assert [m.group(0) for m in DATE.finditer("at 9 am, 9.30 p.m., noon or twelve o'clock; I am here")] == [
        "9 am", "9.30 p.m", "noon", "twelve o'clock"]


def test_a_lead_in_brings_the_block_it_introduces():
    text = ("To use a 10 second timeout for pip freeze only, and 60 seconds for all other commands:\n\n"
            "[global]\ntimeout = 60\n[freeze]\ntimeout = 10\n\nA later paragraph. It has two sentences.")
    units = units_of(item(text))
    assert led_by(units, units[0]) == [units[1]] and "timeout = 10" in units[1].text
    assert led_by(units, units[1]) == []  # only a lead-in leads
    table = units_of(item("Libffi provides these type descriptors:\n\nterm: ffi_type_void; description: The type void.\n\n"
                          "term: ffi_type_pointer; description: A generic pointer."))
    assert led_by(table, table[0]) == []  # a table's first row is one of many, not what the lead-in leads to
    question = "How do I make pip use a 10 second timeout only for pip freeze?"
    row = UnitFeatures(**{name: 0.0 for name in UNIT_FEATURES})
    quoted = quoted_units(question, units[0], row, frozenset(wants(question)), units, None)
    assert quoted == units[:2]


def test_a_plural_ask_quotes_every_sentence_of_the_paragraph_holding_its_best():
    text = ("SSLv3 is disabled. TLSv1 and TLSv1.1 are disabled too. DTLSv1.0 is disabled as well.\n\n"
            "A later paragraph. It has two sentences.")
    units = units_of(item(text))
    row = UnitFeatures(**{name: 0.0 for name in UNIT_FEATURES})
    plural = "Which protocol versions are disabled?"
    assert [u.text for u in quoted_units(plural, units[1], row, frozenset(wants(plural)), units, None)] == [
        "SSLv3 is disabled.", "TLSv1 and TLSv1.1 are disabled too.", "DTLSv1.0 is disabled as well."]
    single = "Is TLSv1.1 disabled?"
    assert quoted_units(single, units[1], row, frozenset(wants(single)), units, None) == [units[1]]


def test_an_option_typeset_with_a_minus_sign_is_the_option_the_question_names(embedder):
    """groff sets an option's dashes as minus signs in a PDF ("\u2212\u2212atleast-version"): the
    question's "--atleast-version" names that option, not a missing one."""
    text = "\u2212\u2212atleast-version=VERSION Exit with error unless the module is at least VERSION. Other options follow."
    support = score_support(UnitEmbeddings(embedder), "What does --atleast-version do?", [item(text)], every_unit=True)
    by_text = {u.text: row.identifiers_found for u, row in zip(support.units, support.unit_features)}
    assert by_text[support.units[0].text] == 1.0 and "atleast" in support.units[0].text


def test_a_faq_question_is_context_a_lead_in_needs_its_list_and_a_row_needs_the_asked_column():
    from citewell.answers.extractive.eligible import answers_alone

    faq = units_of(item("A script runs xz -9 and fails. Can I make it work without editing it?\n\nYes: set XZ_DEFAULTS."))
    assert [(u.text, u.asked) for u in faq] == [
        ("Yes: set XZ_DEFAULTS.", "A script runs xz -9 and fails. Can I make it work without editing it?")]
    lead = units_of(item("Libffi provides these type descriptors, used as argument types:\n\nThe list is long. It is below."))
    assert not answers_alone(lead[0], lead, frozenset())
    rows = units_of(item("version: 14; codename: Forky; release: 2026-08-01\n\nversion: 15; codename: Duke; created: 2027-08-01"))
    asked = frozenset(stems("When was Debian 15 Duke released?"))
    assert [answers_alone(u, rows, frozenset(), asked) for u in rows] == [True, False]
    assert [answers_alone(u, rows, frozenset(), frozenset(stems("Which codename has Debian 15?"))) for u in rows] == [True, True]


def test_section_numbers_are_no_numbers_and_a_number_the_question_names_is_no_direct_answer():
    (heading, _) = units_of(item("2.3.1 Primitive Types\n\nLibffi provides built-in types.", ("2.3.1 Primitive Types",)))
    assert heading.heading and not heading.holds(Wants.NUMBER)
    (unit,) = units_of(item("Enforce 53-bit limit on integers."))
    question = "What is the orjson option to enforce the 53-bit integer limit?"
    assert direct_answer(question, unit, frozenset(wants(question))) is None
    assert Wants.NUMBER in wants("Which wget release fixed the cookie injection vulnerability?")


def test_contact_asks_for_a_person_as_a_noun_not_as_a_modifier():
    assert Wants.PERSON not in wants("How long are contact centre call recordings kept?")
    assert Wants.PERSON in wants("Who is the contact for payroll questions?")
    assert Wants.PERSON in wants("Whom do I contact about a lost badge?")


def test_a_row_asked_how_long_is_answered_by_its_period_not_by_its_owner(services):
    table = (b"# Records Retention\n\n| Record | Retention period | Owner |\n|---|---|---|\n"
             b"| Contact centre call recordings | 90 days | Customer Services |\n"
             b"| CCTV footage at treatment works | 31 days | Facilities |\n")
    add(services, table, "retention.md")
    answer = ask(services, SUPPORT, "How long are contact centre call recordings kept?")
    assert answer.outcome is Outcome.ANSWERED and answer.answer == "90 days [S1]", answer


def test_a_passage_sharing_only_its_documents_name_with_the_question_is_not_quoted(services):
    """"Who is the chief executive of Northpier?" meets "Northpier" in every passage of
    Northpier's handbook: that says what the document is about, not that it answers."""
    add(services, b"# Northpier Staff Handbook\n\nNorthpier Logistics runs container terminals in three ports.\n", "handbook.md")
    answer = ask(services, SUPPORT, "Who is the chief executive of Northpier?")
    assert answer.outcome is Outcome.NOT_FOUND and answer.answer is None, answer


def test_a_passage_that_shares_only_a_preposition_with_the_question_is_not_quoted(services):
    # Once the travel policy is gone, "per calendar year" of the leave rule is not near "per night".
    add(services, b"# Handbook\n\n## Annual leave\n\nFull-time staff receive 27 days of paid annual leave per calendar "
                  b"year, plus public holidays.\n", "handbook.md")
    assert "per" not in stems("How much is the hotel allowance per night in port cities?")
    answer = ask(services, SUPPORT, "How much is the hotel allowance per night in port cities?")
    assert answer.outcome == Outcome.NOT_FOUND and not answer.citations, answer


def test_a_close_call_between_two_statements_quotes_the_runner_up_beside_the_best(embedder):
    """When the unit model cannot tell which of two statements answers ("Note the relation to
    AccuracySec= above..." or the option's own "Defaults to 1min"), the answer quotes both, each
    cited; a runner-up far behind, or a model without the setting, quotes the best alone."""
    evidence = [
        item("Timers may coalesce with other timers to save power, within the accuracy window of the timer.", ("Timers",)),
        EvidenceItem(ref="S2", document_id="e", revision="r", title="T2", section_path=["Options"],
                     text="Accuracy of a timer defaults to one minute.",
                     spans=[EvidenceSpan(chunk_id="e#0#0", section_path=["Options"], start=0, end=43)], rank=2),
    ]
    question = "What is the accuracy window of a timer?"
    unit = LogisticModel(features=("cosine", "coverage"), weights=[0.0, 4.0], bias=-2.0)  # the first covers more of the question
    always = LogisticModel(features=("best_unit",), weights=[0.0], bias=10.0)

    def answer(runner_up: float | None) -> str:
        model = RefusalModel(unit=unit, answer=always, runner_up=runner_up)
        return ExtractiveGenerator(embedder, None, model).generate(question, evidence).text

    both = answer(0.3)
    assert both.startswith("Timers may coalesce") and "[S1]" in both
    assert both.endswith("Accuracy of a timer defaults to one minute. [S2]")
    assert "[S2]" not in answer(0.99) and "[S2]" not in answer(None)


def test_a_list_question_about_one_definition_is_answered_by_it_not_by_the_whole_list():
    """Records of one kind (a manual's definitions) form a table; a question for several things
    gets the table only when it is about the table, not when one row's words single it out."""
    rows = [f"term: tf_type_{name}; description: The C {name} type." for name in ("int", "long", "short", "float")]
    rows.insert(2, "term: tf_type_schar; description: The C signed char type. (There is no exact equivalent of plain "
                   "char: use tf_type_schar or tf_type_uchar.)")
    units = units_of(item("\n\n".join(rows)))
    row = {"context_coverage": 0.0, "coverage": 1.0}
    single = _list_for("Which type descriptors replace plain char, which has no exact equivalent?", units[2], row,
                       frozenset({Wants.LIST}), units)
    assert single == (None, [units[2]])
    whole = _list_for("Which C types are there descriptors for?", units[0], row, frozenset({Wants.LIST}), units)
    assert whole[1] == units


def test_a_record_is_named_by_a_value_the_question_writes_whole():
    """The row a question asks about is the one whose key or value it writes: a keyword in
    quotes, a format letter with its sign, a number, an option with its comma-separated forms."""
    from citewell.answers.extractive.direct import names_a_field

    assert names_a_field("Which mount options does the fstab keyword 'defaults' stand for?",
                         "term: defaults; description: use default options: rw, suid, nouser, and async.")
    assert names_a_field("In a GNU time format string, what does %x print?", "term: x; description: Exit status of the command.")
    assert not names_a_field("What does x print?", "term: x; description: Exit status of the command.")  # a letter alone is a word
    assert names_a_field("Which errno name is error number 111?", "Name: ECONNREFUSED; Number: 111; Description: Connection refused")
    assert not names_a_field("Which errno name is error number 1111?", "Name: ECONNREFUSED; Number: 111; Description: Connection refused")
    assert names_a_field("What does --dry-run do?", "option: -n, --dry-run; description: Do nothing.")
    assert names_a_field("journald SyncIntervalSec default", "option: SyncIntervalSec=; description: The timeout.")
    assert not names_a_field("What is it for?", "term: for; description: a loop.")  # a function word names nothing
    # a lone digit is a value where the question writes it as a status, and a word of a count otherwise
    assert names_a_field("useradd exited with status 9 - what went wrong?",
                         "exit value: 9; description: username or group name already in use")
    assert names_a_field("xsltproc returned 4. What does that code mean?", "term: 4; description: Failed to parse the stylesheet")
    assert not names_a_field("Name 9 things the tool does.", "exit value: 9; description: username or group name already in use")
