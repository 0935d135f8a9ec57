"""``POST /answers/{id}/feedback``: the caller marks an answer they were given helpful or not."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

from citewell.api.callers import token_id
from citewell.api.dependencies import ApiDependencies
from citewell.api.models import FeedbackRequest


def router(api: ApiDependencies) -> Router:
    """The route of ``/answers/{id}/feedback``."""
    routes = Router()

    @routes.post("/answers/<answer_id>/feedback")
    def feedback(answer_id: str, request: FeedbackRequest) -> dict[str, Any]:
        from citewell.conversations import give_feedback

        found, who = api.caller()
        turn = give_feedback(found.services, who, token_id(answer_id, "answer"), request.helpful, request.comment)
        return {"answer_id": turn.answer_id, "feedback": turn.feedback.model_dump(mode="json") if turn.feedback else None}

    return routes
