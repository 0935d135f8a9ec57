"""Where ``citewell serve`` takes its tokens from: the home's key (``citewell token``, ``--demo``), or an
external issuer by PEM public key or JWKS URL. A key file others can read is refused."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from citewell.serve.tokens import KEY_FILE, LOCAL_AUDIENCE, LOCAL_ISSUER, TokenVerifier, Unauthorized, mint
from tests.serving import CLEAN_EXIT, Served

ISSUER, AUDIENCE = "https://issuer.example/pool", "citewell-web"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "citewell", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def _external(key: rsa.RSAPrivateKey, kid: str = "k1", **claims) -> str:
    now = int(time.time())
    payload = {"iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600, "token_use": "id",
               "custom:tenant": "northpier", "cognito:groups": "[staff support]", **claims}
    payload = {k: v for k, v in payload.items() if v is not None}
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": kid})


def test_citewell_token_makes_a_private_key_and_refuses_one_others_can_read(tmp_path):
    home = tmp_path / "home"
    made = _cli("--home", str(home), "token", "--tenant", "northpier", "--roles", "staff,support", "--ttl", "15m")
    assert made.returncode == 0, made.stderr
    claims = jwt.decode(made.stdout.strip(), options={"verify_signature": False})
    assert claims["custom:tenant"] == "northpier" and claims["cognito:groups"] == ["staff", "support"]
    assert 15 * 60 - 5 <= claims["exp"] - claims["iat"] <= 15 * 60
    key = home / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    again = _cli("--home", str(home), "token", "--tenant", "bluefen", "--roles", "staff", "--json")
    assert json.loads(again.stdout)["tenant"] == "bluefen" and key.read_bytes()  # the same key, not a new one
    assert _cli("--home", str(home), "token", "--tenant", "northpier", "--roles", "staff", "--ttl", "31d").returncode == 2
    os.chmod(key, 0o640)
    refused = _cli("--home", str(home), "token", "--tenant", "northpier", "--roles", "staff")
    assert refused.returncode == 2 and "chmod 600" in refused.stderr and not refused.stdout
    served = _cli("--home", str(home), "serve", "--port", "0")
    assert served.returncode == 2 and "chmod 600" in served.stderr


def test_demo_identities_are_tokens_of_the_demos_people(tmp_path):
    server = Served(tmp_path / "home", demo=True)
    try:
        assert server.client.get("/auth/config").json() == {"oidc": None}  # no provider: the page shows no "Sign in" of one
        listed = server.client.get("/demo/identities").json()
        assert [(i["tenant"], sorted(i["roles"])) for i in listed] == [
            ("northpier", ["staff"]), ("northpier", ["engineering", "support"]),
            ("northpier", ["citewell:write", "hr", "staff"]), ("bluefen", ["staff"])]
        for identity in listed:
            me = server.call("GET", "/me", identity["token"]).json()
            assert (me["tenant"], me["roles"]) == (identity["tenant"], sorted(identity["roles"])) and identity["label"]
            claims = jwt.decode(identity["token"], options={"verify_signature": False})
            assert claims["exp"] - claims["iat"] <= 2 * 3600
    finally:
        assert server.stop() in CLEAN_EXIT


def test_an_external_issuer_by_public_key_file(tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "issuer.pem"
    pem.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    issuer = {"CITEWELL_JWT_PUBLIC_KEY": str(pem), "CITEWELL_JWT_ISSUER": ISSUER, "CITEWELL_JWT_AUDIENCE": AUDIENCE}
    server = Served(tmp_path / "home", env=issuer)
    try:
        assert server.call("GET", "/me", _external(key)).json() == {
            "tenant": "northpier", "roles": ["staff", "support"], "can_write": False}
        assert server.call("GET", "/me", _external(key, aud="another-client")).status_code == 401
        assert server.call("GET", "/me", _external(key, iss="https://other.example")).status_code == 401
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        assert server.call("GET", "/me", _external(other)).status_code == 401
        assert server.call("GET", "/me", server.token("northpier", ["staff"])).status_code == 401  # the home's key is not the issuer
    finally:
        assert server.stop() in CLEAN_EXIT
    demo = _cli("--home", str(tmp_path / "home"), "serve", "--port", "0", "--demo", env=issuer)
    assert demo.returncode == 2 and "external issuer" in demo.stderr


@pytest.fixture
def jwks(tmp_path):
    """The issuer's JWKS document on 127.0.0.1, and the paths fetched from it."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    fetched: list[str] = []
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    document = json.dumps({"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(self.path)
            self.send_response(200 if self.path == "/.well-known/jwks.json" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(document)

        def log_message(self, *args) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield key, f"http://127.0.0.1:{http.server_address[1]}/.well-known/jwks.json", fetched
    http.shutdown()


def test_an_external_issuer_by_jwks_url(tmp_path, jwks):
    key, url, _ = jwks
    server = Served(tmp_path / "home", env={"CITEWELL_JWT_JWKS_URL": url, "CITEWELL_JWT_ISSUER": ISSUER,
                                            "CITEWELL_JWT_AUDIENCE": AUDIENCE})
    try:
        assert server.call("GET", "/me", _external(key)).json()["roles"] == ["staff", "support"]
        assert server.call("GET", "/me", _external(key, kid="unknown")).status_code == 401
        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        assert server.call("GET", "/me", _external(stranger)).status_code == 401
        access = _external(key, token_use="access", **{"custom:tenant": None})
        assert "ID token" in server.call("GET", "/me", access).json()["error"]["message"]  # 403, as on AWS
    finally:
        assert server.stop() in CLEAN_EXIT


def test_only_a_token_that_may_need_the_issuers_keys_waits_for_them(jwks):
    """The server verifies a token on its event loop unless that may fetch the issuer's JWKS: then,
    and only then, in a pool thread. A token of a JWKS issuer is known without fetching once remembered."""
    key, url, fetched = jwks
    verifier = TokenVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url=url)
    header = f"Bearer {_external(key)}"
    assert verifier.claims_without_fetching(header) is None and not fetched
    claims = verifier.claims(header)
    assert claims["custom:tenant"] == "northpier" and len(fetched) == 1
    assert verifier.claims_without_fetching(header) == claims and len(fetched) == 1
    with pytest.raises(Unauthorized):
        verifier.claims_without_fetching("Basic dXNlcjpwYXNz")
    own = ec.generate_private_key(ec.SECP256R1())  # a configured key: checked on the spot, nothing to fetch
    local = TokenVerifier(issuer=LOCAL_ISSUER, audience=LOCAL_AUDIENCE, public_key=own.public_key())
    token = mint(own, tenant="bluefen", roles=["staff"], ttl_seconds=600, tenant_claim="custom:tenant",
                 roles_claim="cognito:groups")
    assert local.claims_without_fetching(f"Bearer {token}")["custom:tenant"] == "bluefen"
