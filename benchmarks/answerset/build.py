"""Writes the answer-set corpus and reads its questions.

``build(root)`` writes every file under ``root`` and returns the manifest: one entry per
file, ``{"path", "document_id", "tenant", "roles", "title", "stage"}``. Ingest every stage 1
entry first, then the stage 2 entries: stage 2 holds the second version of a revised
document under the same ``document_id``, which must replace the first.

``questions(split)`` reads ``questions.jsonl`` (all of it, or one split: ``"tune"`` or
``"held_out"``). The held-out split is for reporting only: never tune on it.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.answerset import texts
from citewell.samples.writer import docx_bytes, pdf_bytes, xlsx_bytes

QUESTIONS = Path(__file__).with_name("questions.jsonl")
SPLITS = ("tune", "held_out")
CATEGORIES = (
    "lookup", "number", "date", "code", "who", "procedure", "list", "multi_sentence",
    "revision", "forbidden", "out_of_corpus", "near_miss", "follow_up", "conditions",
)
REFUSING = ("forbidden", "out_of_corpus", "near_miss")
KEYS = (
    "id", "split", "category", "question", "tenant", "roles", "expected_documents",
    "must_contain", "must_not_contain", "refuse",
)
# A follow-up also names the question it follows (an id of its split, the same caller) and the
# standalone question it stands for: asked after that one in one conversation.
FOLLOW_UP_KEYS = (*KEYS, "follows", "standalone")
# A question whose answer the corpus gives per condition (a depot, a contract type, a country)
# also says whether the right reply asks which one is meant (``clarify``: more conditions than an
# answer lists; ``must_contain`` then holds condition names) rather than answering each or, when
# it names one, that one.
CONDITION_KEYS = (*KEYS, "clarify")

KV, OF = "kestrelvale", "orrisfield"


def _documents() -> list[tuple[str, str, str, list[str], str, int, bytes]]:
    """(path, tenant, document_id, roles, title, stage, bytes) for every file."""
    t = texts
    return [
        # Kestrel Vale Water
        ("kestrelvale/staff/staff-handbook.md", KV, "staff/staff-handbook.md", ["staff"],
         "Kestrel Vale Water Staff Handbook", 1, t.KV_HANDBOOK.encode()),
        ("kestrelvale/staff/expenses-policy.pdf", KV, "staff/expenses-policy.pdf", ["staff"],
         "Expenses Policy", 1, pdf_bytes(t.KV_EXPENSES_PAGES, title="Expenses Policy")),
        ("kestrelvale/staff/information-security.txt", KV, "staff/information-security.txt", ["staff"],
         "Information Security Policy", 1, t.KV_SECURITY_TXT.encode()),
        ("kestrelvale/staff/records-retention.md", KV, "staff/records-retention.md", ["staff"],
         "Records Retention Schedule", 1, t.KV_RETENTION_MD.encode()),
        ("kestrelvale/staff/staff-directory.docx", KV, "staff/staff-directory.docx", ["staff"],
         t.KV_DIRECTORY_TITLE, 1,
         docx_bytes(t.KV_DIRECTORY_TITLE, t.KV_DIRECTORY_SECTIONS, t.KV_DIRECTORY_TABLE)),
        ("kestrelvale/operations/pump-station-runbook.html", KV, "operations/pump-station-runbook.html",
         ["operations"], "Pump Station Operations Runbook", 1, t.KV_PUMP_RUNBOOK_HTML.encode()),
        ("kestrelvale/operations/scada-alarm-codes.csv", KV, "operations/scada-alarm-codes.csv",
         ["operations", "support"], "SCADA Alarm Codes", 1, t.KV_ALARM_CODES_CSV.encode()),
        ("kestrelvale/support/customer-faq.txt", KV, "support/customer-faq.txt", ["support"],
         "Customer Contact Centre FAQ", 1, t.KV_CUSTOMER_FAQ.encode()),
        ("kestrelvale/hr/pay-scales.xlsx", KV, "hr/pay-scales.xlsx", ["hr"],
         "Pay Scales and Allowances", 1,
         xlsx_bytes({"Grades": t.KV_PAY_GRADES, "Allowances": t.KV_PAY_ALLOWANCES})),
        ("kestrelvale/finance/capital-programme.docx", KV, "finance/capital-programme.docx", ["finance"],
         t.KV_CAPITAL_TITLE, 1, docx_bytes(t.KV_CAPITAL_TITLE, t.KV_CAPITAL_SECTIONS, t.KV_CAPITAL_TABLE)),
        ("kestrelvale/staff/depot-allowances.csv", KV, "staff/depot-allowances.csv", ["staff"],
         "Depot Allowances", 1, t.KV_DEPOT_ALLOWANCES_CSV.encode()),
        # Orrisfield Software
        ("orrisfield/staff/employee-handbook.md", OF, "staff/employee-handbook.md", ["staff"],
         "Orrisfield Employee Handbook", 1, t.OF_HANDBOOK.encode()),
        ("orrisfield/staff/security-policy.pdf", OF, "staff/security-policy.pdf", ["staff"],
         "Security Policy", 1, pdf_bytes(t.OF_SECURITY_PAGES, title="Security Policy")),
        ("orrisfield/staff/team-directory.txt", OF, "staff/team-directory.txt", ["staff"],
         "Orrisfield Team Directory", 1, t.OF_DIRECTORY_TXT.encode()),
        ("orrisfield/staff/release-notes.html", OF, "staff/release-notes.html",
         ["staff", "support", "engineering"], "Tallyforge Release Notes", 1, t.OF_RELEASE_NOTES_HTML.encode()),
        ("orrisfield/staff/plans-and-limits.md", OF, "staff/plans-and-limits.md", ["staff", "support"],
         "Tallyforge Plans and Limits", 1, t.OF_PLANS_V1.encode()),
        ("orrisfield/support/support-faq.md", OF, "support/support-faq.md", ["support"],
         "Support Team FAQ", 1, t.OF_SUPPORT_FAQ.encode()),
        ("orrisfield/support/error-codes.xlsx", OF, "support/error-codes.xlsx", ["support", "engineering"],
         "Tallyforge Error Codes", 1,
         xlsx_bytes({"API errors": t.OF_API_ERRORS, "Webhook errors": t.OF_WEBHOOK_ERRORS})),
        ("orrisfield/engineering/production-runbook.html", OF, "engineering/production-runbook.html",
         ["engineering"], "Tallyforge Production Runbook", 1, t.OF_RUNBOOK_HTML.encode()),
        ("orrisfield/staff/contracts-and-offices.md", OF, "staff/contracts-and-offices.md", ["staff"],
         "Contracts and Offices", 1, t.OF_CONTRACTS_MD.encode()),
        ("orrisfield/hr/salary-bands.csv", OF, "hr/salary-bands.csv", ["hr"],
         "Salary Bands", 1, t.OF_SALARY_BANDS_CSV.encode()),
        ("orrisfield/finance/budget-fy2026.xlsx", OF, "finance/budget-fy2026.xlsx", ["finance"],
         "Budget FY2026", 1,
         xlsx_bytes({"Departments": t.OF_BUDGET_DEPARTMENTS, "Quarterly targets": t.OF_BUDGET_QUARTERS})),
        # Stage 2: the revision that replaces v1 of the plans under the same document id.
        ("stage2/orrisfield/staff/plans-and-limits.md", OF, "staff/plans-and-limits.md", ["staff", "support"],
         "Tallyforge Plans and Limits", 2, t.OF_PLANS_V2.encode()),
    ]


def build(root: Path) -> list[dict]:
    """Write the corpus under ``root``; return the manifest (stage 1 entries first)."""
    root = Path(root)
    manifest = []
    for relative, tenant, document_id, roles, title, stage, data in _documents():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        manifest.append({
            "path": relative, "document_id": document_id, "tenant": tenant,
            "roles": list(roles), "title": title, "stage": stage,
        })
    manifest.sort(key=lambda entry: entry["stage"])
    return manifest


def questions(split: str | None = None) -> list[dict]:
    """The labelled questions, all or one split (``"tune"`` or ``"held_out"``)."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    rows = []
    with QUESTIONS.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                if split is None or row["split"] == split:
                    rows.append(row)
    return rows


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m benchmarks.answerset.build DIR")
    print(json.dumps(build(Path(sys.argv[1])), indent=1))
