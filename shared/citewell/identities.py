"""Where every caller's :class:`~citewell.models.identity.Identity` comes from: the operator's
flags, or a verified token's claims read by rules that are data (:class:`ClaimRules`).

Every transport arrives here: the CLI (``operator_identity``), the AWS API behind its JWT
authorizer and ``citewell serve`` behind its own verification (``claims_identity`` in
:mod:`citewell.api.callers`, which calls :func:`identity_from_claims`), and anything else that
takes a bearer token from serve's verifier. The rules say which claim names the tenant (or that
the tenant is fixed), which claim lists the caller's groups, and, when given, which roles each
group grants; a token that lacks what its rules need gets no identity (:class:`IdentityRefused`,
a 403), never a partial or default one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from citewell.errors import CitewellError
from citewell.models.identity import Identity
from citewell.models.values import validate_name, validate_tenant


class IdentityRefused(CitewellError):
    """Verified claims that name no usable identity (no tenant, no role, an invalid tenant)."""

    code = "forbidden"


class ClaimRules(BaseModel):
    """How one issuer's verified claims name a caller.

    ``issuer`` is the ``iss`` these rules read (None: any issuer the transport verified, the rules
    of last resort). The tenant comes from ``tenant_claim`` or is the fixed ``tenant``. Groups are
    read from ``groups_claim`` as :func:`claim_groups` reads them; without ``group_roles`` each group
    is the role of the same name (Cognito's groups), with it a group grants the roles it maps to
    and an unmapped group grants nothing. A claim name is looked up whole first, then, if it holds
    dots, as a path into nested objects (Keycloak's ``realm_access.roles``)."""

    model_config = ConfigDict(frozen=True)

    issuer: str | None = None
    tenant_claim: str | None = None
    tenant: str | None = None
    groups_claim: str
    group_roles: Mapping[str, frozenset[str]] | None = None
    subject_prefix: str = "token:"  # keeps API callers' conversations apart from the CLI operator's (subject "")

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, value: str | None) -> str | None:
        return None if value is None else validate_tenant(value)

    @field_validator("group_roles")
    @classmethod
    def _roles(cls, value: Mapping[str, frozenset[str]] | None) -> Mapping[str, frozenset[str]] | None:
        if value is None:
            return None
        for group, roles in value.items():
            if not group:
                raise ValueError("a group name in the group-to-role mapping is empty")
            for role in roles:
                validate_name(role, f"the role group {group!r} maps to")
        return value

    @model_validator(mode="after")
    def _one_tenant_source(self) -> ClaimRules:
        if (self.tenant_claim is None) == (self.tenant is None):
            raise ValueError("name either the claim that holds the tenant or a fixed tenant, not both or neither")
        return self


_MISSING = object()


def _lookup(claims: Mapping[str, Any], name: str) -> Any:
    if name in claims:
        return claims[name]
    if "." not in name:
        return _MISSING
    found: Any = claims
    for part in name.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return _MISSING
        found = found[part]
    return found


def claim_value(claims: Mapping[str, Any], name: str) -> Any:
    """The claim ``name``: the top-level claim of that exact name, else (for a dotted name) the
    value at that path through nested objects, else None."""
    found = _lookup(claims, name)
    return None if found is _MISSING else found


def claim_groups(value: Any) -> list[str]:
    """The groups a verified group claim lists, each read whole and exactly as named.

    The claim is a list (a JSON list, as a token carries it), or the string API Gateway's HTTP
    API JWT authorizer makes of that list: "[a b]", one pair of brackets around names separated
    by single spaces (Cognito group names hold no whitespace). Any other string is one group.
    Nothing is split on ',' or stripped of '[' and ']'. An item that is not a string is no group."""
    if isinstance(value, list):
        items: list[Any] = value
    elif isinstance(value, str) and len(value) >= 2 and value[0] == "[" and value[-1] == "]":
        items = value[1:-1].split(" ")
    else:
        items = [value]
    return [item for item in items if isinstance(item, str) and item]


def claim_roles(value: Any) -> frozenset[str]:
    """The roles a group claim grants when each group is the role of its name: a group the role
    grammar (``validate_name``) refuses grants nothing ("hr,finance" is not hr and finance, "[hr]"
    is not hr); the rest still count."""
    roles = set()
    for group in claim_groups(value):
        try:
            roles.add(validate_name(group, "role"))
        except ValueError:
            continue
    return frozenset(roles)


def mapped_roles(groups: Iterable[str], group_roles: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The roles the caller's groups map to; a group the mapping does not name grants nothing."""
    return frozenset(role for group in groups for role in group_roles.get(group, ()))


def rules_for(claims: Mapping[str, Any], rules: Sequence[ClaimRules]) -> ClaimRules:
    """The rules of the issuer that signed these (verified) claims: the first whose ``issuer`` is
    the token's ``iss``, else the first with none."""
    issuer = claims.get("iss")
    for found in rules:
        if found.issuer is not None and found.issuer == issuer:
            return found
    for found in rules:
        if found.issuer is None:
            return found
    raise IdentityRefused(f"tokens of the issuer {issuer!r} name no caller here")


def identity_from_claims(claims: Mapping[str, Any], rules: Sequence[ClaimRules]) -> Identity:
    """The caller named by verified claims, read by their issuer's rules; :class:`IdentityRefused`
    when they name no tenant, no role, or a tenant outside the tenant grammar."""
    found = rules_for(claims, rules)
    if found.tenant_claim is not None:
        if claims.get("token_use") == "access" and _lookup(claims, found.tenant_claim) is _MISSING:
            raise IdentityRefused(f"this is an access token, which carries no {found.tenant_claim!r}: "
                                  "send the ID token in the Authorization header")
        tenant = str(claim_value(claims, found.tenant_claim) or "")
    else:
        tenant = found.tenant or ""
    groups = claim_value(claims, found.groups_claim)
    roles = claim_roles(groups) if found.group_roles is None else mapped_roles(claim_groups(groups), found.group_roles)
    # A token without a sub names nobody: each of its requests is a caller of its own, so no two
    # such tokens share a thread, a history or feedback.
    sub = str(claims.get("sub") or "")
    subject = f"{found.subject_prefix}{sub}" if sub else f"unnamed:{uuid.uuid4().hex}"
    identity = Identity(tenant=tenant, roles=roles, subject=subject)
    if identity.is_empty:
        raise IdentityRefused("the token carries no tenant or no roles")
    try:
        validate_tenant(tenant)
    except ValueError as error:
        raise IdentityRefused(f"the token's tenant is not a valid tenant: {error}") from None
    return identity


def operator_identity(tenant: str, roles: Iterable[str]) -> Identity:
    """The CLI's caller: the operator names the tenant and roles on the command line (already
    checked by the argument types), and has no subject, so no token's conversations are theirs."""
    return Identity(tenant=tenant, roles=frozenset(roles))
