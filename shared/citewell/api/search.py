"""``POST /search``: the passages the caller may read that best match a question, ranked."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from citewell.api.dependencies import ApiDependencies
from citewell.api.models import SearchRequest
from citewell.models.search import SearchResult


def router(api: ApiDependencies) -> Router:
    """The route of ``/search``."""
    routes = Router()

    @routes.post("/search")
    def search_documents(request: SearchRequest) -> SearchResult:
        from citewell.search import search

        found, who = api.caller()
        return search(found.services, who, request.question, k=request.k, lanes=found.settings.lanes, filters=request.filters)

    return routes
