"""``citewell serve`` with an OpenID Connect issuer (``--oidc-issuer``) against a real provider on
loopback (tests/oidc_provider.py): discovery and its exact issuer, RS256 and ES256 ID tokens, key
rotation, unknown key ids (whose refetches are rate-limited), audience, issuer, expiry and
not-before, algorithm confusion, and groups mapped to roles, with a token that lacks what the
mapping needs getting nothing. The home's own tokens keep working beside the issuer's."""

from __future__ import annotations

import secrets
import time

import httpx
import pytest

from citewell.serve.jwks import JwksKeys, KeysUnavailable, UnknownKey
from tests.oidc_provider import Provider, ec_key, hs256_with_public_key, rsa_key, unsigned
from tests.serving import CLEAN_EXIT, Served

GROUP_ROLES = """\
# group (as the token names it) = role, or a list of roles
"citewell-staff" = "staff"
"/northpier/engineering" = ["support", "engineering"]
"6f1c0e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b" = ["hr", "citewell:write"]
"""
STAFF = {"org": "northpier", "groups": ["citewell-staff", "Everyone"]}


@pytest.fixture
def provider():
    found = Provider().start()
    yield found
    found.stop()


def _serve(tmp_path, provider: Provider, *extra: str) -> Served:
    mapping = tmp_path / "group-roles.toml"
    mapping.write_text(GROUP_ROLES)
    return Served(tmp_path / "home", args=["--oidc-issuer", provider.issuer, "--oidc-client-id", provider.client_id,
                                            "--oidc-group-roles", str(mapping), *(extra or ("--oidc-tenant-claim", "org"))])


def _me(server: Served, token: str) -> httpx.Response:
    return server.call("GET", "/me", token)


def test_tokens_of_the_issuer_name_callers_by_their_mapped_groups(tmp_path, provider):
    server = _serve(tmp_path, provider)
    try:
        assert _me(server, provider.sign(STAFF)).json() == {"tenant": "northpier", "roles": ["staff"], "can_write": False}
        es256 = provider.sign({"org": "northpier", "groups": ["/northpier/engineering"]}, key=provider.keys[1])
        assert _me(server, es256).json()["roles"] == ["engineering", "support"]
        writer = _me(server, provider.sign({"org": "northpier", "groups": ["6f1c0e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b"]})).json()
        assert writer["roles"] == ["citewell:write", "hr"] and writer["can_write"]
        # A group the mapping does not name grants nothing, even one spelled like a role.
        assert _me(server, provider.sign({"org": "northpier", "groups": ["staff", "Everyone"]})).status_code == 403
        assert _me(server, provider.sign({"org": "northpier"})).status_code == 403  # no groups at all
        refused = _me(server, provider.sign({"groups": ["citewell-staff"]}))  # no tenant
        assert refused.status_code == 403 and "no tenant" in refused.json()["error"]["message"]
        assert _me(server, provider.sign({"org": "not a tenant!", "groups": ["citewell-staff"]})).status_code == 403
        for garbage in ("not-a-token", "a.b.c", "e30.e30.e30"):  # whichever issuer it claims, none: a 401
            reply = _me(server, garbage)
            assert reply.status_code == 401, (garbage, reply.text)
        # The home's own tokens (citewell token, the demo) are still taken beside the issuer's.
        assert _me(server, server.token("bluefen", ["staff"])).json()["tenant"] == "bluefen"
        config = server.client.get("/auth/config").json()["oidc"]
        assert config == {"issuer": provider.issuer, "authorization_endpoint": f"{provider.issuer}/authorize",
                          "token_endpoint": f"{provider.issuer}/token", "client_id": provider.client_id,
                          "redirect_uri": f"{server.url}/", "scope": "openid", "end_session_endpoint": None}
        page = server.client.get("/")
        assert f"connect-src 'self' {provider.base};" in page.headers["content-security-policy"]
        # the provider's panel comes shown, naming its host: nothing appears above the token form later
        host = provider.issuer.split("/")[2]
        assert '<div id="oidc" class="panel">' in page.text and f'<span id="oidc-issuer">{host}</span>' in page.text
    finally:
        assert server.stop() in CLEAN_EXIT


def test_audience_issuer_lifetime_and_algorithms_are_checked(tmp_path, provider):
    server = _serve(tmp_path, provider)
    try:
        assert _me(server, provider.sign(STAFF)).status_code == 200
        now = int(time.time())
        cases = {
            "another audience": provider.sign(STAFF, aud="another-client"),
            "another issuer": provider.sign(STAFF, iss=provider.base + "/realms/other"),
            "has expired": provider.sign(STAFF, iat=now - 900, nbf=now - 900, exp=now - 120),
            "not valid yet": provider.sign(STAFF, nbf=now + 600, exp=now + 900),
            "no 'exp'": provider.sign(STAFF, drop=("exp",)),
            "HS256": hs256_with_public_key(provider, {**STAFF, "iss": provider.issuer, "aud": provider.client_id,
                                                     "sub": "x", "exp": now + 300}),
            "'none'": unsigned({**STAFF, "iss": provider.issuer, "aud": provider.client_id, "sub": "x", "exp": now + 300},
                               provider.keys[0].kid),
            # An ES256 token that names the RSA key, and an RSA key declared RS256 used for PS256.
            "does not sign with 'ES256'": provider.sign(STAFF, key=provider.keys[1], headers={"kid": provider.keys[0].kid}),
            "does not sign with 'PS256'": _ps256(provider),
        }
        for says, token in cases.items():
            reply = _me(server, token)
            assert reply.status_code == 401 and says in reply.json()["error"]["message"], (says, reply.text)
            assert reply.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
        # A small clock skew is forgiven: expired 10 seconds ago, or valid from 10 seconds on.
        assert _me(server, provider.sign(STAFF, exp=now - 10)).status_code == 200
        assert _me(server, provider.sign(STAFF, nbf=now + 10)).status_code == 200
    finally:
        assert server.stop() in CLEAN_EXIT


