"""``/conversations``: the caller's recent questions, and one of their conversations turn by turn."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

from citewell.api.callers import token_id
from citewell.api.dependencies import ApiDependencies


def router(api: ApiDependencies) -> Router:
    """The two routes of ``/conversations``."""
    routes = Router()

    @routes.get("/conversations")
    def recent_questions() -> dict[str, Any]:
        from citewell.conversations import history

        found, who = api.caller()
        return {"history": [item.model_dump(mode="json") for item in history(found.services, who)]}

    @routes.get("/conversations/<conversation_id>")
    def conversation(conversation_id: str) -> dict[str, Any]:
        from citewell.conversations import thread

        found, who = api.caller()
        return thread(found.services, who, token_id(conversation_id, "conversation")).model_dump(mode="json")

    return routes
