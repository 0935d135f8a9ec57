"""The revision audit: every check of :mod:`citewell.audit_checks`, run page by page
(:mod:`citewell.audit_pages`) in one process. ``citewell audit [--repair]`` runs it; on AWS the
same pages are fanned out (:func:`citewell.lambdas.handlers.audit_handler`)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel

from citewell.audit_checks import Checks, Finding, stuck_after
from citewell.audit_pages import MemoryCheckpoints, plan, run_page
from citewell.models.values import new_token
from citewell.services import Services

__all__ = ["AuditReport", "Finding", "audit", "stuck_after"]


class AuditReport(BaseModel):
    ok: bool  # every finding repaired, or its repair started (a re-ingest the chain finishes: ``started``)
    findings: list[Finding]


def audit(services: Services, repair: bool = False, stuck: timedelta | None = None) -> AuditReport:
    """Every page of a run in order, sharing one snapshot of the records."""
    checks = Checks(services, repair, stuck if stuck is not None else stuck_after())
    checkpoints = MemoryCheckpoints()
    for page in plan(checks, new_token()):
        run_page(checks, page, checkpoints)
    return AuditReport(ok=all(f.repaired or f.started for f in checks.findings), findings=checks.findings)
