"""Query-time filters, held to the access filter's invariant and attacked like it: a filter is
resolved against the records to the caller's documents, ranked inside in each lane, and can
only narrow what the caller may read."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from citewell import filters as filters_module
from citewell.answers.service import ask
from citewell.errors import InvalidInput
from citewell.filters import SearchFilter
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.documents import Document, TrustTier
from citewell.models.identity import Identity
from citewell.search import search
from tests.aws.test_aws_chain import aws, knn_proxy  # noqa: F401
from tests.contract.test_contract_metadata import store  # noqa: F401

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))
JAN, JUL = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC)


def record(doc_id: str, tenant: str = "northpier", roles=("staff",), **described) -> Document:
    return Document(document_id=doc_id, tenant=tenant, allowed_roles=frozenset(roles), title=doc_id, source=f"test:{doc_id}",
                    **described)


RECORDS = [
    record("policies/leave.md", tags=frozenset({"hr", "2026"}), locale="en-GB", effective_from=JAN, effective_until=JUL),
    record("policies/leave-old.md", tags=frozenset({"hr"}), effective_until=JAN),
    record("policies0.md", locale="de"),  # sorts right after "policies/": a prefix's end
    record("policiesX/a.md", locale="EN"),
    record("handbook.md", tags=frozenset({"2026"}), locale="fr-CA", authority=True, trust_tier=TrustTier.PRIMARY),
    record("salaries.md", roles=("hr",), tags=frozenset({"hr"})),  # the staff caller may not read it
    record("policies/leave.md", tenant="bluefen", tags=frozenset({"hr"})),  # another tenant's, same id
]
FILTERS = [
    SearchFilter(prefix="policies/"),
    SearchFilter(document_ids=frozenset({"handbook.md", "salaries.md", "nowhere.md"})),
    SearchFilter(source="test:handbook.md"),
    SearchFilter(tags=frozenset({"hr"})),
    SearchFilter(tags=frozenset({"hr", "2026"})),
    SearchFilter(locale="en"),
    SearchFilter(locale="fr-CA"),
    SearchFilter(locale="fr"),
    SearchFilter(effective_on=date(2025, 12, 31)),
    SearchFilter(effective_on=date(2026, 1, 1)),
    SearchFilter(effective_on=date(2026, 7, 1)),
    SearchFilter(prefix="policies/", tags=frozenset({"hr"}), effective_on=date(2026, 3, 1)),
]


@pytest.mark.parametrize("wanted", FILTERS, ids=lambda f: f.key())
def test_every_store_resolves_a_filter_as_the_predicate_decides(store, wanted):  # noqa: F811
    for r in RECORDS:
        assert store.save_document(r.model_copy(update={"generation": "a" * 32}))
    expected = {r.document_id for r in RECORDS if STAFF.can_see(r.tenant, r.allowed_roles) and wanted.admits(r)}
    assert store.find_documents(STAFF, wanted) == expected
    assert "salaries.md" not in store.find_documents(STAFF, wanted)  # never a document the caller may not read


def test_a_documents_tags_follow_its_record(store):  # noqa: F811
    """A store that looks tags up by key keeps them with the record: rewritten, and gone with a delete."""
    stored = store.save_document(record("a.md", tags=frozenset({"hr"})))
    hr, legal = SearchFilter(tags=frozenset({"hr"})), SearchFilter(tags=frozenset({"legal"}))
    assert store.find_documents(STAFF, hr) == {"a.md"}
    assert store.save_document(stored.model_copy(update={"tags": frozenset({"legal"})}))
    assert (store.find_documents(STAFF, hr), store.find_documents(STAFF, legal)) == (frozenset(), {"a.md"})
    assert store.save_document(stored.model_copy(update={"tags": frozenset()})) is None  # a lost race writes no tags
    assert store.find_documents(STAFF, legal) == {"a.md"}
    store.delete_document("northpier", "a.md")
    assert store.find_documents(STAFF, legal) == frozenset()


def test_a_filter_admitting_too_many_documents_is_refused(store, monkeypatch):  # noqa: F811
    for r in RECORDS:
        store.save_document(r)
    monkeypatch.setattr(filters_module, "MAX_SCOPE", 1)  # "policies/" admits two
    with pytest.raises(InvalidInput, match="narrow it"):
        store.find_documents(STAFF, SearchFilter(prefix="policies/"))


@pytest.mark.parametrize(("given", "problem"), [
    ({"prefix": "policies"}, "ending in '/'"),
    ({"prefix": "../"}, "relative path"),
    ({"document_ids": "handbook.md"}, "list of strings"),
    ({"document_ids": ["a#b"]}, "'#'"),
    ({"tags": ["hr,staff"]}, "commas"),
    ({"locale": "en_GB"}, "language tag"),
    ({"effective_on": "next week"}, "date"),
    ({"tenant": "bluefen"}, "Extra inputs"),
    ({"roles": ["hr"]}, "Extra inputs"),
    ({"document_ids": [f"d{i}" for i in range(101)]}, "at most 100"),
])
def test_a_malformed_filter_says_what_is_wrong(given, problem):
    with pytest.raises(ValidationError, match=problem):
        SearchFilter.model_validate(given)


def _ingest(services, doc_id: str, text: str, tenant: str = "northpier", roles=("staff",), **described) -> None:
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant=tenant, allowed_roles=frozenset(roles),
                                                 data=text.encode(), filename=doc_id, **described)])
    assert outcome.status == "published", outcome


@pytest.fixture
def corpus(services):
    for n in range(12):  # many passages about leave that outrank the one the filter names
        _ingest(services, f"faq/leave-{n}.md", f"# Annual leave\n\nAnnual leave: how annual leave days of leave work, note {n}.")
    _ingest(services, "policies/leave.md", "# Leave policy\n\nStaff receive 27 days of paid leave.", tags=frozenset({"hr"}),
            locale="en-GB", effective_from=JAN)
    _ingest(services, "policies/salary.md", "# Salary\n\nAnnual leave is not paid out with salary.", roles=("hr",),
            tags=frozenset({"hr"}))
    _ingest(services, "policies/leave.md", "# Leave\n\nBluefen staff receive 31 days of annual leave.", tenant="bluefen",
            tags=frozenset({"hr"}))
    return services


def test_a_filtered_search_ranks_inside_the_filter_before_its_top_k(corpus):
    unfiltered = search(corpus, STAFF, "annual leave days", k=3)
    assert all(h.document_id.startswith("faq/") for h in unfiltered.hits)
    for wanted in (SearchFilter(document_ids=frozenset({"policies/leave.md"})), SearchFilter(prefix="policies/"),
                   SearchFilter(tags=frozenset({"hr"})), SearchFilter(locale="en-GB"),
                   SearchFilter(prefix="policies/", effective_on=date(2026, 5, 1))):
        found = search(corpus, STAFF, "annual leave days", k=1, filters=wanted)
        assert [h.document_id for h in found.hits] == ["policies/leave.md"], wanted
        assert "27 days" in found.hits[0].text  # this tenant's, never bluefen's
    # Before its window opened: the faq passages (no window) are, the policy is not.
    found = search(corpus, STAFF, "annual leave days", k=20, filters=SearchFilter(effective_on=date(2025, 5, 1)))
    assert found.hits and all(h.document_id.startswith("faq/") for h in found.hits)


@pytest.mark.parametrize("lanes", [("bm25",), ("vector",), ("bm25", "vector")])
def test_a_filter_never_widens_what_the_caller_may_read(corpus, lanes):
    """Naming another tenant's document, one the caller's roles do not open, or a tag only those
    carry, finds nothing more than the caller could read unfiltered."""
    attacks = [
        SearchFilter(document_ids=frozenset({"policies/salary.md"})),
        SearchFilter(prefix="policies/", tags=frozenset({"hr"}), locale="en"),
        SearchFilter(document_ids=frozenset({"policies/leave.md"}), source="file:/elsewhere"),
    ]
    for wanted in attacks:
        for hit in search(corpus, STAFF, "annual leave salary paid out", k=10, lanes=lanes, filters=wanted).hits:
            assert hit.document_id == "policies/leave.md" and "Bluefen" not in hit.text
    outsider = Identity(tenant="kestrel", roles=frozenset({"staff", "hr"}))
    assert search(corpus, outsider, "annual leave", k=10, lanes=lanes, filters=SearchFilter(prefix="policies/")).hits == []
    nobody = Identity(tenant="northpier", roles=frozenset({"intruder"}))
    assert search(corpus, nobody, "annual leave", k=10, lanes=lanes, filters=SearchFilter(document_ids=frozenset(
        {"policies/leave.md", "policies/salary.md"}))).hits == []


def test_a_filtered_answer_is_not_an_unfiltered_answer_from_the_cache(corpus):
    question = "How many days of leave do staff receive?"
    narrowed = ask(corpus, STAFF, question, filters=SearchFilter(prefix="policies/"))
    assert not narrowed.refused and "27 days" in narrowed.answer, narrowed  # only answers are cached
    everything = ask(corpus, STAFF, question)
    assert everything.answer_id != narrowed.answer_id  # a filtered answer is never served for an unfiltered ask
    assert all(c.document_id.startswith("policies/") for c in narrowed.citations)
    assert ask(corpus, STAFF, question, filters=SearchFilter(prefix="policies/")).answer_id == narrowed.answer_id  # its own key


def test_the_descriptive_fields_reach_the_record(corpus):
    (document,) = [d for d in corpus.documents.list_documents("northpier") if d.document_id == "policies/leave.md"]
    assert (document.tags, document.locale, document.effective_from) == (frozenset({"hr"}), "en-GB", JAN)
    assert json.loads(document.model_dump_json())["tags"] == ["hr"]


def test_the_api_takes_descriptive_fields_and_filters_on_aws(aws, monkeypatch):  # noqa: F811
    """Through the real handlers on moto and osmem-server with the kNN stand-in: both lanes
    filtered inside OpenSearch's queries."""
    from tests.api.test_api_hardening import call, refused
    from tests.aws.test_aws_chain import HANDBOOK, api, post_upload, pump

    status, created = api("POST", "/documents", {"document_id": "policies/leave.md", "allowed_roles": ["staff"],
                                                 "filename": "leave.md", "tags": ["hr"], "locale": "en-GB",
                                                 "authority": True, "trust_tier": "primary", "effective_from": "2026-01-01"})
    assert status == 201, created
    assert post_upload(created, HANDBOOK).status_code in (200, 204)
    status, other = api("POST", "/documents", {"document_id": "faq.md", "allowed_roles": ["staff"], "filename": "faq.md"})
    assert post_upload(other, b"# Leave\n\nAnnual leave days: ask the office about annual leave.\n").status_code in (200, 204)
    pump(aws)
    status, shown = api("GET", "/documents/policies%2Fleave.md")
    assert status == 200 and (shown["document"]["tags"], shown["document"]["locale"], shown["document"]["authority"]) == (
        ["hr"], "en-GB", True)
    assert shown["document"]["effective_from"].startswith("2026-01-01T00:00:00")
    for filters in ({"prefix": "policies/"}, {"tags": ["hr"]}, {"locale": "en-gb"}, {"document_ids": ["policies/leave.md"]}):
        status, found = api("POST", "/search", {"question": "annual leave", "k": 10, "filters": filters})
        assert status == 200 and {h["document_id"] for h in found["hits"]} == {"policies/leave.md"}, (filters, found)
        assert {lane for h in found["hits"] for lane, rank in h["lanes"].items() if rank} == {"bm25", "vector"}
    status, found = api("POST", "/search", {"question": "annual leave", "filters": {"prefix": "policies/"}}, tenant="bluefen")
    assert (status, found["hits"]) == (200, [])
    status, answer = api("POST", "/query", {"question": "How many days of paid annual leave?", "filters": {"prefix": "faq"}})
    assert status == 422 and "prefix" in answer["error"]["message"]
    assert "tenant" in refused(call("POST", "/search", json.dumps({"question": "leave", "filters": {"tenant": "bluefen"}})), 422)
    assert "list of strings" in refused(call("POST", "/search", json.dumps({"question": "leave", "filters": {"tags": "hr"}})), 422)
    assert "locale" in refused(call("POST", "/documents", json.dumps({"document_id": "x.md", "allowed_roles": ["staff"],
                                                                      "locale": "en GB"})), 422)
    monkeypatch.setattr(filters_module, "MAX_SCOPE", 1)
    assert "narrow it" in refused(call("POST", "/search", json.dumps({"question": "leave", "filters": {"tags": []
                                                                      , "locale": "en"}})), 400)


