"""What more than one command's module takes: the exit codes, the way a command is added, and the
argument types and help texts several commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from citewell.models.values import validate_document_id, validate_name, validate_question, validate_tenant

TENANT_HELP = "the tenant (organisation) the documents belong to: letters, digits, '_', '.' or '-'"
ROLES_HELP = 'the caller\'s roles, comma-separated; "" means none, which finds nothing'
EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C

AddCommand = Callable[..., argparse.ArgumentParser]
"""Adds one command's parser, ``command(name, help=...)``, with the options taken before or after
the command (``--home``, ``--json``) as its parent; each command's module has an ``add_NAME``
that calls it and adds the command's arguments beside its handler."""


def _roles(value: str) -> frozenset[str]:
    roles = frozenset(r.strip() for r in value.split(",") if r.strip())
    try:
        for role in roles:
            validate_name(role, "role")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return roles


def _argument(validate: Callable[[str], str]) -> Callable[[str], str]:
    """An argparse type from one of the model's validators: the same grammar, a usage error's message."""
    def check(value: str) -> str:
        try:
            return validate(value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return check


_tenant = _argument(validate_tenant)
_document_id = _argument(validate_document_id)


def _question(value: str) -> str:
    try:
        return validate_question(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


LANE_NAMES = ("bm25", "vector", "hybrid")  # citewell.search.LANE_CHOICES, named here so --help imports no engine
LANES_HELP = "comma-separated retrieval lanes: bm25 (words), vector (meaning), hybrid (both, fused)"


def _lanes(value: str) -> tuple[str, ...]:
    lanes = tuple(dict.fromkeys(lane.strip() for lane in value.split(",") if lane.strip()))
    if not lanes or set(lanes) - set(LANE_NAMES):
        raise argparse.ArgumentTypeError(f"--lanes takes any of {', '.join(LANE_NAMES)}, not {value!r}")
    return lanes
