"""The access filter, tested as an attacker: no lane ever returns what the caller may not read."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.identity import Identity
from citewell.search import search
from tests.conftest import make_services

TENANTS = ["northpier", "bluefen", "kestrel"]
ROLES = ["staff", "hr", "engineering", "support"]
TOPICS = ["annual leave allowance", "crane controller restart", "salary band review", "storm pin procedure"]

role_sets = st.frozensets(st.sampled_from(ROLES), min_size=1, max_size=3)
documents = st.lists(
    st.tuples(st.sampled_from(TENANTS), st.integers(0, 3), role_sets, st.sampled_from(TOPICS)), min_size=1, max_size=8
)
callers = st.builds(
    Identity,
    tenant=st.sampled_from(TENANTS + [""]),
    roles=st.frozensets(st.sampled_from(ROLES + ["intruder"]), max_size=3),
)


def _ingest(services, docs) -> dict[tuple[str, str], frozenset[str]]:
    requests, final = [], {}
    for tenant, number, roles, topic in docs:
        doc_id = f"doc{number}.txt"  # the same ids recur across tenants on purpose
        text = f"{topic}. This {tenant} document explains the {topic} for {', '.join(sorted(roles))}."
        requests.append(IngestRequest(document_id=doc_id, tenant=tenant, allowed_roles=roles, data=text.encode(), filename=doc_id))
        final[(tenant, doc_id)] = roles
    for r in requests:  # one at a time, so a repeated id is a real re-ingest
        ingest(services, [r])
    return final


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(docs=documents, caller=callers, topic=st.sampled_from(TOPICS))
def test_no_lane_returns_anything_outside_the_callers_rights(embedder, docs, caller, topic):
    with tempfile.TemporaryDirectory() as home:
        services = make_services(Path(home), embedder)
        final = _ingest(services, docs)

        def visible(tenant: str, document_id: str) -> bool:
            roles = final.get((tenant, document_id))
            return roles is not None and not caller.is_empty and tenant == caller.tenant and bool(roles & caller.roles)

        query_vector = embedder.embed([topic])[0]
        lexical = services.index.lexical(topic, caller, 50)
        vector = services.index.vector(query_vector, embedder.identity, caller, 50)
        fused = search(services, caller, topic, k=50).hits
        for hit in [*lexical, *vector, *fused]:
            assert visible(caller.tenant, hit.document_id), (caller, hit.document_id)
            assert caller.tenant in hit.text  # the text itself is the caller's tenant's
        # And the filter is not merely strict: every visible document is found by the vector lane.
        expected = {doc_id for (tenant, doc_id) in final if visible(tenant, doc_id)}
        assert {h.document_id for h in vector} == expected
        if caller.is_empty:
            assert lexical == vector == fused == []


def test_filter_runs_before_ranking_not_after(services):
    """Many better-matching documents the caller cannot read must not crowd out the one they can."""
    requests = [
        IngestRequest(document_id=f"secret{i}.txt", tenant=tenant, allowed_roles=frozenset({role}),
                      data=b"salary band salary band salary band for shift leads", filename=f"secret{i}.txt")
        for i in range(15)
        for tenant, role in (("northpier", "hr"), ("bluefen", "staff"))  # other roles, and another tenant's staff
    ]
    requests.append(IngestRequest(document_id="public.txt", tenant="northpier", allowed_roles=frozenset({"staff"}),
                                  data=b"The canteen menu mentions a salary sacrifice scheme once.", filename="public.txt"))
    ingest(services, requests)
    staff = Identity(tenant="northpier", roles=frozenset({"staff"}))
    query = services.embedder.embed(["salary band"])[0]
    assert [h.document_id for h in services.index.lexical("salary band", staff, 1)] == ["public.txt"]
    assert [h.document_id for h in services.index.vector(query, services.embedder.identity, staff, 1)] == ["public.txt"]
    assert [h.document_id for h in search(services, staff, "salary band", k=1).hits] == ["public.txt"]


@pytest.mark.parametrize(
    "caller",
    [Identity(), Identity(tenant="northpier"), Identity(roles=frozenset({"staff"})), Identity(tenant="northpier", roles=frozenset())],
)
def test_a_missing_tenant_or_roles_returns_nothing(services, caller):
    ingest(services, [IngestRequest(document_id="a.txt", tenant="northpier", allowed_roles=frozenset({"staff"}),
                                    data=b"annual leave is 27 days", filename="a.txt")])
    assert search(services, caller, "annual leave").hits == []
    assert services.index.lexical("annual leave", caller, 10) == []
    assert services.index.vector(services.embedder.embed(["leave"])[0], services.embedder.identity, caller, 10) == []


def test_query_syntax_cannot_escape_the_filter(services):
    ingest(services, [IngestRequest(document_id="a.txt", tenant="northpier", allowed_roles=frozenset({"hr"}),
                                    data=b"secret salary data", filename="a.txt")])
    staff = Identity(tenant="northpier", roles=frozenset({"staff"}))
    for attack in ['salary" OR "secret', "salary) OR (1=1", "NEAR(secret salary)", "* OR secret", "tenant:northpier", "'; DROP TABLE chunks; --"]:
        assert search(services, staff, attack).hits == []
    hr = Identity(tenant="northpier", roles=frozenset({"hr"}))
    assert search(services, hr, "'; DROP TABLE chunks; --salary").hits  # still there, still searchable
