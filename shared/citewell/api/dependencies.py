"""What the routes depend on: what a transport hands them (:class:`ApiBackend`: settings, the
stores and model, and how uploads arrive), and what each resource's router is built from
(:class:`ApiDependencies`: that backend, and the request being resolved)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from citewell.api.callers import claims_identity
from citewell.api.resolver import IsolatedHttpResolver
from citewell.api.settings import ApiSettings
from citewell.leases import Lease
from citewell.models.documents import Upload
from citewell.models.identity import Identity
from citewell.services import Services


class UploadForms(Protocol):
    def __call__(self, key: str, max_bytes: int, expires_in: int, event: APIGatewayProxyEventV2) -> dict[str, Any]:
        """``{"url", "fields"}``: a form a client POSTs with the file last to store ``key``, refused
        over ``max_bytes`` and after ``expires_in`` seconds (an S3 presigned POST, or its local twin)."""
        ...


@dataclass(frozen=True)
class ApiBackend:
    """What a transport hands the routes: settings, the stores and model, and how uploads arrive."""

    settings: ApiSettings
    services: Services
    upload_form: UploadForms
    lease: Lease | None = None  # the process that runs the stages of the uploads it registers, when that is this one
    fetch_page: Callable[[Upload], None] | None = None  # starts the fetch step of a URL's upload (citewell.ingest.fetch_stage)


@dataclass(frozen=True)
class ApiDependencies:
    """What each resource's router is built from: where a request's backend comes from (called per
    request, so it must be cheap: cache in it) and the resolver whose request a route answers (the
    event lives on that resolver, one per thread: see :class:`~citewell.api.resolver.IsolatedHttpResolver`)."""

    backend: Callable[[], ApiBackend]
    resolver: IsolatedHttpResolver

    @property
    def event(self) -> APIGatewayProxyEventV2:
        """The request being resolved."""
        return self.resolver.current_event

    def caller(self) -> tuple[ApiBackend, Identity]:
        """The backend, and the caller the request's verified claims name."""
        found = self.backend()
        authorizer = self.event.request_context.authorizer
        claims = (authorizer.jwt_claim or {}) if authorizer else {}
        return found, claims_identity(claims, found.settings)
