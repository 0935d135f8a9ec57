"""``citewell ask``: a cited answer, or an honest refusal; ``citewell citations``: what a recorded
answer rested on."""

from __future__ import annotations

import argparse
from typing import Any

from citewell.cli.common import EXIT_OK, ROLES_HELP, TENANT_HELP, AddCommand, _question, _roles, _tenant
from citewell.cli.search import add_filter_flags, operator_note, query_filter
from citewell.identities import operator_identity
from citewell.models.answers import Outcome


def _conversation(value: str) -> str:
    from citewell.models.values import validate_token

    try:
        return validate_token(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--conversation takes the conversation id an ask printed (32 hex digits), not {value!r}") from None


def add_ask(command: AddCommand) -> None:
    """The arguments of ``citewell ask``."""
    p = command("ask", help="a cited answer, or an honest refusal")
    p.add_argument("question", type=_question, help="the question, in words")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help=ROLES_HELP)
    p.add_argument("--mixed-locales", action="store_true",
                   help="take evidence in every language (default: only the best passage's language)")
    p.add_argument("--conversation", type=_conversation, metavar="ID",
                   help="follow up in this conversation (the id an earlier ask printed); without it, one starts")
    add_filter_flags(p)


def cmd_ask(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.asking import answer_turn
    from citewell.deployments import open_local

    services = open_local(args.home, existing=True)
    identity = operator_identity(args.tenant, args.roles)
    filters = query_filter(args)
    answer = answer_turn(services, identity, args.question, args.conversation, filters=filters,
                         mixed_locales=args.mixed_locales)
    payload = answer.model_dump(mode="json")
    if answer.outcome is Outcome.NOT_FOUND:
        # "nothing is about this" is said of what was read: under filters, only what they let through
        payload["operator_note"] = operator_note(services, identity) or (
            "only the documents the filters let through were read (--doc, --prefix, --source, --tag, --locale, --effective-on)"
            if filters is not None else None)
    return payload, EXIT_OK


def add_citations(command: AddCommand) -> None:
    """The arguments of ``citewell citations``."""
    p = command("citations", help="what a recorded answer rested on")
    p.add_argument("answer_id", help="the answer id that ask printed")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles,
                   help="the reader's roles: an answer shows only to a reader who may read every document it cites")


def cmd_citations(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.answers.service import recorded_citations
    from citewell.deployments import open_local

    identity = operator_identity(args.tenant, args.roles)
    record = recorded_citations(open_local(args.home, existing=True), identity, args.answer_id)
    return record.model_dump(mode="json"), EXIT_OK