def test_an_answer_reads_one_languages_evidence_unless_asked_otherwise(services):
    _ingest(services, "leave-en.md", "# Annual leave\n\nStaff receive 27 days of paid annual leave.", locale="en-GB")
    _ingest(services, "conges-fr.md", "# Annual leave\n\nAnnual leave: les salariés reçoivent 30 jours de congés payés.",
            locale="fr")
    question = "How many days of paid annual leave do staff receive?"
    assert {h.locale for h in search(services, STAFF, question, k=5).hits} == {"en-GB", "fr"}

    def considered(answer) -> set[str]:
        return {s.document_id for s in services.answers.get_answer("northpier", answer.answer_id).considered}

    assert considered(ask(services, STAFF, question)) == {"leave-en.md"}
    assert considered(ask(services, STAFF, question, mixed_locales=True)) == {"leave-en.md", "conges-fr.md"}
    assert considered(ask(services, STAFF, question, filters=SearchFilter(locale="fr"))) == {"conges-fr.md"}


def test_the_cli_ingests_descriptive_fields_and_filters_search_and_ask(tmp_path, capsys):
    """From the flags to the record (``docs``) and from the filter flags into both lanes; an
    attacker's filter (a document the roles do not open) finds nothing, a malformed one is a
    usage error naming the field."""
    from citewell.cli import main

    home, files = tmp_path / "home", tmp_path / "files"
    (files / "policies").mkdir(parents=True)
    (files / "faq").mkdir()
    for n in range(8):
        (files / "faq" / f"leave-{n}.md").write_text(f"# Annual leave\n\nAnnual leave: how annual leave days work, note {n}.\n")
    (files / "policies" / "leave.md").write_text("# Leave policy\n\nStaff receive 27 days of paid annual leave.\n")
    (files / "policies" / "salary.md").write_text("# Salary\n\nAnnual leave days are not paid out with salary.\n")
    base = ["--home", str(home)]
    assert main([*base, "ingest", str(files / "faq"), "--tenant", "northpier", "--allow-roles", "staff", "--json"]) == 0
    assert main([*base, "ingest", str(files / "policies" / "leave.md"), "--doc-id", "policies/leave.md", "--tenant",
                 "northpier", "--allow-roles", "staff", "--tag", "hr", "--locale", "en-GB", "--authority", "--trust-tier",
                 "primary", "--effective-from", "2026-01-01", "--json"]) == 0
    assert main([*base, "ingest", str(files / "policies" / "salary.md"), "--doc-id", "policies/salary.md", "--tenant",
                 "northpier", "--allow-roles", "hr", "--tag", "hr", "--json"]) == 0
    capsys.readouterr()
    assert main([*base, "docs", "--tenant", "northpier", "--json"]) == 0
    (shown,) = [d for d in json.loads(capsys.readouterr().out)["documents"] if d["document_id"] == "policies/leave.md"]
    assert (shown["tags"], shown["locale"], shown["authority"], shown["trust_tier"]) == (["hr"], "en-GB", True, "primary")
    assert shown["effective_from"].startswith("2026-01-01")

    staff = ["--tenant", "northpier", "--roles", "staff", "--json"]

    def found(*flags: str) -> list[str]:
        assert main([*base, "search", "annual leave days", "--k", "1", *staff, *flags]) == 0
        return [h["document_id"] for h in json.loads(capsys.readouterr().out)["hits"]]

    assert found()[0].startswith("faq/")
    for flags in (["--prefix", "policies/"], ["--tag", "hr"], ["--doc", "policies/leave.md"], ["--locale", "en-GB"],
                  ["--prefix", "policies/", "--effective-on", "2026-03-01"]):
        assert found(*flags) == ["policies/leave.md"], flags
    assert found("--doc", "policies/salary.md") == []  # named, but the staff role does not open it
    assert found("--effective-on", "2025-06-01", "--prefix", "policies/") == []
    assert main([*base, "ask", "How many days of paid annual leave do staff receive?", *staff, "--prefix", "policies/"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert {c["document_id"] for c in answer["citations"]} == {"policies/leave.md"}
    assert main([*base, "search", "annual leave", *staff, "--prefix", "policies"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["code"] == "invalid_input" and "prefix" in err
