"""A small home for the MCP tests, ingested by the CLI: the serve tests' corpus (two tenants, roles
that split it), a long document over the evidence budget the servers run with, and a notice each
test deletes between two calls. And what the tests read of a tool's result."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from citewell.cli import main
from tests.serving import CORPUS

BUDGET = 800  # CITEWELL_EVIDENCE_CHARS of the servers under test: travel.md is over it, each of its sections under
SERVER_ENV = {"CITEWELL_EVIDENCE_CHARS": str(BUDGET), "CITEWELL_EMBED_THREADS": "1", "PYTHONUNBUFFERED": "1"}
TRAVEL = ("# Travel policy\n\n"
          "## Booking\n\nStaff book all rail and air travel through the travel desk at least ten working days before "
          "departure. Bookings made elsewhere are not refunded unless the travel desk was closed for the whole period "
          "and the line manager approved the booking in writing beforehand.\n\n"
          "## Hotels\n\nA hotel night is refunded up to 140 euros in capital cities and 110 euros elsewhere, breakfast "
          "included. A stay of more than five nights needs the approval of the head of department before it is booked, "
          "and the travel desk keeps the approval with the booking.\n\n"
          "## Meals\n\nThe meal allowance is 35 euros a day on a full travel day and 18 euros on a day of departure or "
          "return. Receipts are not needed for the allowance, but alcohol is never refunded, whatever the occasion or "
          "the guest.\n\n"
          "## Mileage\n\nA private car is refunded at 0.30 euros a kilometre when no train connection arrives within "
          "an hour of the appointment. The claim names the start, the destination and the purpose of each journey, "
          "and is sent within a month.\n")
NOTICE = ("# Car park notice\n\nThe staff car park on Quay Road closes for resurfacing from 3 March to 10 March. "
          "During the works staff park at the Dock Street garage, which is free with a staff card.\n")
DOCUMENTS = [  # (tenant, document id, roles, text)
    *[(tenant, document_id, roles, data.decode()) for tenant, document_id, roles, data in CORPUS],
    ("northpier", "travel.md", ("staff",), TRAVEL),
    ("northpier", "notice.md", ("staff",), NOTICE),
]


def build_home(root: Path) -> Path:
    """A home holding ``DOCUMENTS``, each ingested by ``citewell ingest`` as an operator would."""
    home = root / "home"
    for tenant, document_id, roles, text in DOCUMENTS:
        path = root / "files" / tenant / document_id
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        code = main(["--home", str(home), "ingest", str(path), "--tenant", tenant, "--allow-roles", ",".join(roles),
                     "--doc-id", document_id, "--json"])
        assert code == 0, document_id
    return home


def server_env() -> dict[str, str]:
    """The test's environment (its PYTHONPATH names the package under test) and the servers' settings."""
    return {**os.environ, **SERVER_ENV}


def structured(result: Any) -> dict[str, Any]:
    """A tool's result that is not an error: its structured content (the SDK's client has already
    checked it against the tool's output schema), and its text beside it."""
    assert not result.is_error, result.content
    assert result.content and result.content[0].type == "text" and result.content[0].text
    return dict(result.structured_content)


def refused(result: Any) -> dict[str, str]:
    """A tool error: its code and message, also the text a model reads."""
    assert result.is_error, result.structured_content
    error = result.structured_content["error"]
    assert result.content[0].text == f"{error['code']}: {error['message']}"
    assert "Traceback" not in error["message"]
    return dict(error)
