"""The HTTP API, defined once for both transports: API Gateway + Lambda, and ``citewell serve``.

``routes.build_resolver`` registers every route, request model and error handler on a
Powertools resolver; a transport only says where the settings and services come from (an
:class:`~citewell.api.dependencies.ApiBackend`) and hands it API Gateway HTTP API (payload 2.0)
events whose ``requestContext.authorizer.jwt.claims`` hold a verified caller.
"""
