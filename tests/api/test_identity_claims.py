"""One function turns every issuer's verified claims into a caller (citewell.identities), with the
rules as data. The claim shapes here are those the providers document for their ID tokens: Okta's
groups claim (a list of group names), Keycloak's realm_access.roles and its group mapper's paths,
Entra ID's groups (object ids) and roles (app roles), Google's hd (no groups), and Cognito's
cognito:groups and custom:tenant (a list in the token, "[a b]" once API Gateway passes it on)."""

from __future__ import annotations

import pytest

from citewell.api.callers import claims_identity
from citewell.api.settings import ApiSettings
from citewell.identities import ClaimRules, IdentityRefused, identity_from_claims, operator_identity
from citewell.models.identity import Identity

ENTRA_HR = "6f1c0e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b"


def rules(**given) -> tuple[ClaimRules, ...]:
    return (ClaimRules(issuer="https://idp.example/", **given), ApiSettings().claim_rules[-1])


@pytest.mark.parametrize("claims, given, expected", [
    ({"sub": "00u1", "groups": ["Everyone", "citewell-staff"]},  # Okta
     {"tenant": "northpier", "groups_claim": "groups", "group_roles": {"citewell-staff": frozenset({"staff"})}},
     ("northpier", {"staff"})),
    ({"sub": "kc-1", "realm_access": {"roles": ["staff", "offline_access"]}, "groups": ["/northpier/hr"]},  # Keycloak
     {"tenant": "northpier", "groups_claim": "realm_access.roles"}, ("northpier", {"staff", "offline_access"})),
    ({"sub": "kc-1", "groups": ["/northpier/hr", "/northpier"]},  # Keycloak's group mapper, full paths
     {"tenant": "northpier", "groups_claim": "groups", "group_roles": {"/northpier/hr": frozenset({"hr", "citewell:write"})}},
     ("northpier", {"hr", "citewell:write"})),
    ({"sub": "aad-1", "tid": "72f988bf", "groups": [ENTRA_HR, "0000-unmapped"], "roles": ["Reader"]},  # Entra ID groups
     {"tenant": "northpier", "groups_claim": "groups", "group_roles": {ENTRA_HR: frozenset({"hr"})}}, ("northpier", {"hr"})),
    ({"sub": "aad-1", "roles": ["Reader", "Writer"]},  # Entra ID app roles
     {"tenant": "northpier", "groups_claim": "roles", "group_roles": {"Reader": frozenset({"staff"}),
                                                                      "Writer": frozenset({"staff", "citewell:write"})}},
     ("northpier", {"staff", "citewell:write"})),
    ({"sub": "c-1", "custom:tenant": "bluefen", "cognito:groups": ["staff", "hr"]},  # Cognito, tenant from a claim
     {"tenant_claim": "custom:tenant", "groups_claim": "cognito:groups"}, ("bluefen", {"staff", "hr"})),
    ({"sub": "c-1", "custom:tenant": "bluefen", "cognito:groups": "[staff hr]"},  # as API Gateway passes it on
     {"tenant_claim": "custom:tenant", "groups_claim": "cognito:groups"}, ("bluefen", {"staff", "hr"})),
])
def test_each_providers_claims_name_the_caller_their_rules_say(claims, given, expected):
    found = identity_from_claims({"iss": "https://idp.example/", **claims}, rules(**given))
    assert (found.tenant, set(found.roles)) == (expected[0], expected[1]) and found.subject == f"token:{claims['sub']}"


@pytest.mark.parametrize("claims, given", [
    ({"sub": "g-1", "hd": "northpier.example", "email": "a@northpier.example"},  # Google: a domain, no groups
     {"tenant_claim": "hd", "groups_claim": "groups"}),
    ({"sub": "aad-1", "_claim_names": {"groups": "src1"}, "_claim_sources": {"src1": {"endpoint": "https://graph"}}},
     {"tenant": "northpier", "groups_claim": "groups", "group_roles": {ENTRA_HR: frozenset({"hr"})}}),  # Entra's overage
    ({"sub": "o-1", "groups": ["Everyone"]},  # no group the mapping names
     {"tenant": "northpier", "groups_claim": "groups", "group_roles": {"citewell-staff": frozenset({"staff"})}}),
    ({"sub": "o-1", "groups": ["staff"]}, {"tenant_claim": "org", "groups_claim": "groups"}),  # no tenant claim
    ({"sub": "o-1", "org": ["northpier"], "groups": ["staff"]}, {"tenant_claim": "org", "groups_claim": "groups"}),
    ({"sub": "o-1", "groups": "staff,hr"}, {"tenant": "northpier", "groups_claim": "groups"}),  # one group outside the grammar
])
def test_claims_lacking_what_the_rules_need_name_nobody(claims, given):
    with pytest.raises(IdentityRefused):
        identity_from_claims({"iss": "https://idp.example/", **claims}, rules(**given))


def test_rules_are_chosen_by_the_verified_issuer_and_the_api_reads_them_the_same_way():
    oidc = ClaimRules(issuer="https://idp.example/", tenant="northpier", groups_claim="groups",
                      group_roles={"citewell-staff": frozenset({"staff"})}, subject_prefix="oidc:")
    settings = ApiSettings(issuer_rules=(oidc,))
    from_idp = {"iss": "https://idp.example/", "sub": "u1", "groups": ["citewell-staff"]}
    assert claims_identity(from_idp, settings) == Identity(tenant="northpier", roles=frozenset({"staff"}), subject="oidc:u1")
    # Another issuer's token is read by the default rules: its groups are roles, its tenant its claim.
    from_home = {"iss": "citewell-local", "sub": "x", "custom:tenant": "bluefen", "cognito:groups": ["citewell-staff"]}
    assert claims_identity(from_home, settings) == Identity(
        tenant="bluefen", roles=frozenset({"citewell-staff"}), subject="token:x")
    # An IdP token cannot pick the default rules by carrying the default claims: its issuer's rules hold.
    smuggled = {**from_idp, "groups": [], "custom:tenant": "bluefen", "cognito:groups": ["hr"]}
    with pytest.raises(Exception, match="no tenant or no roles"):
        claims_identity(smuggled, settings)


def test_the_rules_take_one_tenant_source_and_valid_roles():
    with pytest.raises(ValueError, match="not both or neither"):
        ClaimRules(tenant="northpier", tenant_claim="org", groups_claim="groups")
    with pytest.raises(ValueError):
        ClaimRules(tenant="northpier", groups_claim="groups", group_roles={"g": frozenset({"hr,finance"})})
    with pytest.raises(ValueError):
        ClaimRules(tenant="not a tenant!", groups_claim="groups")


def test_the_operator_is_the_tenant_and_roles_the_flags_name():
    assert operator_identity("northpier", {"staff"}) == Identity(tenant="northpier", roles=frozenset({"staff"}), subject="")
