"""The bearer tokens ``citewell serve`` takes, and the caller each one names: what the HTTP API,
the web page and any other transport of serve verify a token with.

Serve trusts one or two issuers: the home's own key (``citewell token``, ``--demo``) or one
external issuer (``CITEWELL_JWT_*``), and, when configured, an OpenID Connect issuer
(:mod:`citewell.serve.oidc`). A token goes to the verifier of the issuer its ``iss`` names; that
verifier checks the ``iss`` again with the signature, so the peek only chooses, never trusts.
The caller is then read from the verified claims by that issuer's rules
(:func:`citewell.identities.identity_from_claims`), the same function the API's routes call.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

from citewell.identities import ClaimRules, identity_from_claims
from citewell.models.identity import Identity
from citewell.serve.tokens import TokenVerifier, Unauthorized, bearer_token


class BearerTokens:
    """The verifiers of the trusted issuers, and the claim rules that name their callers."""

    def __init__(self, verifiers: Sequence[TokenVerifier], rules: Sequence[ClaimRules]) -> None:
        issuers = [v.issuer for v in verifiers]
        if not verifiers or len(set(issuers)) != len(issuers):
            raise ValueError(f"each trusted token issuer must be named once, not {issuers}")
        self.verifiers, self.rules = tuple(verifiers), tuple(rules)
        self._by_issuer = {v.issuer: v for v in verifiers}

    def claims(self, authorization: str | None) -> dict[str, Any]:
        """The verified claims (may fetch the issuer's keys: call it off the event loop), or
        :class:`~citewell.serve.tokens.Unauthorized`."""
        return self._remembered(authorization) or self._verifier(authorization).claims(authorization)

    def claims_without_fetching(self, authorization: str | None) -> dict[str, Any] | None:
        """The verified claims when no I/O is needed to know them, else None."""
        return self._remembered(authorization) or self._verifier(authorization).claims_without_fetching(authorization)

    def _remembered(self, authorization: str | None) -> dict[str, Any] | None:
        """A token verified lately, found in its verifier's memory before anything is decoded
        (with one issuer, its verifier looks there itself)."""
        if len(self.verifiers) > 1:
            token = bearer_token(authorization)
            for verifier in self.verifiers:
                found = verifier.remembered(token)
                if found is not None:
                    return found
        return None

    def identity(self, authorization: str | None) -> Identity:
        """The caller an ``Authorization`` header's token names: :class:`Unauthorized` (401) for
        no or a bad token, :class:`~citewell.identities.IdentityRefused` (403) for a token that
        names no tenant or no role. May fetch the issuer's keys: call it off the event loop."""
        return identity_from_claims(self.claims(authorization), self.rules)

    def _verifier(self, authorization: str | None) -> TokenVerifier:
        if len(self.verifiers) == 1:
            return self.verifiers[0]
        issuer = unverified_issuer(bearer_token(authorization))
        found = self._by_issuer.get(issuer) if isinstance(issuer, str) else None
        if found is None:
            raise Unauthorized("the token is from another issuer")
        return found


def unverified_issuer(token: str) -> Any:
    """The ``iss`` a token claims, read without any check (a fifth of PyJWT's unverified decode):
    it only chooses the verifier, which checks it with the signature."""
    parts = token.split(".")
    if len(parts) != 3:
        raise Unauthorized("the bearer token is not a JSON Web Token")
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        raise Unauthorized("the bearer token is not a JSON Web Token") from None
    return payload.get("iss") if isinstance(payload, dict) else None
