"""Whole-document and section reads: stable section ids, snapshots pinned to the served revision
and refused over the budget (never cut), the same not-found for what the caller may not read,
and a model given the whole document or section its evidence comes from, its quotes still bound
to chunk ids of that revision."""

from __future__ import annotations

import json

import pytest

from citewell.answers.generators.openai_compatible import OpenAICompatibleGenerator
from citewell.answers.prompt import SYSTEM_PROMPT
from citewell.answers.service import ask
from citewell.cli import main
from citewell.errors import NotFound, OverBudget
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.chunks import section_id
from citewell.models.identity import Identity
from citewell.reads import read
from citewell.search import search
from tests import fake_model_service
from tests.conftest import make_services

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
HANDBOOK = (
    "# Handbook\n\n## Annual leave\n\nFull-time staff receive 27 days of paid annual leave per calendar year.\n\n"
    "Leave is booked through the rota office two weeks ahead.\n\n"
    "## Sick leave\n\nReport sickness to your shift lead before your shift starts.\n"
)
PARTS = ["boom", "hook", "cable", "brake", "winch", "mast", "cab", "ballast", "slew ring", "jib", "trolley", "pulley"]
LONG = "# Manual\n\n" + "".join(f"## Part {n}\n\n" + f"The crane part {n}, the {part}, is looked at every morning. " * 12 + "\n\n"
                                for n, part in enumerate(PARTS))


def _ingest(services, doc_id: str, text: str, tenant: str = "northpier", roles=("staff",)) -> None:
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant=tenant, allowed_roles=frozenset(roles),
                                                 data=text.encode(), filename=doc_id)])
    assert outcome.status in ("published", "unchanged"), outcome


@pytest.fixture
def corpus(services):
    _ingest(services, "handbook.md", HANDBOOK)
    _ingest(services, "manual.md", LONG)
    _ingest(services, "hr/salaries.md", "# Salary bands\n\nA shift lead earns 41,000 euros.", roles=("hr",))
    _ingest(services, "handbook.md", "# Bluefen handbook\n\nBluefen staff receive 25 days of annual leave.", tenant="bluefen")
    return services


def test_a_whole_read_is_the_served_revisions_text_and_its_sections(corpus):
    snapshot = read(corpus, STAFF, "handbook.md", budget=6000)
    document = corpus.documents.get_document("northpier", "handbook.md")
    assert snapshot.revision == document.active_revision and snapshot.section is None
    assert "27 days" in snapshot.text and "Report sickness" in snapshot.text and snapshot.chars == len(snapshot.text)
    chunks = corpus.chunks.get_chunks("northpier", "handbook.md", document.active_revision)
    assert [s.section_id for s in snapshot.sections] == list(dict.fromkeys(
        section_id(c.revision, c.section_index, c.heading_path) for c in sorted(chunks, key=lambda c: c.start)))
    assert read(corpus, STAFF, "handbook.md", budget=6000) == snapshot  # the same ids on every read


def test_a_section_is_read_by_the_id_a_search_hit_carries(corpus):
    (hit,) = search(corpus, STAFF, "report sickness shift lead", k=1).hits
    snapshot = read(corpus, STAFF, "handbook.md", budget=6000, section=hit.section_id)
    assert snapshot.section is not None and snapshot.section.section_id == hit.section_id
    assert snapshot.section.heading_path[-1] == "Sick leave" and snapshot.sections == [snapshot.section]
    assert "Report sickness" in snapshot.text and "27 days" not in snapshot.text


def test_over_the_budget_a_read_is_refused_never_cut(corpus):
    whole = read(corpus, STAFF, "manual.md", budget=100_000)
    with pytest.raises(OverBudget) as refused:
        read(corpus, STAFF, "manual.md", budget=whole.chars - 1)
    assert refused.value.chars == whole.chars and refused.value.budget == whole.chars - 1
    assert "section" in refused.value.message and refused.value.as_dict()["code"] == "over_budget"
    part = whole.sections[3]
    assert read(corpus, STAFF, "manual.md", budget=part.chars, section=part.section_id).chars == part.chars
    with pytest.raises(OverBudget):
        read(corpus, STAFF, "manual.md", budget=part.chars - 1, section=part.section_id)


