"""``citewell login``: an ID token for citewell on AWS, from its Cognito user pool."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from citewell.cli.common import EXIT_OK, AddCommand
from citewell.errors import InvalidInput


def add_login(command: AddCommand) -> None:
    """The arguments of ``citewell login``."""
    p = command("login", help="an ID token for citewell on AWS, from its Cognito user pool")
    p.add_argument("--client-id", required=True, help="the user pool's app client: the stack's ClientId output")
    p.add_argument("--username", required=True, help="the user's name in the pool: the email address it was created with")
    p.add_argument("--region", help="the stack's region (default: $AWS_REGION, $AWS_DEFAULT_REGION or the AWS profile's)")
    p.add_argument("--password-stdin", action="store_true",
                   help="read the password from stdin, and on a first sign-in the new password from the next line "
                        "(default: ask on the terminal)")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="write the ID token to FILE, readable by this user only, instead of printing it")


def cmd_login(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """USER_PASSWORD_AUTH against the stack's user pool; a first sign-in replaces the temporary password."""
    from citewell.api.settings import ApiSettings
    from citewell.cli.cognito import claims, client, region_or_default, sign_in

    if args.password_stdin:
        def password() -> str:
            return _stdin_line("no password on stdin")

        def new_password() -> str:
            return _stdin_line("no new password on stdin: a first sign-in reads it from the line after the password")
    else:
        import getpass

        def password() -> str:
            return getpass.getpass(f"Password for {args.username}: ")

        def new_password() -> str:
            chosen = getpass.getpass("First sign-in: choose a new password: ")
            if getpass.getpass("The new password again: ") != chosen:
                raise InvalidInput("the two new passwords differ")
            return chosen

    region = region_or_default(args.region)
    given = password()
    if not given:
        raise InvalidInput("the password is empty")
    result = sign_in(client(region), args.client_id, args.username, given, new_password)
    token = result["IdToken"]
    settings = ApiSettings.from_env()
    found = claims(token)
    roles = found.get(settings.roles_claim) or []
    who = {"username": args.username, "tenant": found.get(settings.tenant_claim),
           "roles": sorted(roles if isinstance(roles, list) else [roles]), "expires_in": result.get("ExpiresIn")}
    if args.out is None:
        return {"id_token": token, **who}, EXIT_OK
    _write_private(args.out, token + "\n")
    return {"written": str(args.out), **who}, EXIT_OK


def _stdin_line(missing: str) -> str:
    line = sys.stdin.readline()
    if not line.strip("\r\n"):
        raise InvalidInput(missing)
    return line.rstrip("\r\n")


def _write_private(path: Path, text: str) -> None:
    """Mode 0600 from the first byte, also over a file that was readable by others."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        os.fchmod(fd, 0o600)
        file.write(text)


def show_login(payload: dict[str, Any]) -> None:
    """Without rich (the `local` extra): login runs where only the `aws` extra is installed. The
    token alone on stdout (TOKEN=$(citewell login ...)), who signed in on stderr."""
    from citewell.terminal import printable

    if "id_token" in payload:
        print(payload["id_token"])
    where = f"; written to {payload['written']}" if "written" in payload else ""
    print(printable(f"citewell: signed in as {payload['username']} (tenant {payload['tenant'] or 'none'}, roles "
                    f"{','.join(payload['roles']) or 'none'}); the ID token is valid {payload['expires_in']} s{where}"),
          file=sys.stderr)
