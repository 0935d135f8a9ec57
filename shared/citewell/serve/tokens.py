"""Bearer tokens for ``citewell serve``: each verified against one issuer, never trusted unsigned.

A :class:`TokenVerifier` is one issuer's (:mod:`.bearer` holds those serve trusts). The issuer is
an OpenID Connect provider (:mod:`.oidc`), external (a JWKS URL, or a PEM public key file, with its issuer and
audience) or the home's own signing key: ``HOME/keys/token-signing.pem``, an ECDSA P-256 key
created on first use with mode 0600, which ``citewell token`` signs with. Only asymmetric
algorithms are accepted, and only those the key's type allows, so ``alg: none`` and an
HS256 token "signed" with the public key are refused before any signature check.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from citewell.errors import CitewellError
from citewell.models.values import new_token
from citewell.serve.jwks import JwksKeys, KeysUnavailable, UnknownKey

KEY_FILE = Path("keys") / "token-signing.pem"
LOCAL_ISSUER = "citewell-local"
LOCAL_AUDIENCE = "citewell"
SIGNING_ALGORITHM = "ES256"
LEEWAY_SECONDS = 30  # clock skew between the token's issuer and this machine
MAX_TTL_SECONDS = 30 * 24 * 3600
REMEMBER_SECONDS = 300  # a verified token is trusted again without its signature check for at most this long
REMEMBERED_TOKENS = 4096
_TTL = re.compile(r"([0-9]{1,7})([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class InsecureKey(CitewellError):
    """The signing key file can be read by others than its owner (or is not a plain file)."""

    code = "insecure_key"


class Unauthorized(Exception):
    """No credential, or one that does not verify: a 401 with this message."""


class IssuerUnavailable(Exception):
    """The issuer's keys could not be fetched: a 503, never a pass."""


def parse_ttl(value: str) -> int:
    """``90``, ``90s``, ``15m``, ``8h``, ``7d``: seconds, 1 up to 30 days."""
    found = _TTL.fullmatch(value.strip())
    seconds = int(found[1]) * _UNITS[found[2]] if found else 0
    if not 1 <= seconds <= MAX_TTL_SECONDS:
        raise ValueError(f"a lifetime is a whole number with s, m, h or d, up to 30d, not {value!r}")
    return seconds


def _check_private(path: Path, fd: int) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise InsecureKey(f"{path} is not a regular file")
    if info.st_mode & 0o077:
        raise InsecureKey(f"{path} can be read or written by others (mode {stat.S_IMODE(info.st_mode):o}); "
                          f"run: chmod 600 {path}")


