"""A tenant's documents: ``citewell delete``, ``citewell read`` and ``citewell docs``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from citewell.cli.common import EXIT_FAILED, EXIT_OK, ROLES_HELP, TENANT_HELP, AddCommand, _document_id, _roles, _tenant
from citewell.identities import operator_identity


def add_delete(command: AddCommand) -> None:
    """The arguments of ``citewell delete``."""
    p = command("delete", help="delete a document and every trace of it")
    p.add_argument("document_id", type=_document_id, help="the document's id, as ingest and docs print it")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)


def cmd_delete(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deletion import delete_document
    from citewell.deployments import open_local

    report = delete_document(open_local(args.home, existing=True), args.tenant, args.document_id)
    for line in report.pending:
        print(f"citewell: pending: {line}", file=sys.stderr)
    return report.model_dump(), EXIT_FAILED if report.pending else EXIT_OK


def add_read(command: AddCommand) -> None:
    """The arguments of ``citewell read``."""
    p = command("read", help="a document's current text, whole or one section, within the evidence budget")
    p.add_argument("document_id", type=_document_id, help="the document's id, as ingest and docs print it")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help=ROLES_HELP)
    p.add_argument("--section", metavar="ID", help="one section: the section_id a search hit or citation carries")


def cmd_read(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """Refused over the evidence budget (``CITEWELL_EVIDENCE_CHARS``), never cut."""
    from citewell.answers.config import evidence_budget
    from citewell.deployments import open_local
    from citewell.reads import read

    identity = operator_identity(args.tenant, args.roles)
    snapshot = read(open_local(args.home, existing=True), identity, args.document_id, evidence_budget(), args.section)
    return snapshot.model_dump(mode="json"), EXIT_OK


def add_docs(command: AddCommand) -> None:
    """The arguments of ``citewell docs``."""
    p = command("docs", help="list a tenant's documents")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)


DOCS_PAGE = 500


def cmd_docs(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deployments import open_local

    records = open_local(args.home, existing=True).documents
    documents: list[dict[str, Any]] = []
    after: str | None = None
    while True:  # page by page, by key, as the API lists: a tenant of 100,000 records is never one read
        page = records.page_documents(args.tenant, DOCS_PAGE, after)
        documents += [d.model_dump(mode="json") for d in page.documents]
        if (after := page.after) is None:
            return {"documents": documents}, EXIT_OK