def test_a_section_id_names_one_revision(corpus):
    old = read(corpus, STAFF, "handbook.md", budget=6000)
    _ingest(corpus, "handbook.md", HANDBOOK.replace("27 days", "28 days"))
    new = read(corpus, STAFF, "handbook.md", budget=6000)
    assert new.revision != old.revision and "28 days" in new.text
    assert {s.section_id for s in new.sections}.isdisjoint(s.section_id for s in old.sections)
    with pytest.raises(NotFound, match="names one revision"):
        read(corpus, STAFF, "handbook.md", budget=6000, section=old.sections[1].section_id)


@pytest.mark.parametrize(("who", "document_id"), [
    (Identity(tenant="bluefen", roles=frozenset({"staff", "hr"})), "hr/salaries.md"),  # another tenant's
    (STAFF, "hr/salaries.md"),  # a role the caller lacks
    (Identity(tenant="northpier", roles=frozenset()), "handbook.md"),  # no roles at all
    (STAFF, "nowhere.md"),  # nothing there
])
def test_what_the_caller_may_not_read_is_not_found_alike(corpus, who, document_id):
    with pytest.raises(NotFound) as refused:
        read(corpus, who, document_id, budget=6000)
    assert refused.value.message == f"no such document {document_id!r} for this caller"
    hr = corpus.documents.get_document("northpier", "hr/salaries.md")
    sid = section_id(hr.active_revision, 0, ["Salary bands"])
    with pytest.raises(NotFound):
        read(corpus, who, document_id, budget=6000, section=sid)


def test_the_bluefen_document_of_the_same_id_is_bluefens_own(corpus):
    snapshot = read(corpus, Identity(tenant="bluefen", roles=frozenset({"staff"})), "handbook.md", budget=6000)
    assert "25 days" in snapshot.text and "27 days" not in snapshot.text


