"""Who is asking, and what they may do: the caller from a request's verified claims, the write
role, and the ids we issued."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.exceptions import ForbiddenError, NotFoundError

from citewell.api.settings import ApiSettings
from citewell.identities import IdentityRefused, claim_roles, identity_from_claims
from citewell.models.identity import Identity
from citewell.models.values import validate_token

__all__ = ["claim_roles", "claims_identity", "require_writer", "token_id"]


def claims_identity(claims: dict[str, Any], settings: ApiSettings) -> Identity:
    """The caller from verified claims, by the rules of the issuer that signed them
    (:func:`citewell.identities.identity_from_claims`); a token that names no caller is a 403.
    The API takes the Cognito ID token: an access token carries no custom attributes, so it
    cannot name a tenant."""
    try:
        return identity_from_claims(claims, settings.claim_rules)
    except IdentityRefused as refused:
        raise ForbiddenError(refused.message) from None


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
