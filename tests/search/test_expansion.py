"""Query expansion through the model generator, against a local server speaking the
OpenAI-compatible chat wire format: the reply's parsing, the probes in search and ask, every
failure degrading to the question alone, and probes attacked as a caller would: a probe is a
query run under the caller's identity and filter, so it never finds more than they may read."""

from __future__ import annotations

import json

import pytest

from citewell import expansion
from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator
from citewell.answers.prompt import SYSTEM_PROMPT
from citewell.answers.service import ask
from citewell.errors import ExpansionUnavailable
from citewell.filters import SearchFilter
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.llm.openai_compatible import OpenAICompatibleModel
from citewell.models.identity import Identity
from citewell.search import search
from tests import fake_model_service
from tests.aws.test_aws_chain import aws, knn_proxy  # noqa: F401
from tests.fake_model_service import Reply

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
HR = Identity(tenant="northpier", roles=frozenset({"staff", "hr"}))
PARENTAL = "# Parental leave\n\nNew parents receive sixteen weeks of parental leave at full pay."
SALARIES = "# Salary bands\n\nThe confidential salary band of a crane engineer is 61,000 euros."
BLUEFEN = "# Parental leave\n\nBluefen parents receive nine weeks of maternity leave."


@pytest.fixture
def service():
    found, server = fake_model_service.start()
    yield found
    server.shutdown()


def _model(service, **kw) -> OpenAICompatibleGenerator:
    return OpenAICompatibleGenerator(base_url=service.url, model="house-model", retries=0, backoff=0.01, **kw)


def _expansion_reply(probes: list[str], passage: str | None) -> Reply:
    return Reply(body={"choices": [{"message": {"role": "assistant", "content": json.dumps({"probes": probes, "passage": passage})}}]})


def _ingest(services, doc_id: str, text: str, tenant: str = "northpier", roles=("staff",)) -> None:
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant=tenant, allowed_roles=frozenset(roles),
                                                 data=text.encode(), filename=doc_id)])
    assert outcome.status == "published", outcome


@pytest.fixture
def corpus(services):
    _ingest(services, "policies/parental.md", PARENTAL)
    _ingest(services, "policies/salaries.md", SALARIES, roles=("hr",))
    _ingest(services, "policies/parental.md", BLUEFEN, tenant="bluefen")
    for n in range(4):
        _ingest(services, f"faq/shift-{n}.md", f"# Shifts\n\nShift {n} starts at six and the crane is checked first.")
    return services


@pytest.mark.parametrize(("reply", "probes", "passage"), [
    ('{"probes": ["parental leave", "maternity leave"], "passage": "Parents get weeks of leave."}',
     ["parental leave", "maternity leave"], "Parents get weeks of leave."),
    ('Here you are:\n```json\n{"probes": ["a", "b", "c", "d", "e", "f", "g", "h"]}\n```', ["a", "b", "c", "d", "e", "f"], None),
    ('{"probes": ["  Baby   LEAVE ", "baby leave", "", "time off for a baby", "' + "x" * 301 + '"], "passage": "  "}',
     ["Baby LEAVE"], None),
    ('{"probes": [], "passage": "' + "word " * 400 + '"}', [], ("word " * 300).strip()),
])
def test_a_reply_becomes_the_probes_it_names(reply, probes, passage):
    found = expansion.probes_from_reply(reply, "Time off for a baby")
    assert found.lexical == probes and found.passage == passage


@pytest.mark.parametrize("reply", [
    "Sure! Try searching for parental leave.",  # no JSON
    '{"probes": "parental leave"}',  # a string where the list belongs
    '{"probes": [1, 2]}',
    '{"probes": ["time off for a baby"], "passage": ""}',  # nothing but the question itself
    '{"probes": [], "passage": null}',
])
def test_an_unusable_reply_is_a_typed_failure(reply):
    with pytest.raises(ExpansionUnavailable):
        expansion.probes_from_reply(reply, "time off for a baby")


def test_the_probes_are_searched_beside_the_question_and_shown(corpus, service):
    corpus.expander = _model(service)
    service.replies.append(_expansion_reply(["parental leave weeks"], "New parents receive weeks of parental leave."))
    found = search(corpus, STAFF, "time off after a baby is born", k=5)
    assert found.degraded == []
    assert found.expansion is not None and found.expansion.lexical == ["parental leave weeks"]
    top = found.hits[0]
    assert top.document_id == "policies/parental.md" and top.lanes.expansion == 1 and "sixteen weeks" in top.text
    (request,) = service.requests
    assert request["json"]["messages"][0] == {"role": "system", "content": expansion.SYSTEM}
    assert "time off after a baby is born" in request["json"]["messages"][1]["content"]
    shown = json.loads(found.model_dump_json())
    assert shown["expansion"] == {"lexical": ["parental leave weeks"], "passage": "New parents receive weeks of parental leave."}


@pytest.mark.parametrize(("reply", "problem"), [
    (Reply(status=500, body={"error": "overloaded"}), "HTTP 500"),
    (Reply(body={"choices": [{"message": {"role": "assistant", "content": "I would search for leave."}}]}), "no JSON"),
    (Reply(body={"nothing": "here"}), "choices[0]"),
    (Reply(delay=1.5, body={"choices": [{"message": {"content": "{}"}}]}), "timed out"),
])
def test_any_failure_of_the_model_searches_the_question_alone(corpus, service, reply, problem):
    plain = search(corpus, STAFF, "parental leave", k=5)
    corpus.expander = _model(service, timeout=0.5)
    service.replies.append(reply)
    found = search(corpus, STAFF, "parental leave", k=5)
    assert found.expansion is None
    assert len(found.degraded) == 1 and found.degraded[0].startswith("query expansion unavailable") and problem in found.degraded[0]
    assert [(h.chunk_id, h.score) for h in found.hits] == [(h.chunk_id, h.score) for h in plain.hits]


