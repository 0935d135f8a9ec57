"""What the API needs to know besides the stores: the claim names of the caller and the write role."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel

from citewell.identities import ClaimRules
from citewell.settings import default_of


class ApiSettings(BaseModel):
    """The same names on every transport, so one token's claims mean the same everywhere."""

    lanes: tuple[str, ...] = default_of("lanes")
    tenant_claim: str = default_of("tenant_claim")
    roles_claim: str = default_of("roles_claim")
    write_role: str = default_of("write_role")  # the role (group) that may create, replace and delete documents
    # Rules of named issuers (citewell serve's OIDC issuer); any other verified token is read with
    # tenant_claim and roles_claim, each group the role of its name.
    issuer_rules: tuple[ClaimRules, ...] = ()

    @property
    def claim_rules(self) -> tuple[ClaimRules, ...]:
        """How verified claims name the caller (:func:`citewell.identities.identity_from_claims`)."""
        return (*self.issuer_rules, _claim_rules(self.tenant_claim, self.roles_claim))

    @staticmethod
    def env_fields() -> dict[str, Any]:
        """The fields from ``CITEWELL_LANES``, ``CITEWELL_TENANT_CLAIM``, ``CITEWELL_ROLES_CLAIM`` and
        ``CITEWELL_WRITE_ROLE``, for subclasses that read more of the environment."""
        from citewell.settings import settings

        found = settings()  # read here, not at import: an import never reads the environment
        return {"lanes": found.lanes, "tenant_claim": found.tenant_claim, "roles_claim": found.roles_claim,
                "write_role": found.write_role}

    @classmethod
    def from_env(cls) -> ApiSettings:
        return cls(**cls.env_fields())


@functools.lru_cache(maxsize=16)
def _claim_rules(tenant_claim: str, roles_claim: str) -> ClaimRules:
    """Built once per pair of names, not per request."""
    return ClaimRules(tenant_claim=tenant_claim, groups_claim=roles_claim)
