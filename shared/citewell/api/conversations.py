"""``/conversations``: the caller's recent questions, and one of their conversations a page of turns at a time."""

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
        """A page of the conversation: its latest ``limit`` turns, or with ``cursor`` (a page's
        ``next``) the ones before; 400 for a cursor this conversation's pages did not return."""
        from citewell.api.paging import page_size
        from citewell.conversations import THREAD_PAGE, THREAD_PAGE_MAX, thread

        found, who = api.caller()
        query = api.event.get_query_string_value
        size = page_size(query("limit"), THREAD_PAGE, THREAD_PAGE_MAX)
        shown = thread(found.services, who, token_id(conversation_id, "conversation"), query("cursor"), size)
        return shown.model_dump(mode="json")

    return routes
