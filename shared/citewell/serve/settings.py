"""How ``citewell serve`` is configured: the API's claim names, the token issuer, the limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from citewell.api.settings import ApiSettings
from citewell.errors import InvalidInput, readable
from citewell.settings import Settings, default_of, public_url, settings

__all__ = ["ServeSettings", "public_url"]


class OidcSettings(BaseModel):
    """``--oidc-*`` and ``CITEWELL_OIDC_*``: the issuer, the client the page signs in as (the
    ID token's audience), where the tenant comes from, the groups claim and their roles."""

    model_config = ConfigDict(frozen=True)

    issuer: str
    client_id: str
    audience: str | None = None  # the aud tokens carry; the client id unless said otherwise
    tenant_claim: str | None = None
    tenant: str | None = None
    groups_claim: str = "groups"
    group_roles: Path | None = None  # a TOML file: "group" = "role" or ["role", ...]
    scope: str = "openid"


class ServeSettings(ApiSettings):
    """``CITEWELL_JWT_ISSUER`` and ``CITEWELL_JWT_AUDIENCE`` with ``CITEWELL_JWT_JWKS_URL`` or
    ``CITEWELL_JWT_PUBLIC_KEY`` (a PEM file) name an external issuer; without a key source the
    home's own key signs and verifies (``citewell token``)."""

    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwks_url: str | None = None
    public_key_file: Path | None = None
    oidc: OidcSettings | None = None  # an OpenID Connect issuer, besides the home's key or the external issuer
    public_url: str | None = None  # where clients reach this server; without it, the address it listens on
    read_seconds: float = default_of("read_seconds")  # a request's headers, a JSON body, and an upload form's fields
    idle_seconds: float = default_of("idle_seconds")  # a connection with no request under way is closed after this
    idle_per_client: int = default_of("idle_per_client")  # one address's connections waiting for a request
    connections_per_client: int = default_of("connections_per_client")  # one address's connections, busy or not
    max_headers: int = 100  # header lines of one request; past them, or past max_header_bytes, a 431
    max_header_bytes: int = 32 * 1024  # a request's line and headers together
    upload_seconds: float = default_of("upload_seconds")  # an upload's body must arrive within this
    grace_seconds: float = default_of("grace_seconds")  # on SIGTERM, in-flight uploads may finish within this
    threads: int = 8  # requests answered at once; the rest wait their turn without holding a thread

    @property
    def external_issuer(self) -> bool:
        return bool(self.jwks_url or self.public_key_file)

    @classmethod
    def from_env(cls) -> ServeSettings:
        found = settings()
        return cls(
            **cls.env_fields(),
            jwt_issuer=found.jwt_issuer, jwt_audience=found.jwt_audience, jwks_url=found.jwt_jwks_url,
            public_key_file=found.jwt_public_key, public_url=found.public_url, oidc=oidc_settings(found),
            read_seconds=found.read_seconds, idle_seconds=found.idle_seconds, idle_per_client=found.idle_per_client,
            connections_per_client=found.connections_per_client,
            upload_seconds=found.upload_seconds, grace_seconds=found.grace_seconds,
        )


def oidc_settings(found: Settings, **flags: Any) -> OidcSettings | None:
    """The OpenID Connect issuer of ``CITEWELL_OIDC_*``, each overridden by its ``--oidc-*`` flag
    when given; None when no issuer is named."""
    values = {name: getattr(found, f"oidc_{name}") for name in OidcSettings.model_fields}
    values.update({name: value for name, value in flags.items() if value is not None})
    if not values["issuer"]:
        if any(flags.get(name) is not None for name in flags):
            raise InvalidInput("the --oidc-* options need --oidc-issuer (or CITEWELL_OIDC_ISSUER)")
        return None
    if not values["client_id"]:
        raise InvalidInput("an OpenID Connect issuer needs the client id the page signs in as: --oidc-client-id "
                           "(or CITEWELL_OIDC_CLIENT_ID)")
    if (values["tenant_claim"] is None) == (values["tenant"] is None):
        raise InvalidInput("an OpenID Connect issuer needs either the claim that names the tenant (--oidc-tenant-claim) "
                           "or one fixed tenant for all its users (--oidc-tenant), not both")
    try:
        return OidcSettings(**values)
    except ValidationError as error:
        raise InvalidInput(f"the OpenID Connect settings: {readable(error)}") from None
