"""Who is asking: a tenant, roles and a subject, from trusted input only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Identity(BaseModel):
    """Who is asking. Built only from trusted input: operator flags or verified claims."""

    model_config = ConfigDict(frozen=True)

    tenant: str = ""
    roles: frozenset[str] = frozenset()
    subject: str = ""  # the token's ``sub`` (the CLI's operator has none): whose conversations and feedback

    @property
    def is_empty(self) -> bool:
        """An identity without a tenant or without roles may see nothing."""
        return not self.tenant or not self.roles

    def can_see(self, tenant: str, allowed_roles: frozenset[str] | set[str]) -> bool:
        return not self.is_empty and tenant == self.tenant and bool(self.roles & set(allowed_roles))
