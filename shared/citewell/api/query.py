"""``POST /query``: a cited answer from what the caller may read, or an honest refusal; a turn of a conversation."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from citewell.api.dependencies import ApiDependencies
from citewell.api.models import QueryRequest
from citewell.models.answers import Answer


def router(api: ApiDependencies) -> Router:
    """The route of ``/query``."""
    routes = Router()

    @routes.post("/query")
    def query(request: QueryRequest) -> Answer:
        from citewell.asking import answer_turn

        found, who = api.caller()
        return answer_turn(found.services, who, request.question, request.conversation_id, lanes=found.settings.lanes,
                           filters=request.filters, mixed_locales=request.mixed_locales)

    return routes
