"""``GET /answers/{id}/citations``: what a recorded answer rested on, for a reader who may read all of it."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from citewell.api.callers import token_id
from citewell.api.dependencies import ApiDependencies
from citewell.models.answers import AnswerRecord


def router(api: ApiDependencies) -> Router:
    """The route of ``/answers/{id}/citations``."""
    routes = Router()

    @routes.get("/answers/<answer_id>/citations")
    def citations(answer_id: str) -> AnswerRecord:
        from citewell.answers.service import recorded_citations

        found, who = api.caller()
        return recorded_citations(found.services, who, token_id(answer_id, "answer"))

    return routes
