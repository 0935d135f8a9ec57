"""How ``citewell serve`` is configured: the API's claim names, the token issuer, the limits."""

from __future__ import annotations

from pathlib import Path

from citewell.api.settings import ApiSettings
from citewell.settings import default_of, public_url, settings

__all__ = ["ServeSettings", "public_url"]


class ServeSettings(ApiSettings):
    """``CITEWELL_JWT_ISSUER`` and ``CITEWELL_JWT_AUDIENCE`` with ``CITEWELL_JWT_JWKS_URL`` or
    ``CITEWELL_JWT_PUBLIC_KEY`` (a PEM file) name an external issuer; without a key source the
    home's own key signs and verifies (``citewell token``)."""

    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwks_url: str | None = None
    public_key_file: Path | None = None
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
            public_key_file=found.jwt_public_key, public_url=found.public_url,
            read_seconds=found.read_seconds, idle_seconds=found.idle_seconds, idle_per_client=found.idle_per_client,
            connections_per_client=found.connections_per_client,
            upload_seconds=found.upload_seconds, grace_seconds=found.grace_seconds,
        )
