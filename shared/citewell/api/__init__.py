"""The HTTP API, defined once for both transports: API Gateway + Lambda, and ``citewell serve``.

Each resource's routes are one Powertools ``Router`` in a module named for it (``documents``,
``search``, ``query``, ``feedback``, ``conversations``, ``citations``, ``me``);
``routes.build_resolver`` joins them, with the error handlers, on one resolver. A transport
only says where the settings and services come from (an
:class:`~citewell.api.dependencies.ApiBackend`) and hands it API Gateway HTTP API (payload 2.0)
events whose ``requestContext.authorizer.jwt.claims`` hold a verified caller.
"""