def test_the_cli_reads_and_refuses_with_a_typed_error(tmp_path, embedder, capsys, monkeypatch):
    home = tmp_path / "home"
    services = make_services(home, embedder)
    _ingest(services, "manual.md", LONG)
    _ingest(services, "hr/salaries.md", "# Salary bands\n\nA shift lead earns 41,000 euros.", roles=("hr",))
    monkeypatch.setenv("CITEWELL_EVIDENCE_CHARS", "100000")
    assert main(["--home", str(home), "read", "manual.md", "--tenant", "northpier", "--roles", "staff", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["document_id"] == "manual.md" and whole["budget"] == 100000 and len(whole["sections"]) == 12
    part = whole["sections"][4]
    assert main(["--home", str(home), "read", "manual.md", "--section", part["section_id"], "--tenant", "northpier",
                 "--roles", "staff", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["section"] == part
    monkeypatch.setenv("CITEWELL_EVIDENCE_CHARS", "1000")
    assert main(["--home", str(home), "read", "manual.md", "--tenant", "northpier", "--roles", "staff", "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"] == {"code": "over_budget", "message": err.strip().removeprefix("citewell: ")}
    assert f"'manual.md' is {whole['chars']:,} characters, over the budget of 1,000" in err
    assert main(["--home", str(home), "read", "hr/salaries.md", "--tenant", "northpier", "--roles", "staff"]) == 2
    assert "no such document 'hr/salaries.md'" in capsys.readouterr().err
    assert main(["--home", str(home), "read", "manual.md", "--section", part["section_id"], "--tenant", "northpier",
                 "--roles", "staff"]) == 0  # the text as it stands, for people
    shown = capsys.readouterr().out
    assert "manual.md" in shown and "The crane part 4, the winch, is looked at" in shown


@pytest.fixture
def model():
    found, server = fake_model_service.start()
    yield found
    server.shutdown()


def _prompted_sources(request: dict) -> str:
    return request["json"]["messages"][1]["content"]


def test_a_model_is_given_the_whole_document_its_evidence_comes_from(corpus, model):
    """The question finds the annual-leave passage; the model is sent the whole handbook (one
    source) and quotes a sentence of another section, which the passage alone did not hold: the
    citation is bound to that sentence's chunk, of the served revision."""
    model.replies.append(model.chat('"Report sickness to your shift lead before your shift starts." [S1]'))
    generator = OpenAICompatibleGenerator(base_url=model.url, model="house-model", retries=0)
    answer = ask(corpus, STAFF, "How many days of paid annual leave do full-time staff receive per calendar year?",
                 generator, budget_chars=6000, filters=None)
    (request,) = model.requests
    assert request["json"]["messages"][0]["content"] == SYSTEM_PROMPT
    first = _prompted_sources(request).split("</source>")[0]
    assert first.startswith('<sources>\n<source id="S1" title="Handbook" section="">')
    assert "27 days" in first and "Leave is booked" in first and "Report sickness" in first
    assert answer.read == "document" and answer.outcome == "answered"
    (citation,) = answer.citations
    document = corpus.documents.get_document("northpier", "handbook.md")
    chunks = {c.chunk_id: c for c in corpus.chunks.get_chunks("northpier", "handbook.md", document.active_revision)}
    assert citation.revision == document.active_revision and "Report sickness" in chunks[citation.chunk_id].text


def test_a_model_is_given_one_section_when_the_document_is_over_the_budget(corpus, model):
    model.replies.append(model.chat("NOT_IN_DOCUMENTS"))
    generator = OpenAICompatibleGenerator(base_url=model.url, model="house-model", retries=0)
    whole = read(corpus, STAFF, "manual.md", budget=100_000)
    ask(corpus, STAFF, "winch?", generator, budget_chars=whole.chars - 1, lanes=("bm25",))
    first = _prompted_sources(model.requests[0]).split("</source>")[0]
    assert 'section="Manual &gt; Part 4"' in first and first.count("the winch, is looked at") == 12
    assert "the brake" not in first and "the mast" not in first


def test_evidence_from_one_document_is_that_document_alone(tmp_path, embedder, model):
    services = make_services(tmp_path, embedder)
    _ingest(services, "handbook.md", HANDBOOK)
    model.replies.append(model.chat('"Leave is booked through the rota office two weeks ahead." [S1]'))
    generator = OpenAICompatibleGenerator(base_url=model.url, model="house-model", retries=0)
    answer = ask(services, STAFF, "How is annual leave booked?", generator)
    sources = _prompted_sources(model.requests[0])
    assert sources.count("<source ") == 1 and "27 days" in sources and "Report sickness" in sources
    assert answer.read == "document" and answer.outcome == "answered"


def test_a_model_quoting_another_readers_document_is_still_rejected(corpus, model):
    """Given the whole handbook, the model quotes the salary band (a document staff may not
    read): the verifier accepts quotes of the sources given only, so the draft is rejected."""
    model.replies.append(model.chat('"A shift lead earns 41,000 euros." [S1]'))
    generator = OpenAICompatibleGenerator(base_url=model.url, model="house-model", retries=0)
    answer = ask(corpus, STAFF, "How many days of paid annual leave do full-time staff receive per calendar year?",
                 generator, budget_chars=6000)
    assert all("41,000" not in (c.quote or "") for c in answer.citations)
    assert any(note.startswith("draft rejected") for note in answer.degraded)


def test_the_extractive_answerer_keeps_its_passages(corpus):
    answer = ask(corpus, STAFF, "How many days of paid annual leave do full-time staff receive per calendar year?")
    assert answer.read is None and answer.outcome == "answered"
