"""An OpenID Connect issuer for ``citewell serve``: discovery, its keys, the rules that turn its
ID tokens into callers, and what the web page needs to sign in with it.

Discovery reads ``ISSUER/.well-known/openid-configuration`` once at start-up and insists that the
document's ``issuer`` is the configured one, character for character (OpenID Connect Discovery
1.0, section 4.3): a document that names another issuer, or endpoints that are not https (plain
http only on a loopback address), stops the server with a message rather than trusting it.
Tokens are then verified against its ``jwks_uri`` (:mod:`citewell.serve.jwks`), with ``aud`` the
client id, and only with the asymmetric algorithms the issuer says it signs ID tokens with.

The page is a public client (no secret): it runs the authorization code flow with PKCE (S256)
against the issuer's endpoints and sends the ID token it gets as its bearer token.
"""

from __future__ import annotations

import ipaddress
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from citewell.errors import InvalidInput, readable
from citewell.identities import ClaimRules
from citewell.models.values import validate_name
from citewell.serve.jwks import JwksKeys, read_capped
from citewell.serve.settings import OidcSettings
from citewell.serve.tokens import ASYMMETRIC, TokenVerifier

WELL_KNOWN = "/.well-known/openid-configuration"
MAX_DISCOVERY_BYTES = 256 * 1024


class OidcMisconfigured(InvalidInput):
    """The issuer's discovery document cannot be fetched or trusted, or the mapping is unusable."""

    code = "oidc_misconfigured"


class Discovery(BaseModel):
    """What serve reads of the issuer's discovery document."""

    model_config = ConfigDict(extra="ignore")

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    id_token_signing_alg_values_supported: list[str] = ["RS256"]
    end_session_endpoint: str | None = None


def _secure_url(url: str, what: str) -> str:
    """https, or http to a loopback address (a provider on this machine, as the tests run one)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not host or parts.username or parts.password or parts.fragment or \
            not (parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        raise OidcMisconfigured(f"the issuer's {what} must be an https URL (http only on this machine), not {url!r}")
    return url


def discover(issuer: str, timeout: float = 10.0) -> Discovery:
    """The issuer's discovery document, refused unless its ``issuer`` is exactly ``issuer``."""
    _secure_url(issuer, "issuer")
    url = issuer.rstrip("/") + WELL_KNOWN
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client, client.stream("GET", url) as response:
            if response.status_code != 200:
                raise OidcMisconfigured(f"{url} answered {response.status_code}, not the issuer's discovery document")
            body = read_capped(response, MAX_DISCOVERY_BYTES)
            if body is None:
                raise OidcMisconfigured(f"{url} is larger than a discovery document")
        found = Discovery.model_validate_json(body)
    except httpx.HTTPError as error:
        raise OidcMisconfigured(f"the issuer's discovery document at {url} cannot be fetched: {error}") from None
    except ValidationError as error:
        raise OidcMisconfigured(f"{url} is not a usable discovery document: {readable(error)}") from None
    if found.issuer != issuer:
        raise OidcMisconfigured(f"{url} names the issuer {found.issuer!r}, not {issuer!r}: the issuer must match exactly")
    for what in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        _secure_url(getattr(found, what), what)
    return found


def read_group_roles(path: Path) -> dict[str, frozenset[str]]:
    """The group-to-role mapping: a TOML table whose keys are group names exactly as the token
    carries them (quoted: an Entra group's object id, a Keycloak path "/staff/nurses") and whose
    values are a role or a list of roles."""
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise OidcMisconfigured(f"the group-to-role file {path} cannot be read: {error}") from None
    mapping: dict[str, frozenset[str]] = {}
    for group, roles in table.items():
        listed = [roles] if isinstance(roles, str) else roles
        if not isinstance(listed, list) or not listed or not all(isinstance(r, str) for r in listed):
            raise OidcMisconfigured(f"{path}: the group {group!r} must map to a role or a list of roles")
        try:
            mapping[group] = frozenset(validate_name(r, f"{path}: a role of the group {group!r}") for r in listed)
        except ValueError as error:
            raise OidcMisconfigured(str(error)) from None
    if not mapping:
        raise OidcMisconfigured(f"{path} maps no group to a role: nobody could sign in")
    return mapping


class OidcIssuer:
    """One configured OpenID Connect issuer: its verifier, its claim rules and the page's sign-in settings."""

    def __init__(self, settings: OidcSettings, redirect_uri: str, discovery: Discovery | None = None) -> None:
        self.settings, self.redirect_uri = settings, redirect_uri
        self.discovery = discovery or discover(settings.issuer)
        algorithms = [a for a in self.discovery.id_token_signing_alg_values_supported if a in ASYMMETRIC]
        if not algorithms:
            advertised = self.discovery.id_token_signing_alg_values_supported
            raise OidcMisconfigured(f"the issuer signs ID tokens only with {advertised}: "
                                    "serve takes asymmetric signatures only (RS*, PS*, ES*, EdDSA)")
        self.keys = JwksKeys(self.discovery.jwks_uri)
        self.verifier = TokenVerifier(issuer=self.discovery.issuer, audience=settings.audience or settings.client_id,
                                      keys=self.keys, algorithms=algorithms)
        try:
            self.rules = ClaimRules(
                issuer=self.discovery.issuer, tenant_claim=settings.tenant_claim, tenant=settings.tenant,
                groups_claim=settings.groups_claim, subject_prefix="oidc:",
                group_roles=read_group_roles(settings.group_roles) if settings.group_roles else None)
        except ValidationError as error:
            raise OidcMisconfigured(f"the OpenID Connect identity mapping: {readable(error)}") from None

    def page_config(self) -> dict[str, Any]:
        """What the page needs to run the authorization code flow with PKCE."""
        return {"issuer": self.discovery.issuer, "authorization_endpoint": self.discovery.authorization_endpoint,
                "token_endpoint": self.discovery.token_endpoint, "client_id": self.settings.client_id,
                "redirect_uri": self.redirect_uri, "scope": self.settings.scope,
                "end_session_endpoint": self.discovery.end_session_endpoint}

    def origins(self) -> list[str]:
        """The origins the page calls (the token endpoint), for its Content-Security-Policy."""
        parts = urlsplit(self.discovery.token_endpoint)
        return [f"{parts.scheme}://{parts.netloc}"]