def _ps256(provider: Provider) -> str:
    import jwt

    key = provider.keys[0]
    now = int(time.time())
    return jwt.encode({**STAFF, "iss": provider.issuer, "aud": provider.client_id, "sub": "x", "exp": now + 300},
                      key.private, algorithm="PS256", headers={"kid": key.kid})


def test_a_rotated_key_is_fetched_and_made_up_key_ids_do_not_refetch(tmp_path, provider):
    server = _serve(tmp_path, provider)
    try:
        assert _me(server, provider.sign(STAFF)).status_code == 200
        assert provider.jwks_fetches == 1
        for _ in range(3):  # a known key: nothing fetched again
            assert _me(server, provider.sign(STAFF, key=provider.keys[1])).status_code == 200
        assert provider.jwks_fetches == 1
        fresh = provider.rotate()
        assert _me(server, provider.sign(STAFF, key=fresh)).status_code == 200  # its kid was new: one refetch
        assert provider.jwks_fetches == 2
        for _ in range(20):  # an attacker's made-up kids, within the refetch interval: no fetch at all
            stranger = rsa_key(secrets.token_hex(4))
            reply = _me(server, provider.sign(STAFF, key=stranger))
            assert reply.status_code == 401 and "not signed by a key of the configured issuer" in reply.text
        assert provider.jwks_fetches == 2
    finally:
        assert server.stop() in CLEAN_EXIT


def test_a_fixed_tenant_and_keycloak_realm_roles_from_the_environment(tmp_path, provider):
    server = Served(tmp_path / "home", env={"CITEWELL_OIDC_ISSUER": provider.issuer, "CITEWELL_OIDC_CLIENT_ID": provider.client_id,
                                            "CITEWELL_OIDC_TENANT": "northpier", "CITEWELL_OIDC_GROUPS_CLAIM": "realm_access.roles"})
    try:
        keycloak = {"realm_access": {"roles": ["staff", "offline_access", "hr,finance"]}, "org": "bluefen"}
        assert _me(server, provider.sign(keycloak)).json() == {  # no mapping: each role whole, as Cognito's groups
            "tenant": "northpier", "roles": ["offline_access", "staff"], "can_write": False}
        assert _me(server, provider.sign({"realm_access": {"roles": []}})).status_code == 403
        assert _me(server, provider.sign({"groups": ["staff"]})).status_code == 403
    finally:
        assert server.stop() in CLEAN_EXIT


def test_a_discovery_document_that_names_another_issuer_stops_the_server(tmp_path, provider):
    import subprocess
    import sys

    provider.advertised_issuer = provider.issuer + "/"  # one character off is another issuer
    done = subprocess.run([sys.executable, "-m", "citewell", "--home", str(tmp_path / "home"), "serve", "--port", "0",
                           "--oidc-issuer", provider.issuer, "--oidc-client-id", provider.client_id,
                           "--oidc-tenant", "northpier"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "must match exactly" in done.stderr, done.stderr
    lacking = subprocess.run([sys.executable, "-m", "citewell", "--home", str(tmp_path / "home"), "serve", "--port", "0",
                              "--oidc-issuer", provider.issuer, "--oidc-client-id", provider.client_id],
                             capture_output=True, text=True, timeout=120)
    assert lacking.returncode == 2 and "--oidc-tenant" in lacking.stderr, lacking.stderr


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_key_cache_refetches_an_unknown_kid_once_per_interval_and_survives_an_outage(provider):
    clock = Clock()
    keys = JwksKeys(f"{provider.issuer}/jwks", clock=clock)
    assert keys.known("rsa-1") is None and not provider.jwks_fetches  # nothing held yet: the caller must fetch
    assert keys.key("rsa-1").kid == "rsa-1" and provider.jwks_fetches == 1
    assert keys.known("ec-1") is not None
    with pytest.raises(UnknownKey):
        keys.key("made-up-1")
    assert provider.jwks_fetches == 2  # the first unknown kid refetches
    with pytest.raises(UnknownKey):
        keys.key("made-up-2")
    assert provider.jwks_fetches == 2  # the next, within 30 s, does not
    clock.now += 31
    provider.keys.append(ec_key("ec-2"))
    assert keys.key("ec-2").kid == "ec-2" and provider.jwks_fetches == 3
    clock.now += 301  # past the set's lifespan: refreshed on next use, not served from memory
    assert keys.known("rsa-1") is None
    provider.stop()  # the issuer goes away: the set held is used for up to an hour
    assert keys.key("rsa-1").kid == "rsa-1"
    clock.now += 3600
    with pytest.raises(KeysUnavailable):
        keys.key("rsa-1")
    provider.start()  # (the fixture stops it again)


def test_an_issuers_reply_over_its_cap_is_refused_not_held():
    from citewell.serve.jwks import read_capped

    def reply(size: int) -> httpx.Response:
        return httpx.Response(200, stream=httpx.ByteStream(b"k" * size))

    assert read_capped(reply(1024), 1024) == b"k" * 1024
    assert read_capped(reply(1025), 1024) is None
