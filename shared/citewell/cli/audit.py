"""``citewell audit``: check that records, artifacts, index and caches agree, and repair what is safe."""

from __future__ import annotations

import argparse
from typing import Any

from citewell.cli.common import EXIT_FAILED, EXIT_OK, AddCommand


def add_audit(command: AddCommand) -> None:
    """The arguments of ``citewell audit``."""
    p = command("audit", help="check records, artifacts, index and caches agree")
    p.add_argument("--repair", action="store_true", help="fix what can safely be fixed")


def cmd_audit(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.audit import audit
    from citewell.deployments import open_local

    report = audit(open_local(args.home, existing=True), repair=args.repair)
    return report.model_dump(), EXIT_OK if report.ok else EXIT_FAILED