def home_key(home: Path, create: bool = True) -> ec.EllipticCurvePrivateKey:
    """The home's token-signing key, made on first use (mode 0600, in a 0700 folder); a key file
    that others may read is refused, as ssh refuses one."""
    path = home / KEY_FILE
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        if not create:
            raise
        return _create_key(path)
    with os.fdopen(fd, "rb") as handle:
        _check_private(path, handle.fileno())
        key = serialization.load_pem_private_key(handle.read(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise InsecureKey(f"{path} is not an ECDSA key")
    return key


def _create_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """Written beside the target and linked into place: of two processes creating it at once, one wins
    and the other loads the winner's key."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    temporary = path.with_name(f".{path.name}.{new_token()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            return home_key(path.parent.parent, create=False)
    finally:
        temporary.unlink(missing_ok=True)
    return key


def key_id(public_key: Any) -> str:
    """A short fingerprint of the public key, sent as ``kid``."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()[:16]


def mint(key: ec.EllipticCurvePrivateKey, *, tenant: str, roles: Iterable[str], ttl_seconds: int, tenant_claim: str,
         roles_claim: str, issuer: str = LOCAL_ISSUER, audience: str = LOCAL_AUDIENCE, subject: str | None = None) -> str:
    """A signed ID-style token carrying the tenant and roles under the claim names the API reads.
    ``sub`` is who the token speaks for: conversations belong to it, so a token minted without
    one gets a subject of its own, never one shared with every token of the same tenant and roles."""
    now = int(time.time())
    roles = sorted(set(roles))
    claims = {
        "iss": issuer, "aud": audience, "sub": subject or f"{tenant}/{new_token()}", "iat": now, "nbf": now,
        "exp": now + ttl_seconds, "jti": new_token(), "token_use": "id", tenant_claim: tenant, roles_claim: roles,
    }
    return jwt.encode(claims, key, algorithm=SIGNING_ALGORITHM, headers={"kid": key_id(key.public_key())})


def algorithms_for(public_key: Any) -> list[str]:
    """The algorithms a key of this type verifies: never HMAC, never none."""
    if isinstance(public_key, rsa.RSAPublicKey):
        return ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        return {"secp256r1": ["ES256"], "secp384r1": ["ES384"], "secp521r1": ["ES512"]}.get(public_key.curve.name, [])
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        return ["EdDSA"]
    raise ValueError(f"unsupported public key type {type(public_key).__name__}")


ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


class TokenVerifier:
    """Verifies ``Authorization: Bearer`` tokens against one issuer, audience and key source."""

    def __init__(self, *, issuer: str, audience: str, public_key: Any = None, jwks_url: str | None = None,
                 keys: JwksKeys | None = None, algorithms: Iterable[str] | None = None) -> None:
        """One key source: a public key, a JWKS URL, or a :class:`JwksKeys` (an OIDC issuer's).
        ``algorithms`` pins what tokens may be signed with (asymmetric ones only, and only those
        the key's type allows)."""
        if jwks_url is not None:
            keys = JwksKeys(jwks_url)
        if (public_key is None) == (keys is None):
            raise ValueError("give exactly one of a public key and a JWKS URL")
        if not issuer or not audience:
            raise ValueError("a token issuer needs both its issuer (iss) and the audience (aud) tokens are for")
        self.issuer, self.audience = issuer, audience
        self.public_key = public_key
        allowed = algorithms_for(public_key) if public_key is not None else list(ASYMMETRIC)
        self.algorithms = [a for a in allowed if algorithms is None or a in set(algorithms)]
        if not self.algorithms:
            raise ValueError(f"none of the algorithms {sorted(algorithms or [])} is one this issuer's keys may sign with here")
        self.jwks = keys
        self._verified: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self._verified_lock = threading.Lock()

    def claims(self, authorization: str | None) -> dict[str, Any]:
        """The verified claims, or :class:`Unauthorized` saying what is wrong."""
        token = bearer_token(authorization)
        found = self._without_fetching(token)
        return found if found is not None else self._checked(token)

    def claims_without_fetching(self, authorization: str | None) -> dict[str, Any] | None:
        """The verified claims when knowing them needs no I/O (a remembered token, any token
        against a configured public key, or one whose key the fresh JWKS held names), else None:
        only the issuer's JWKS endpoint can tell.
        The server calls this on its event loop, and :meth:`claims` in a pool thread only on None."""
        return self._without_fetching(bearer_token(authorization))

    def _without_fetching(self, token: str) -> dict[str, Any] | None:
        remembered = self.remembered(token)
        if remembered is not None:
            return remembered
        if self.jwks is not None:
            try:
                kid = jwt.get_unverified_header(token).get("kid")
            except jwt.PyJWTError:
                kid = None  # _verify says what is wrong with it
            if self.jwks.known(kid if isinstance(kid, str) else None) is None:
                return None
        return self._checked(token)

    def _checked(self, token: str) -> dict[str, Any]:
        claims = self._verify(token)
        self._remember(token, claims)
        return _copied(claims)

    def remembered(self, token: str) -> dict[str, Any] | None:
        """A token this verifier checked lately, byte for byte, while it is still within its lifetime.

        A client sends the same token with every request, and an ECDSA check costs about 0.4 ms,
        a tenth of a served search's whole overhead. Only successes are kept, keyed by the whole
        token (so a changed signature is a miss), for at most ``REMEMBER_SECONDS`` (a key the
        issuer withdraws stops being trusted within that time, as the JWKS cache's lifespan)."""
        with self._verified_lock:
            found = self._verified.get(token)
            if found is None:
                return None
            until, claims = found
            if time.time() >= until:
                del self._verified[token]
                return None
            self._verified.move_to_end(token)
        return _copied(claims)

    def _remember(self, token: str, claims: dict[str, Any]) -> None:
        until = min(float(claims["exp"]) + LEEWAY_SECONDS, time.time() + REMEMBER_SECONDS)
        with self._verified_lock:
            self._verified[token] = (until, claims)
            self._verified.move_to_end(token)
            while len(self._verified) > REMEMBERED_TOKENS:
                self._verified.popitem(last=False)

    def _verify(self, token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unauthorized("the bearer token is not a JSON Web Token") from None
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise Unauthorized(f"tokens signed with {algorithm!r} are not accepted here (only {', '.join(self.algorithms)})")
        key, algorithms = self._key(token, algorithm)
        try:
            return jwt.decode(token, key, algorithms=algorithms, audience=self.audience, issuer=self.issuer,
                              leeway=LEEWAY_SECONDS, options={"require": ["exp", "iss", "aud"]})
        except jwt.ExpiredSignatureError:
            raise Unauthorized("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise Unauthorized("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise Unauthorized("the token is for another audience") from None
        except jwt.InvalidIssuerError:
            raise Unauthorized("the token is from another issuer") from None
        except jwt.MissingRequiredClaimError as error:
            raise Unauthorized(f"the token has no {error.claim!r} claim") from None
        except jwt.InvalidSignatureError:
            raise Unauthorized("the token's signature does not verify") from None
        except jwt.PyJWTError:
            raise Unauthorized("the token is not valid") from None

    def _key(self, token: str, algorithm: str) -> tuple[Any, list[str]]:
        if self.jwks is None:
            return self.public_key, [algorithm]
        kid = jwt.get_unverified_header(token).get("kid")
        try:
            found = self.jwks.key(kid if isinstance(kid, str) else None)
        except KeysUnavailable:
            raise IssuerUnavailable("the token issuer's keys cannot be fetched right now; try again") from None
        except UnknownKey:
            raise Unauthorized("the token was not signed by a key of the configured issuer") from None
        if algorithm not in algorithms_for(found.key) or found.algorithm not in (None, algorithm):
            raise Unauthorized(f"the issuer's key {found.kid!r} does not sign with {algorithm!r}")
        return found.key, [algorithm]


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer TOKEN`` header."""
    if not authorization:
        raise Unauthorized("this needs a token: send it as 'Authorization: Bearer TOKEN'")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("the Authorization header must be 'Bearer TOKEN'")
    return token


def _copied(value: Any) -> Any:
    """A copy of decoded JSON (dicts, lists, scalars), so no caller can change what is remembered:
    a quarter of ``copy.deepcopy``'s cost on a token's claims, paid on every request."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def load_public_key(path: Path) -> Any:
    """A PEM public key (or certificate) file of an external issuer."""
    data = path.read_bytes()
    if b"BEGIN CERTIFICATE" in data:
        from cryptography import x509

        return x509.load_pem_x509_certificate(data).public_key()
    return serialization.load_pem_public_key(data)
