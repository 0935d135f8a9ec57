"""What naming the caller of a bearer token costs serve per request, with the home's key alone and
with an OpenID Connect issuer beside it (two verifiers, chosen by the token's ``iss``).

``python -m benchmarks.bearer_cost [--calls 20000]``

Times, in process, the two calls the server makes for a request whose token it verified lately:
``claims_without_fetching`` (on the event loop) and ``identity`` (the claims and the caller, what
the MCP transport calls). The best of five runs of ``--calls`` calls each, in microseconds a call.
"""

from __future__ import annotations

import argparse
import functools
import timeit

from cryptography.hazmat.primitives.asymmetric import ec

from citewell.api.settings import ApiSettings
from citewell.identities import ClaimRules
from citewell.serve.bearer import BearerTokens
from citewell.serve.tokens import LOCAL_AUDIENCE, LOCAL_ISSUER, TokenVerifier, mint

ISSUER = "https://login.example.org/realms/staff"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    calls = parser.parse_args().calls
    home, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    local = TokenVerifier(issuer=LOCAL_ISSUER, audience=LOCAL_AUDIENCE, public_key=home.public_key())
    oidc = TokenVerifier(issuer=ISSUER, audience="citewell-page", public_key=other.public_key())
    rules = ApiSettings(issuer_rules=(ClaimRules(issuer=ISSUER, tenant="northpier", groups_claim="groups"),)).claim_rules
    header = "Bearer " + mint(home, tenant="northpier", roles=["staff"], ttl_seconds=600, tenant_claim="custom:tenant",
                              roles_claim="cognito:groups")
    for name, tokens in (("home key alone", BearerTokens([local], rules)),
                         ("home key and an OIDC issuer", BearerTokens([local, oidc], rules))):
        tokens.claims(header)  # verified once, as the first request does
        claims = min(timeit.repeat(functools.partial(tokens.claims_without_fetching, header), number=calls, repeat=5)) / calls
        identity = min(timeit.repeat(functools.partial(tokens.identity, header), number=calls, repeat=5)) / calls
        print(f"{name}: claims_without_fetching {claims * 1e6:.1f} us, identity {identity * 1e6:.1f} us")


if __name__ == "__main__":
    main()
