"""An issuer's signing keys from its JWKS URL: cached, refreshed when old, refetched for a key id
it does not know, at most once per interval, so tokens with made-up ``kid``\\ s cannot make this
server hammer the identity provider.

Only public signing keys are kept: a symmetric (``oct``) key, a key marked for encryption, or
one the key type cannot load is dropped, so no HMAC secret can ever come from a JWKS.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

logger = logging.getLogger("citewell.serve")

LIFESPAN_SECONDS = 300.0  # a key the issuer withdraws stops being trusted within this
STALE_SECONDS = 3600.0  # while the issuer cannot be reached, keys this old are still used
REFETCH_SECONDS = 30.0  # an unknown kid refetches the set at most once per this
MAX_JWKS_BYTES = 256 * 1024


class KeysUnavailable(Exception):
    """The key set could not be fetched, and none recent enough is held."""


class UnknownKey(Exception):
    """The token names a key the issuer's set does not hold."""


@dataclass(frozen=True)
class SigningKey:
    """A public key of the issuer, with the algorithm its JWK declares (``alg``), if it declares one."""

    kid: str | None
    key: Any
    algorithm: str | None


class JwksKeys:
    """The keys at ``url`` by ``kid``. :meth:`known` answers without I/O; :meth:`key` may fetch
    (one fetch at a time: requests that wait for it use its result)."""

    def __init__(self, url: str, *, lifespan: float = LIFESPAN_SECONDS, refetch_seconds: float = REFETCH_SECONDS,
                 timeout: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.url, self.lifespan, self.refetch_seconds, self.timeout, self.clock = url, lifespan, refetch_seconds, timeout, clock
        self._keys: dict[str | None, SigningKey] = {}
        self._fetched_at: float | None = None  # when the held set arrived
        self._failed_at: float | None = None  # the last fetch, if it failed
        self._refetched_at: float | None = None  # the last fetch an unknown kid caused
        self._lock = threading.Lock()
        self.fetches = 0

    def known(self, kid: str | None) -> SigningKey | None:
        """The key while the held set is fresh, else None (the caller then calls :meth:`key` off the loop)."""
        if self._fetched_at is None or self.clock() - self._fetched_at >= self.lifespan:
            return None
        return self._pick(kid)

    def key(self, kid: str | None) -> SigningKey:
        """The key named ``kid``: :class:`UnknownKey` if the issuer's set does not hold it,
        :class:`KeysUnavailable` if the set cannot be had."""
        with self._lock:
            now = self.clock()
            fresh = self._fetched_at is not None and now - self._fetched_at < self.lifespan
            if not fresh:
                self._fetch_or_keep(now)
            found = self._pick(kid)
            if found is not None:
                return found
            if fresh and (self._refetched_at is None or now - self._refetched_at >= self.refetch_seconds):
                self._refetched_at = now  # counted before the fetch: a failing one is rate-limited too
                self._fetch_or_keep(now)
                found = self._pick(kid)
                if found is not None:
                    return found
            raise UnknownKey(f"the issuer's keys hold no key {kid!r}")

    def _pick(self, kid: str | None) -> SigningKey | None:
        found = self._keys.get(kid)
        if found is None and kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))  # a token without kid, from an issuer with one key
        return found

    def _fetch_or_keep(self, now: float) -> None:
        if self._failed_at is not None and now - self._failed_at < self.refetch_seconds:
            if self._usable(now):
                return  # the last try failed moments ago: keep what is held rather than try again at once
            raise KeysUnavailable("the token issuer's keys cannot be fetched right now; try again")
        try:
            self._keys = self._fetch()
            self._fetched_at, self._failed_at = now, None
        except KeysUnavailable:
            self._failed_at = now
            if not self._usable(now):
                raise
            logger.warning("the JWKS at %s could not be fetched; keys fetched %.0f s ago are used meanwhile",
                           self.url, now - (self._fetched_at or now))

    def _usable(self, now: float) -> bool:
        return bool(self._keys) and self._fetched_at is not None and now - self._fetched_at < STALE_SECONDS

    def _fetch(self) -> dict[str | None, SigningKey]:
        self.fetches += 1
        try:
            with httpx.Client(timeout=self.timeout, follow_redirects=False) as client, \
                    client.stream("GET", self.url, headers={"Accept": "application/json"}) as response:
                if response.status_code != 200:
                    raise KeysUnavailable(f"the issuer's JWKS answered {response.status_code}")
                body = read_capped(response, MAX_JWKS_BYTES)
                if body is None:
                    raise KeysUnavailable("the issuer's JWKS is too large")
            document = httpx.Response(200, content=body).json()
        except (httpx.HTTPError, ValueError) as error:
            raise KeysUnavailable(f"the issuer's JWKS could not be read: {type(error).__name__}") from None
        return signing_keys(document)


_LOADERS = {"RSA": "RS256", "OKP": "EdDSA", "P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}


def signing_keys(document: Any) -> dict[str | None, SigningKey]:
    """The public signing keys of a JWKS document by kid; anything else in it is left out."""
    listed = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(listed, list):
        raise KeysUnavailable("the issuer's JWKS has no 'keys' list")
    keys: dict[str | None, SigningKey] = {}
    for entry in listed:
        if not isinstance(entry, dict) or entry.get("kty") not in ("RSA", "EC", "OKP"):
            continue  # never "oct": a symmetric key published as a JWK is nobody's secret
        if entry.get("use", "sig") != "sig" or "d" in entry:
            continue  # an encryption key, or a private key published by mistake
        kid = entry.get("kid") if isinstance(entry.get("kid"), str) else None
        declared = entry.get("alg") if isinstance(entry.get("alg"), str) else None
        try:
            loader = _LOADERS.get(entry["kty"]) if entry["kty"] != "EC" else _LOADERS.get(str(entry.get("crv")))
            if loader is None:
                continue
            # Loaded by its key type, whatever its "alg" says: the verifier then holds the token's
            # algorithm to both (an RSA key declared "HS256" signs nothing here).
            keys[kid] = SigningKey(kid=kid, key=jwt.PyJWK(entry, algorithm=loader).key, algorithm=declared)
        except jwt.PyJWTError:
            continue
    return keys


def read_capped(response: httpx.Response, limit: int) -> bytes | None:
    """A streamed reply's body, or None once it passes ``limit`` bytes (read no further): what an
    issuer serves (discovery, JWKS) is small, and a larger reply is refused, not held."""
    parts, size = [], 0
    for part in response.iter_bytes():
        size += len(part)
        if size > limit:
            return None
        parts.append(part)
    return b"".join(parts)
