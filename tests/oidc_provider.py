"""A small OpenID Connect provider on 127.0.0.1 for the tests: discovery, JWKS, an authorize
endpoint that approves at once (as the user the test chose) and redirects back with a code, and a
token endpoint that checks the PKCE verifier and signs real RS256 or ES256 ID tokens.

It is an outside service's stand-in (as moto is AWS's): the tests drive citewell's own code,
serve and the page, against it. It counts what is fetched from it, so a test can say how often
serve asked for the keys.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

REALM = "/realms/citewell"  # an issuer with a path, as Keycloak's are


@dataclass
class Key:
    kid: str
    private: Any
    algorithm: str

    def jwk(self) -> dict[str, Any]:
        maker = jwt.algorithms.RSAAlgorithm if self.algorithm.startswith(("RS", "PS")) else jwt.algorithms.ECAlgorithm
        return {**json.loads(maker.to_jwk(self.private.public_key())), "kid": self.kid, "use": "sig", "alg": self.algorithm}


def rsa_key(kid: str) -> Key:
    return Key(kid, rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")


def ec_key(kid: str) -> Key:
    return Key(kid, ec.generate_private_key(ec.SECP256R1()), "ES256")


@dataclass
class Provider:
    """Start with :meth:`start`; ``user`` is whom the authorize endpoint approves next."""

    client_id: str = "citewell-page"
    keys: list[Key] = field(default_factory=lambda: [rsa_key("rsa-1"), ec_key("ec-1")])
    user: dict[str, Any] = field(default_factory=dict)
    advertised_issuer: str | None = None  # a discovery document that names another issuer
    fetched: list[str] = field(default_factory=list)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    base: str = ""

    @property
    def issuer(self) -> str:
        return self.base + REALM

    @property
    def jwks_fetches(self) -> int:
        return sum(1 for path in self.fetched if path == f"{REALM}/jwks")

    def sign(self, claims: dict[str, Any] | None = None, *, key: Key | None = None, drop: tuple[str, ...] = (),
             headers: dict[str, Any] | None = None, **overrides: Any) -> str:
        """An ID token for ``claims`` (a user's), with the standard claims filled in."""
        key = key or self.keys[0]
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": self.client_id, "sub": "user-1", "iat": now, "nbf": now, "exp": now + 300,
                   **(claims or {}), **overrides}
        payload = {k: v for k, v in payload.items() if k not in drop}
        return jwt.encode(payload, key.private, algorithm=key.algorithm, headers={"kid": key.kid, **(headers or {})})

    def rotate(self) -> Key:
        """A new signing key first in the set (the old ones stay published); returns it."""
        fresh = rsa_key(f"rsa-{len(self.keys) + 1}")
        self.keys.insert(0, fresh)
        return fresh

    def start(self) -> Provider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", "Cache-Control": "no-store",
                                    **(headers or {})}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                provider.fetched.append(parts.path)
                if parts.path == f"{REALM}/.well-known/openid-configuration":
                    self._send(200, provider.discovery())
                elif parts.path == f"{REALM}/jwks":
                    self._send(200, {"keys": [k.jwk() for k in provider.keys]})
                elif parts.path == f"{REALM}/authorize":
                    self._authorize({k: v[0] for k, v in parse_qs(parts.query).items()})
                else:
                    self._send(404, {"error": "not_found"})

            def _authorize(self, query: dict[str, str]) -> None:
                if query.get("response_type") != "code" or query.get("client_id") != provider.client_id \
                        or query.get("code_challenge_method") != "S256" or not query.get("code_challenge") \
                        or "openid" not in query.get("scope", "").split():
                    self._send(400, {"error": "invalid_request", "query": query})
                    return
                code = secrets.token_urlsafe(16)
                provider.codes[code] = {"challenge": query["code_challenge"], "redirect_uri": query["redirect_uri"],
                                        "nonce": query.get("nonce"), "user": dict(provider.user)}
                target = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query.get("state", "")})
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_OPTIONS(self) -> None:
                self._send(204, None, self._cors())

            def _cors(self) -> dict[str, str]:
                return {"Access-Control-Allow-Origin": self.headers.get("Origin") or "*",
                        "Access-Control-Allow-Methods": "POST", "Access-Control-Allow-Headers": "Content-Type"}

            def do_POST(self) -> None:
                parts = urlsplit(self.path)
                provider.fetched.append(parts.path)
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if parts.path != f"{REALM}/token":
                    self._send(404, {"error": "not_found"})
                    return
                granted = provider.codes.pop(form.get("code", ""), None)  # a code is good once
                verifier = form.get("code_verifier", "")
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if form.get("grant_type") != "authorization_code" or granted is None \
                        or form.get("client_id") != provider.client_id or form.get("redirect_uri") != granted["redirect_uri"]:
                    self._send(400, {"error": "invalid_grant"}, self._cors())
                    return
                if challenge != granted["challenge"]:
                    self._send(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}, self._cors())
                    return
                claims = {**granted["user"], **({"nonce": granted["nonce"]} if granted["nonce"] else {})}
                self._send(200, {"id_token": provider.sign(claims), "access_token": secrets.token_urlsafe(24),
                                 "token_type": "Bearer", "expires_in": 300}, self._cors())

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self._http.server_address[1]}"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def discovery(self) -> dict[str, Any]:
        return {"issuer": self.advertised_issuer or self.issuer, "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/jwks",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256", "PS256", "ES256", "HS256", "none"],
                "code_challenge_methods_supported": ["S256"]}


def hs256_with_public_key(provider: Provider, claims: dict[str, Any]) -> str:
    """The classic confusion: an HS256 token whose HMAC secret is the issuer's public RSA key (PEM)."""
    from cryptography.hazmat.primitives import serialization

    secret = provider.keys[0].private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return _unsafe_token({"alg": "HS256", "typ": "JWT", "kid": provider.keys[0].kid}, claims, secret)


def unsigned(claims: dict[str, Any], kid: str) -> str:
    """``alg: none``: no signature at all."""
    return _unsafe_token({"alg": "none", "typ": "JWT", "kid": kid}, claims, None)


def _unsafe_token(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None) -> str:
    import hmac

    def part(value: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    signing_input = f"{part(header)}.{part(claims)}"
    signature = b"" if secret is None else hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"
