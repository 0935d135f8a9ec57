"""``citewell feedback``: the answers askers marked unhelpful, for an operator to label."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citewell.cli.common import EXIT_OK, AddCommand, _tenant
from citewell.errors import InvalidInput


def _since(value: str) -> datetime:
    try:
        found = datetime.fromisoformat(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--since takes an ISO date or time such as 2026-01-31 or 2026-01-31T09:00, not {value!r}") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def add_feedback(command: AddCommand) -> None:
    """The arguments of ``citewell feedback``."""
    p = command("feedback", help="answers askers marked unhelpful, for an operator to label")
    p.add_argument("--tenant", type=_tenant, help="only this tenant's feedback (default: every tenant's)")
    p.add_argument("--since", type=_since, metavar="WHEN", help="only feedback from then on: an ISO date or time (UTC)")
    p.add_argument("--export", type=Path, metavar="FILE",
                   help="write them as answer-set JSON lines (question, identity, cited documents) to label for eval-answers")


def cmd_feedback(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.conversations import unhelpful
    from citewell.deployments import open_local

    found = unhelpful(open_local(args.home, existing=True), args.since, args.tenant)
    items: list[dict[str, Any]] = [{
        "answer_id": record.answer_id, "conversation_id": conversation.conversation_id, "tenant": conversation.tenant,
        "subject": conversation.subject, "roles": conversation.roles, "asked": turn.asked, "question": turn.question,
        "answer": record.answer, "outcome": record.outcome.value, "comment": turn.feedback.comment if turn.feedback else None,
        "at": (turn.feedback.at if turn.feedback else turn.at).isoformat(),
        "citations": [c.model_dump(mode="json") for c in record.citations if not c.deleted],
    } for conversation, turn, record in found]
    payload: dict[str, Any] = {"unhelpful": items}
    if args.export is not None:
        lines = [json.dumps({
            "id": f"feedback-{item['answer_id'][:12]}", "split": "feedback", "category": "feedback",
            "question": item["question"], "tenant": item["tenant"], "roles": item["roles"],
            "expected_documents": sorted({c["document_id"] for c in item["citations"]}),
            "must_contain": [], "must_not_contain": [], "refuse": False,
        }, ensure_ascii=False) for item in items]
        try:
            args.export.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        except OSError as error:
            raise InvalidInput(f"cannot write {args.export}: {error.strerror}") from None
        payload["exported"] = {"file": str(args.export), "questions": len(lines)}
    return payload, EXIT_OK
