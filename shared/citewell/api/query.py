"""``POST /query``: a cited answer from what the caller may read, or an honest refusal; a turn of a conversation."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

from citewell.api.dependencies import ApiDependencies
from citewell.api.models import QueryRequest
from citewell.deadline import Deadline, applying
from citewell.errors import OutOfTime
from citewell.models.answers import Answer


def request_deadline(context: Any) -> Deadline | None:
    """A Lambda invocation's: 28 s (API Gateway gives up at 30), or what it has left if less.
    A local server's request has no gateway in front: None, each call's own limit."""
    return Deadline.for_invocation(context) if callable(getattr(context, "get_remaining_time_in_millis", None)) else None


def router(api: ApiDependencies) -> Router:
    """The route of ``/query``."""
    routes = Router()

    @routes.post("/query")
    def query(request: QueryRequest) -> Answer:
        from citewell.asking import answer_turn

        found, who = api.caller()
        with applying(request_deadline(api.resolver.lambda_context)):
            try:
                return answer_turn(found.services, who, request.question, request.conversation_id,
                                   lanes=found.settings.lanes, filters=request.filters, mixed_locales=request.mixed_locales)
            except TimeoutError as error:  # a store call the answer needs found no time left, or got no reply in it
                raise OutOfTime(f"the question could not be answered in time ({error}); ask again") from None

    return routes
