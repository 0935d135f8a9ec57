"""``citewell serve``: the HTTP API and the web page on this machine; ``citewell token``: a bearer
token for it, signed with the home's key."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from citewell.cli.common import EXIT_OK, TENANT_HELP, AddCommand, _roles, _tenant
from citewell.errors import InvalidInput


def _port(value: str) -> int:
    if not value.strip().isdigit() or not 0 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"--port takes a port number from 0 to 65535, not {value!r}")
    return int(value)


def add_serve(command: AddCommand) -> None:
    """The arguments of ``citewell serve``."""
    p = command("serve", help="the HTTP API and the web page on this machine")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: this machine only)")
    p.add_argument("--port", type=_port, default=8000, help="the port to listen on (default: 8000)")
    p.add_argument("--demo", action="store_true", help="hand out tokens of the demo's identities at /demo/identities")
    p.add_argument("--grace", type=float, help="seconds uploads in flight may take to finish on SIGTERM "
                   "(default: $CITEWELL_GRACE_SECONDS or 30)")
    oidc = p.add_argument_group("sign-in with an OpenID Connect provider (each also CITEWELL_OIDC_*)")
    oidc.add_argument("--oidc-issuer", metavar="URL", help="the issuer (https); its discovery document must name it exactly")
    oidc.add_argument("--oidc-client-id", metavar="ID", help="the client the page signs in as (a public client: no secret)")
    oidc.add_argument("--oidc-audience", metavar="AUD", help="the aud its ID tokens carry (default: the client id)")
    oidc.add_argument("--oidc-tenant-claim", metavar="CLAIM", help="the claim that names the caller's tenant, or")
    oidc.add_argument("--oidc-tenant", metavar="TENANT", type=_tenant, help="one tenant for every user of the issuer")
    oidc.add_argument("--oidc-groups-claim", metavar="CLAIM", help="the claim that lists the caller's groups (default: groups; "
                      "a dotted name reads a nested claim, e.g. realm_access.roles)")
    oidc.add_argument("--oidc-group-roles", metavar="FILE", type=Path,
                      help='a TOML file mapping groups to roles ("group" = ["role", ...]); without it each group is a role')
    oidc.add_argument("--oidc-scope", metavar="SCOPES", help="the scopes the page asks for (default: openid)")


def cmd_serve(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deployments import default_home
    from citewell.serve.server import serve
    from citewell.serve.settings import OidcSettings, ServeSettings, oidc_settings
    from citewell.settings import settings as app_settings

    settings = ServeSettings.from_env()
    if args.grace is not None:
        settings = settings.model_copy(update={"grace_seconds": args.grace})
    flags = {name: getattr(args, f"oidc_{name}") for name in OidcSettings.model_fields}
    if any(value is not None for value in flags.values()):
        settings = settings.model_copy(update={"oidc": oidc_settings(app_settings(), **flags)})
    serve((args.home or default_home()).expanduser(), host=args.host, port=args.port, demo=args.demo, settings=settings)
    return {}, EXIT_OK


def _ttl(value: str) -> int:
    from citewell.serve.tokens import parse_ttl

    try:
        return parse_ttl(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _subject(value: str) -> str:
    subject = value.strip()
    if not subject or len(subject) > 256 or not subject.isprintable():
        raise argparse.ArgumentTypeError("a subject is 1 to 256 printable characters")
    return subject


def add_token(command: AddCommand) -> None:
    """The arguments of ``citewell token``."""
    p = command("token", help="a bearer token for citewell serve, signed with the home's key")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help='comma-separated roles; "" means none')
    p.add_argument("--ttl", type=_ttl, default="8h", help="lifetime: 90s, 15m, 8h, 7d (at most 30d)")
    p.add_argument("--subject", type=_subject, help="who the token speaks for (a user's name or id): tokens with the "
                   "same subject, tenant and roles share conversations; default: a new subject of its own")


def cmd_token(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deployments import default_home
    from citewell.serve.settings import ServeSettings
    from citewell.serve.tokens import home_key, mint

    settings = ServeSettings.from_env()
    if settings.external_issuer:
        raise InvalidInput("citewell serve is configured for an external issuer (CITEWELL_JWT_*): "
                           "tokens come from that issuer, not from the home's key")
    key = home_key((args.home or default_home()).expanduser())
    token = mint(key, tenant=args.tenant, roles=args.roles, ttl_seconds=args.ttl, tenant_claim=settings.tenant_claim,
                 roles_claim=settings.roles_claim, subject=args.subject)
    return {"token": token, "tenant": args.tenant, "roles": sorted(args.roles), "expires_in": args.ttl}, EXIT_OK
