"""The resolver both transports answer the API's requests with: Powertools' HTTP API resolver,
holding the request it resolves on the instance rather than on the class."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2


class IsolatedHttpResolver(APIGatewayHttpResolver):
    """Powertools keeps the event being resolved on the ``BaseRouter`` class, shared by the whole
    process; a server resolving requests in several threads would hand one request's claims to
    another. Here the event and context live on the instance, and each thread uses its own."""

    _resolving: APIGatewayProxyEventV2 | None = None
    _resolving_context: Any = None

    @property  # type: ignore[override]  # Powertools declares a plain attribute; a property keeps it per instance
    def current_event(self) -> APIGatewayProxyEventV2:
        assert self._resolving is not None, "no event is being resolved"
        return self._resolving

    @current_event.setter
    def current_event(self, value: APIGatewayProxyEventV2) -> None:
        self._resolving = value

    @property
    def lambda_context(self) -> Any:
        return self._resolving_context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._resolving_context = value

    def resolve(self, event: Any, context: Any) -> dict[str, Any]:
        proxied = self._to_proxy_event(dict(event))
        assert isinstance(proxied, APIGatewayProxyEventV2)  # an HTTP API resolver's proxy type
        self._resolving, self._resolving_context = proxied, context
        try:
            return super().resolve(event, context)
        finally:
            self._resolving = self._resolving_context = None
