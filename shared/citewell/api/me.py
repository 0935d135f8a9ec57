"""``GET /me``: who the token says the caller is, and what they may do."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

from citewell.api.dependencies import ApiDependencies


def router(api: ApiDependencies) -> Router:
    """The route of ``/me``."""
    routes = Router()

    @routes.get("/me")
    def me() -> dict[str, Any]:
        """Who the token says the caller is, so a client can show it and hide what it may not do; a
        writer also learns the largest file an upload takes, to refuse a bigger one before sending it."""
        found, who = api.caller()
        me: dict[str, Any] = {"tenant": who.tenant, "roles": sorted(who.roles),
                              "can_write": found.settings.write_role in who.roles}
        if me["can_write"]:
            me["max_bytes"] = found.services.max_bytes
        return me

    return routes
