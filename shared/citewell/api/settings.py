"""What the API needs to know besides the stores: the claim names of the caller and the write role."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel


class ApiSettings(BaseModel):
    """The same names on every transport, so one token's claims mean the same everywhere."""

    lanes: tuple[str, ...] = ("bm25", "vector")
    tenant_claim: str = "custom:tenant"
    roles_claim: str = "cognito:groups"
    write_role: str = "citewell:write"  # the role (group) that may create, replace and delete documents

    @staticmethod
    def env_fields() -> dict[str, Any]:
        """The fields from ``CITEWELL_LANES``, ``CITEWELL_TENANT_CLAIM``, ``CITEWELL_ROLES_CLAIM`` and
        ``CITEWELL_WRITE_ROLE``, for subclasses that read more of the environment."""
        env = os.environ
        return {
            "lanes": tuple(x.strip() for x in env.get("CITEWELL_LANES", "bm25,vector").split(",") if x.strip()),
            "tenant_claim": env.get("CITEWELL_TENANT_CLAIM", "custom:tenant"),
            "roles_claim": env.get("CITEWELL_ROLES_CLAIM", "cognito:groups"),
            "write_role": env.get("CITEWELL_WRITE_ROLE") or "citewell:write",
        }

    @classmethod
    def from_env(cls) -> ApiSettings:
        return cls(**cls.env_fields())
