"""A verified token is trusted again without its signature check, but only byte for byte, only within
its lifetime and only for a bounded time: the memory must never accept what a fresh check refuses
for longer than ``REMEMBER_SECONDS``."""

from __future__ import annotations

import time

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from citewell.serve import tokens
from citewell.serve.tokens import LOCAL_AUDIENCE, LOCAL_ISSUER, TokenVerifier, Unauthorized, mint


def _token(key: ec.EllipticCurvePrivateKey, tenant: str = "northpier", ttl: int = 3600) -> str:
    return mint(key, tenant=tenant, roles=["staff"], ttl_seconds=ttl, tenant_claim="custom:tenant",
                roles_claim="cognito:groups")


@pytest.fixture
def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _verifier(key: ec.EllipticCurvePrivateKey) -> TokenVerifier:
    return TokenVerifier(issuer=LOCAL_ISSUER, audience=LOCAL_AUDIENCE, public_key=key.public_key())


def test_a_remembered_token_gives_its_own_claims_and_a_caller_cannot_change_them(key):
    verifier = _verifier(key)
    token = _token(key)
    for _ in range(3):  # checked, then remembered twice
        claims = verifier.claims(f"Bearer {token}")
        assert claims["custom:tenant"] == "northpier" and claims["cognito:groups"] == ["staff"]
        claims["custom:tenant"] = "bluefen"
        claims["cognito:groups"].append("hr")


def test_a_token_with_one_byte_changed_is_checked_again_and_refused(key):
    verifier = _verifier(key)
    token = _token(key)
    verifier.claims(f"Bearer {token}")
    header, payload, signature = token.split(".")
    forged_signature = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    with pytest.raises(Unauthorized):
        verifier.claims(f"Bearer {header}.{payload}.{forged_signature}")
    other = _token(key, tenant="bluefen").split(".")[1]  # another tenant's claims under the first token's signature
    with pytest.raises(Unauthorized, match="signature"):
        verifier.claims(f"Bearer {header}.{other}.{signature}")


def test_trust_in_a_remembered_token_ends_after_the_bounded_time(key, monkeypatch):
    verifier = _verifier(key)
    token = _token(key)
    verifier.claims(f"Bearer {token}")
    verifier.public_key = ec.generate_private_key(ec.SECP256R1()).public_key()  # the issuer's key changed
    assert verifier.claims(f"Bearer {token}")["custom:tenant"] == "northpier"  # within the window: remembered
    later = time.time() + tokens.REMEMBER_SECONDS + 1
    monkeypatch.setattr(tokens.time, "time", lambda: later)
    with pytest.raises(Unauthorized, match="signature"):
        verifier.claims(f"Bearer {token}")


def test_a_remembered_token_is_not_trusted_past_its_expiry(key, monkeypatch):
    verifier = _verifier(key)
    token = _token(key, ttl=60)
    verifier.claims(f"Bearer {token}")
    verifier.public_key = ec.generate_private_key(ec.SECP256R1()).public_key()
    past_expiry = time.time() + 60 + tokens.LEEWAY_SECONDS + 1  # before REMEMBER_SECONDS ends
    monkeypatch.setattr(tokens.time, "time", lambda: past_expiry)
    with pytest.raises(Unauthorized):
        verifier.claims(f"Bearer {token}")


def test_the_memory_is_bounded_and_forgets_the_least_recent_first(key, monkeypatch):
    monkeypatch.setattr(tokens, "REMEMBERED_TOKENS", 3)
    verifier = _verifier(key)
    made = [_token(key, tenant=f"tenant-{n}") for n in range(4)]
    for token in made:
        verifier.claims(f"Bearer {token}")
    verifier.public_key = ec.generate_private_key(ec.SECP256R1()).public_key()
    with pytest.raises(Unauthorized, match="signature"):
        verifier.claims(f"Bearer {made[0]}")  # pushed out by the fourth: checked again, and the key changed
    assert [verifier.claims(f"Bearer {t}")["custom:tenant"] for t in made[1:]] == ["tenant-1", "tenant-2", "tenant-3"]
