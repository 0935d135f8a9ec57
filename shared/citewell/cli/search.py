"""``citewell search``: hybrid search under an identity; the filter flags ``ask`` takes too, and the
operator's note on an empty result."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from citewell.cli.common import (
    EXIT_OK,
    LANES_HELP,
    ROLES_HELP,
    TENANT_HELP,
    AddCommand,
    _document_id,
    _lanes,
    _question,
    _roles,
    _tenant,
)
from citewell.errors import InvalidInput, readable
from citewell.identities import operator_identity
from citewell.models.identity import Identity

if TYPE_CHECKING:
    from datetime import date

    from citewell.filters import SearchFilter
    from citewell.services import Services


def _date(value: str) -> date:
    from datetime import date

    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a date is written YYYY-MM-DD, not {value!r}") from None


def query_filter(args: argparse.Namespace) -> SearchFilter | None:
    """The search and ask flags that narrow what is read, as one filter (None when none was given)."""
    from pydantic import ValidationError

    from citewell.filters import SearchFilter

    try:
        found = SearchFilter(document_ids=frozenset(args.doc or ()), prefix=args.prefix, source=args.source,
                             tags=frozenset(args.tag or ()), locale=args.locale, effective_on=args.effective_on)
    except ValidationError as error:
        raise InvalidInput(readable(error)) from None
    return None if found.is_empty else found


def add_filter_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("filters", "narrow what is read (inside both lanes, before ranking); each given must hold")
    group.add_argument("--doc", action="append", type=_document_id, metavar="ID", help="only this document (repeatable)")
    group.add_argument("--prefix", metavar="FOLDER/", help="only documents whose id is under this folder, e.g. policies/")
    group.add_argument("--source", help="only documents from exactly this source")
    group.add_argument("--tag", action="append", metavar="TAG", help="only documents carrying this tag (repeatable: all of them)")
    group.add_argument("--locale", help="only documents in this language (en also takes en-GB)")
    group.add_argument("--effective-on", type=_date, metavar="DATE",
                       help="only documents in effect on this day (YYYY-MM-DD, UTC)")


def _k(value: str) -> int:
    if not value.strip().isascii() or not value.strip().isdigit() or not 1 <= int(value) <= 100:
        raise argparse.ArgumentTypeError(f"--k takes a whole number from 1 to 100, not {value!r}")
    return int(value)


def add_search(command: AddCommand) -> None:
    """The arguments of ``citewell search``."""
    p = command("search", help="hybrid search under an identity")
    p.add_argument("question", type=_question, help="what to look for, in words")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help=ROLES_HELP)
    p.add_argument("--k", type=_k, default=10, help="how many hits, 1 to 100 (default: 10)")
    p.add_argument("--lanes", type=_lanes, default=("hybrid",), help=f"{LANES_HELP} (default: hybrid)")
    add_filter_flags(p)


def cmd_search(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deployments import open_local
    from citewell.search import LANE_CHOICES, search

    lanes = tuple(dict.fromkeys(lane for name in args.lanes for lane in LANE_CHOICES[name]))
    identity = operator_identity(args.tenant, args.roles)
    services = open_local(args.home, existing=True)
    result = search(services, identity, args.question, k=args.k, lanes=lanes, filters=query_filter(args))
    payload = result.model_dump(mode="json")
    if not result.hits:
        payload["operator_note"] = operator_note(services, identity)
    return payload, EXIT_OK


def operator_note(services: Services, identity: Identity) -> str | None:
    """Why nothing was found, when the cause is the caller's scope: a tenant with no documents
    (a mistyped ``--tenant``) or roles no document allows. For the operator's CLI only: the API
    never says it, as it would tell a caller what exists beyond what they may read."""
    served = [d for d in services.documents.list_documents(identity.tenant) if d.active_revision]
    if not served:
        tenants = sorted({d.tenant for d in services.documents.all_documents() if d.active_revision})
        known = f"; tenants with documents here: {', '.join(tenants)}" if tenants else "; this home has no documents"
        return f"tenant {identity.tenant!r} has no documents{known}"
    in_use = sorted(set().union(*(d.allowed_roles for d in served)))
    if identity.roles & set(in_use):
        return None
    asked = f"the roles {', '.join(sorted(identity.roles))}" if identity.roles else "a caller without roles"
    return f"no document of tenant {identity.tenant!r} allows {asked}; roles its documents allow: {', '.join(in_use)}"