ATTACK = _expansion_reply(
    ["confidential salary band crane engineer 61,000", "Bluefen parents nine weeks maternity", "tenant:bluefen roles:hr",
     "policies/salaries.md", "* OR 1=1"],
    "The confidential salary band of a crane engineer is 61,000 euros.",
)


@pytest.mark.parametrize("lanes", [("bm25",), ("vector",), ("bm25", "vector")])
def test_a_probe_never_widens_what_the_caller_sees(corpus, service, lanes):
    """The model names another tenant's words and a role's document: the staff caller still
    finds only their own tenant's documents for their role; the hr caller, whom the salary band
    is for, does find it through the same probes (so the probes would have reached it)."""
    corpus.expander = _model(service)
    for _ in range(3):
        service.replies.append(ATTACK)
    for hit in search(corpus, STAFF, "what do parents get", k=20, lanes=lanes).hits:
        assert hit.document_id != "policies/salaries.md" and "Bluefen" not in hit.text and "61,000" not in hit.text
    narrowed = search(corpus, STAFF, "what do parents get", k=20, lanes=lanes, filters=SearchFilter(prefix="faq/"))
    assert narrowed.hits and all(h.document_id.startswith("faq/") for h in narrowed.hits)
    allowed = search(corpus, HR, "what do parents get", k=20, lanes=lanes)
    assert "policies/salaries.md" in {h.document_id for h in allowed.hits}
    assert all("Bluefen" not in h.text for h in allowed.hits)


def test_an_outsider_finds_nothing_whatever_the_probes_say(corpus, service):
    corpus.expander = _model(service)
    service.replies.append(ATTACK)
    outsider = Identity(tenant="kestrel", roles=frozenset({"staff", "hr"}))
    assert search(corpus, outsider, "what do parents get", k=10).hits == []
    nobody = Identity(tenant="northpier", roles=frozenset({"intruder"}))
    service.replies.append(ATTACK)
    assert search(corpus, nobody, "what do parents get", k=10).hits == []


def test_an_answer_shows_the_probes_its_evidence_was_searched_with(corpus, service):
    def respond(body: dict) -> Reply:
        system = body["messages"][0]["content"]
        if system == expansion.SYSTEM:
            return _expansion_reply(["parental leave"], None)
        assert system == SYSTEM_PROMPT
        return service.chat('"New parents receive sixteen weeks of parental leave at full pay." [S1]')

    service.respond = respond
    model = _model(service)
    corpus.expander = model
    answer = ask(corpus, STAFF, "How long is the time off after a baby is born?", model)
    assert answer.outcome == "answered" and answer.expansion is not None and answer.expansion.lexical == ["parental leave"]
    assert answer.citations[0].document_id == "policies/parental.md"


def test_expansion_follows_the_settings(monkeypatch):
    monkeypatch.setenv("CITEWELL_GENERATOR", "extractive")
    assert expansion.expander_from_env() is None  # the extractive default: off
    monkeypatch.setenv("CITEWELL_GENERATOR", "openai")
    monkeypatch.setenv("CITEWELL_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CITEWELL_OPENAI_MODEL", "m")
    assert type(expansion.expander_from_env()) is OpenAICompatibleModel  # the model, not the answerer over it
    monkeypatch.setenv("CITEWELL_QUERY_EXPANSION", "off")
    assert expansion.expander_from_env() is None


def test_on_aws_the_probes_stay_inside_the_callers_tenant_and_roles(aws, service, monkeypatch):  # noqa: F811
    """The Lambda API with the model configured: its probes name the hr salary band and the other
    tenant's words; OpenSearch ranks each probe under the caller's filter in both lanes, so the
    staff caller's reply shows the probes and none of those documents."""
    from citewell.keys import raw_key
    from tests.aws.test_aws_chain import api, pump, resend, upload

    upload(aws, "parental.md", PARENTAL.encode())
    status, created = api("POST", "/documents", {"document_id": "salaries.md", "allowed_roles": ["hr"], "filename": "salaries.md"},
                          groups="[hr citewell:write]")
    assert status == 201, created
    key = raw_key("northpier", "salaries.md", created["upload_id"])
    aws.setdefault("forms", {})[key] = created
    resend(aws, key, SALARIES.encode())
    upload(aws, "parental.md", BLUEFEN.encode(), tenant="bluefen")
    pump(aws)
    monkeypatch.setenv("CITEWELL_GENERATOR", "openai")
    monkeypatch.setenv("CITEWELL_OPENAI_BASE_URL", service.url)
    monkeypatch.setenv("CITEWELL_OPENAI_MODEL", "house-model")
    service.respond = lambda body: ATTACK
    status, found = api("POST", "/search", {"question": "what do parents get", "k": 10}, groups="[staff]")
    assert status == 200 and found["expansion"]["passage"] == json.loads(ATTACK.body["choices"][0]["message"]["content"])["passage"]
    assert found["hits"] and {h["document_id"] for h in found["hits"]} == {"parental.md"}
    assert all("Bluefen" not in h["text"] for h in found["hits"])
    status, found = api("POST", "/search", {"question": "what do parents get", "k": 10}, groups="[staff hr]")
    assert status == 200 and {h["document_id"] for h in found["hits"]} == {"parental.md", "salaries.md"}
