"""How ``citewell serve`` is configured: the API's claim names, the token issuer, the limits."""

from __future__ import annotations

import os
from pathlib import Path

from citewell.api.settings import ApiSettings


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = -1.0
    if not 0 < value < 24 * 3600:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}")
    return value


class ServeSettings(ApiSettings):
    """``CITEWELL_JWT_ISSUER`` and ``CITEWELL_JWT_AUDIENCE`` with ``CITEWELL_JWT_JWKS_URL`` or
    ``CITEWELL_JWT_PUBLIC_KEY`` (a PEM file) name an external issuer; without a key source the
    home's own key signs and verifies (``citewell token``)."""

    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwks_url: str | None = None
    public_key_file: Path | None = None
    read_seconds: float = 30.0  # a request's headers, and a JSON body, must arrive within this
    upload_seconds: float = 300.0  # an upload's body must arrive within this
    grace_seconds: float = 30.0  # on SIGTERM, in-flight uploads may finish within this, else fail cleanly
    threads: int = 8  # requests answered at once; the rest wait their turn without holding a thread

    @property
    def external_issuer(self) -> bool:
        return bool(self.jwks_url or self.public_key_file)

    @classmethod
    def from_env(cls) -> ServeSettings:
        env = os.environ
        key = env.get("CITEWELL_JWT_PUBLIC_KEY", "").strip()
        return cls(
            **cls.env_fields(),
            jwt_issuer=env.get("CITEWELL_JWT_ISSUER", "").strip() or None,
            jwt_audience=env.get("CITEWELL_JWT_AUDIENCE", "").strip() or None,
            jwks_url=env.get("CITEWELL_JWT_JWKS_URL", "").strip() or None,
            public_key_file=Path(key) if key else None,
            read_seconds=_seconds("CITEWELL_READ_SECONDS", 30.0),
            upload_seconds=_seconds("CITEWELL_UPLOAD_SECONDS", 300.0),
            grace_seconds=_seconds("CITEWELL_GRACE_SECONDS", 30.0),
        )
