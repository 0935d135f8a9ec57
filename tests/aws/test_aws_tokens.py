"""Which token the API takes: the Cognito ID token (it carries ``custom:tenant`` and
``cognito:groups``; ``aud`` is the app client the authorizer checks). A Cognito access token
passes the authorizer of a pool client but names no tenant: the API refuses it and says
which token to send. Claims are shaped exactly as the HTTP API's JWT authorizer passes them.
A group is read whole: its name is one role or, outside the role grammar, none."""

from __future__ import annotations

import pytest

from citewell.api.callers import claim_roles
from tests.aws.test_aws_chain import HANDBOOK, api, aws, id_token_claims, knn_proxy, pump, resend, upload  # noqa: F401


def access_token_claims() -> dict:
    """A Cognito access token's claims: groups, but no custom attributes and ``client_id`` instead of ``aud``."""
    return {
        "sub": "6a1f3c2e-0d4b-4b8e-9f2a-1c3d5e7f9a0b", "cognito:groups": "[staff citewell:write]",
        "iss": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123", "client_id": "4q2lh7e1ac3s9vb0nm6kd8ufit",
        "origin_jti": "1f0e9d8c-7b6a-5948-3726-150493827160", "event_id": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0",
        "token_use": "access", "scope": "aws.cognito.signin.user.admin", "auth_time": "1764471000",
        "exp": "Sun Nov 30 04:00:00 UTC 2026", "iat": "Sun Nov 30 03:00:00 UTC 2026",
        "jti": "7a6b5c4d-3e2f-1a0b-9c8d-7e6f5a4b3c2d", "username": "6a1f3c2e-0d4b-4b8e-9f2a-1c3d5e7f9a0b",
    }


def test_the_id_token_works_end_to_end(aws):
    upload(aws, "handbook.md", HANDBOOK)  # registered with an ID token's claims
    pump(aws)
    status, found = api("POST", "/search", {"question": "annual leave days"}, claims=id_token_claims(groups="[staff]"))
    assert status == 200 and found["hits"][0]["document_id"] == "handbook.md"


def test_an_access_token_is_refused_with_the_token_to_send(aws):
    status, body = api("POST", "/search", {"question": "annual leave days"}, claims=access_token_claims())
    assert status == 403 and "ID token" in body["error"]["message"], body


@pytest.mark.parametrize("claim, roles", [
    ("[staff citewell:write]", {"staff", "citewell:write"}),  # the HTTP API's string form of the list
    (["staff", "citewell:write"], {"staff", "citewell:write"}),  # the token's own JSON list
    ("[hr,finance staff]", {"staff"}),  # a comma is not a separator: that group is outside the grammar
    (["hr,finance", "staff"], {"staff"}),
    ("hr,finance", set()),
    ("[[hr] staff]", {"[hr]", "staff"}),  # brackets are the list's only once: "[hr]" is not hr
    (["[hr]"], {"[hr]"}),
    ("[hr]", {"hr"}),  # the string form of the one group hr
    (["hr finance"], {"hr finance"}),  # one name with a space, not hr and finance
    ("staff", {"staff"}),
    (["staff", 7, None, "", " hr", "hr ", "x" * 129, "hr\x00", ["hr"]], {"staff"}),
    ("", set()), ("[]", set()), (None, set()),
])
def test_a_group_claim_grants_each_group_whole_or_nothing(claim, roles):
    assert claim_roles(claim) == roles


def test_a_group_that_spells_two_roles_reads_neither(aws):
    status, created = api("POST", "/documents", {"document_id": "pay.md", "allowed_roles": ["hr"], "filename": "pay.md"},
                          groups="[hr citewell:write]")
    assert status == 201, created
    aws.setdefault("forms", {})[created["upload"]["fields"]["key"]] = created
    resend(aws, created["upload"]["fields"]["key"], b"# Pay bands\n\nBand four starts at 41,000 pounds a year.\n")
    pump(aws)
    ask = {"question": "band four pay"}
    assert api("POST", "/search", ask, groups="[hr]")[1]["hits"][0]["document_id"] == "pay.md"
    assert api("POST", "/search", ask, groups="[hr,finance staff]")[1]["hits"] == []
    assert api("POST", "/search", ask, claims={**id_token_claims(), "cognito:groups": ["hr finance", "[hr]"]})[1]["hits"] == []
    status, body = api("POST", "/search", ask, groups="[hr,finance]")  # no group left: a token without roles
    assert status == 403 and "no roles" in body["error"]["message"], body
