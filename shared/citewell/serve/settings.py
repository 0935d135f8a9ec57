"""How ``citewell serve`` is configured: the API's claim names, the token issuer, the limits."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

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


def _count(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 0 < int(raw) <= 1_000_000:
        raise ValueError(f"{name} must be a whole number from 1, not {raw!r}")
    return int(raw)


def public_url(raw: str) -> str:
    """``scheme://host[:port]`` as clients reach this server (what the upload form's URL starts
    with): no path, query, fragment or credentials, so a form never points anywhere else."""
    try:
        parts = urlsplit(raw.strip())
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password \
            or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"CITEWELL_PUBLIC_URL must be http(s)://host[:port], not {raw!r}")
    return f"{parts.scheme}://{parts.netloc}"


class ServeSettings(ApiSettings):
    """``CITEWELL_JWT_ISSUER`` and ``CITEWELL_JWT_AUDIENCE`` with ``CITEWELL_JWT_JWKS_URL`` or
    ``CITEWELL_JWT_PUBLIC_KEY`` (a PEM file) name an external issuer; without a key source the
    home's own key signs and verifies (``citewell token``)."""

    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwks_url: str | None = None
    public_key_file: Path | None = None
    public_url: str | None = None  # where clients reach this server; without it, the address it listens on
    read_seconds: float = 30.0  # a request's headers, a JSON body, and an upload form's fields must arrive within this
    idle_seconds: float = 5.0  # a connection with no request under way (new, or kept alive) is closed after this
    idle_per_client: int = 32  # connections of one client address waiting for a request; past it the oldest is closed
    max_headers: int = 100  # header lines of one request; past them, or past max_header_bytes, a 431
    max_header_bytes: int = 32 * 1024  # a request's line and headers together
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
            public_url=public_url(env["CITEWELL_PUBLIC_URL"]) if env.get("CITEWELL_PUBLIC_URL", "").strip() else None,
            read_seconds=_seconds("CITEWELL_READ_SECONDS", 30.0),
            idle_seconds=_seconds("CITEWELL_IDLE_SECONDS", 5.0),
            idle_per_client=_count("CITEWELL_IDLE_PER_CLIENT", 32),
            upload_seconds=_seconds("CITEWELL_UPLOAD_SECONDS", 300.0),
            grace_seconds=_seconds("CITEWELL_GRACE_SECONDS", 30.0),
        )
