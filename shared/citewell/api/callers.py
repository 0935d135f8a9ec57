"""Who is asking, and what they may do: the caller from a request's verified claims, the write
role, and the ids we issued."""

from __future__ import annotations

import uuid
from typing import Any

from aws_lambda_powertools.event_handler.exceptions import ForbiddenError, NotFoundError

from citewell.api.settings import ApiSettings
from citewell.models.identity import Identity
from citewell.models.values import validate_name, validate_tenant, validate_token


def claim_roles(value: Any) -> frozenset[str]:
    """The roles a verified group claim grants, each group read whole and exactly as named.

    The claim is a list (a JSON list, as a token carries it), or the string API Gateway's HTTP
    API JWT authorizer makes of that list: "[a b]", one pair of brackets around names separated
    by single spaces (Cognito group names hold no whitespace). Any other string is one group.
    Nothing is split on ',' or stripped of '[' and ']': a group named "hr,finance" or "[hr]" is
    not the groups hr and finance, or hr. A group the role grammar (``validate_name``) refuses,
    or an item that is not a string, grants nothing; the rest still count, and a token left
    with no role at all is refused as one without roles (403), as before."""
    if isinstance(value, list):
        groups: list[Any] = value
    elif isinstance(value, str) and len(value) >= 2 and value[0] == "[" and value[-1] == "]":
        groups = value[1:-1].split(" ")
    else:
        groups = [value]
    roles = set()
    for group in groups:
        if not isinstance(group, str):
            continue
        try:
            roles.add(validate_name(group, "role"))
        except ValueError:
            continue
    return frozenset(roles)


def claims_identity(claims: dict[str, Any], settings: ApiSettings) -> Identity:
    """The caller from verified claims. The API takes the Cognito ID token: an access token
    carries no custom attributes, so it cannot name a tenant."""
    if claims.get("token_use") == "access" and settings.tenant_claim not in claims:
        raise ForbiddenError(f"this is an access token, which carries no {settings.tenant_claim!r}: "
                             "send the ID token in the Authorization header")
    tenant = str(claims.get(settings.tenant_claim, "") or "")
    # "token:" keeps an API caller's conversations apart from the CLI operator's (subject ""),
    # whatever a token's sub says. A token without one names nobody: each of its requests is a
    # caller of its own, so no two such tokens share a thread, a history or feedback.
    sub = str(claims.get("sub") or "")
    subject = f"token:{sub}" if sub else f"unnamed:{uuid.uuid4().hex}"
    found = Identity(tenant=tenant, roles=claim_roles(claims.get(settings.roles_claim)), subject=subject)
    if found.is_empty:
        raise ForbiddenError("the token carries no tenant or no roles")
    try:
        validate_tenant(tenant)
    except ValueError as error:
        raise ForbiddenError(f"the token's tenant is not a valid tenant: {error}") from None
    return found


def require_writer(settings: ApiSettings, caller: Identity) -> None:
    """Read access is not write access: changing documents needs the tenant's write role too."""
    if settings.write_role not in caller.roles:
        raise ForbiddenError(f"creating, replacing or deleting documents needs the role {settings.write_role!r}, "
                             "which this token does not carry")


def token_id(value: str, what: str) -> str:
    """An id we issued (an answer's, a conversation's); anything else is one that does not exist."""
    try:
        return validate_token(value)
    except ValueError:
        raise NotFoundError(f"no such {what}") from None
