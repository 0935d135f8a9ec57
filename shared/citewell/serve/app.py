"""The ASGI application of ``citewell serve``.

Every API request is verified here (the bearer token, as API Gateway's JWT authorizer does),
read within its limits, turned into a payload 2.0 event and answered by the same resolver
the Lambda runs, in a bounded thread pool so no route blocks the event loop. Each pool thread
has its own resolver; the home (model, SQLite connections, access mask) is opened once.
Besides the API: the MCP tools at ``/mcp`` (:mod:`citewell.mcp.http`, under the same bearer
tokens), the upload form's endpoint, ``/openapi.json``, the web page and, with ``--demo``, tokens
for the demo's identities.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from aws_lambda_powertools.event_handler.exceptions import ForbiddenError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citewell import leases
from citewell.answers.prompt import REFUSAL_SENTINEL
from citewell.api.callers import claims_identity
from citewell.api.dependencies import ApiBackend
from citewell.api.events import MAX_BODY_BYTES, allowed_methods, handle
from citewell.api.resolver import IsolatedHttpResolver
from citewell.api.routes import build_resolver, openapi_document
from citewell.deployments import open_local
from citewell.errors import CitewellError, Conflict, EmptyText, ServerStopped, TooLarge
from citewell.ingest.stages import record_failure
from citewell.keys import parse_key
from citewell.mcp.http import PATH as MCP_PATH
from citewell.mcp.http import foreign_origin, header, not_stored, replayed, session_manager
from citewell.mcp.server import IDENTITY_SCOPE_KEY, build_server, request_identity
from citewell.models.documents import Upload
from citewell.serve.bearer import BearerTokens
from citewell.serve.compression import Compressed
from citewell.serve.events import stream_query, wants_events
from citewell.serve.forms import TooSlow, read_form
from citewell.serve.oidc import OidcIssuer
from citewell.serve.page import CSP, PageError, WebPage
from citewell.serve.settings import ServeSettings
from citewell.serve.tokens import (
    LOCAL_AUDIENCE,
    LOCAL_ISSUER,
    IssuerUnavailable,
    TokenVerifier,
    Unauthorized,
    home_key,
    load_public_key,
    mint,
)
from citewell.serve.transport import LocalContext, build_event, response_parts
from citewell.serve.uploads import UPLOAD_PATH, FormRefused, UploadSigner
from citewell.serve.worker import IngestWorker
from citewell.services import Services

logger = logging.getLogger("citewell.serve")
WEB = Path(__file__).resolve().parents[1] / "web"
FORM_SLACK = 64 * 1024  # multipart framing and the form's fields around the file
DEMO_TTL_SECONDS = 2 * 3600


def csp(connect: list[str]) -> str:
    """The page's policy, letting it also call ``connect`` (an OpenID Connect issuer's token endpoint)."""
    return CSP.replace("connect-src 'self'", " ".join(["connect-src 'self'", *connect]))


SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_STATIC_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*")


def demo_identities(write_role: str) -> list[tuple[str, str, list[str]]]:
    """``(label, tenant, roles)`` of the people the demo corpus is written for."""
    return [
        ("Northpier staff", "northpier", ["staff"]),
        ("Northpier support engineer", "northpier", ["support", "engineering"]),
        ("Northpier HR, edits documents", "northpier", ["hr", "staff", write_role]),
        ("Bluefen staff", "bluefen", ["staff"]),
    ]


class Refused(Exception):
    """A request refused at the transport: answered with the one error shape."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def refusal(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers of the one error shape."""
    data = json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False, separators=(",", ":")).encode()
    return status, data, {"Content-Type": "application/json", **(headers or {})}


def unauthorized(refused: Unauthorized) -> tuple[int, bytes, dict[str, str]]:
    """A 401 that says what is wrong with the credential, in the body and the challenge."""
    # a header holds Latin-1 only, and RFC 6750 allows printable ASCII without '"' or '\\'
    description = "".join(c if " " <= c <= "~" and c != "\\" else "?" for c in str(refused).replace('"', "'"))
    challenge = f'Bearer error="invalid_token", error_description="{description}"'
    return refusal(401, "Unauthorized", str(refused), {"WWW-Authenticate": challenge})


def error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    status, data, headers = refusal(status, code, message, headers)
    return Response(data, status_code=status, headers=headers)


async def http_error(request: Request, failed: Exception) -> Response:
    """What the router refuses (a method a path does not take) in the one error shape, with the
    methods the API's own document gives that path."""
    assert isinstance(failed, HTTPException)
    code = {405: "MethodNotAllowedError"}.get(failed.status_code, "BadRequestError")
    headers = dict(failed.headers or {})
    if failed.status_code == 405:
        allowed = allowed_methods(request.url.path)
        if allowed:
            headers["Allow"] = ", ".join(sorted(allowed))
    return error(failed.status_code, code, str(failed.detail), headers)


async def server_error(request: Request, failed: Exception) -> Response:
    """Last resort outside the API (the upload route): the details go to the log, never to the caller."""
    request_id = uuid.uuid4().hex
    logger.error("unexpected error, request id %s; its traceback follows", request_id)  # the server logs it
    return error(500, "InternalServerError", f"Something went wrong on our side. If it persists, report request id {request_id}.")


def verifier_for(settings: ServeSettings, home: Path) -> TokenVerifier:
    """The configured issuer, or the home's own key."""
    if settings.external_issuer:
        if not settings.jwt_issuer or not settings.jwt_audience:
            raise ValueError("an external token issuer needs CITEWELL_JWT_ISSUER and CITEWELL_JWT_AUDIENCE")
        if settings.jwks_url and settings.public_key_file:
            raise ValueError("set one of CITEWELL_JWT_JWKS_URL and CITEWELL_JWT_PUBLIC_KEY, not both")
        if settings.jwks_url:
            return TokenVerifier(issuer=settings.jwt_issuer, audience=settings.jwt_audience, jwks_url=settings.jwks_url)
        assert settings.public_key_file is not None
        return TokenVerifier(issuer=settings.jwt_issuer, audience=settings.jwt_audience,
                             public_key=load_public_key(settings.public_key_file))
    return TokenVerifier(issuer=LOCAL_ISSUER, audience=LOCAL_AUDIENCE, public_key=home_key(home).public_key())


class Server:
    """One home served: opened once, shared by every request; each request thread has its own resolver."""

    def __init__(self, home: Path, settings: ServeSettings, origin: str, *, demo: bool = False,
                 services: Services | None = None) -> None:
        """``origin`` is ``scheme://host:port`` as clients reach this server, from its configuration."""
        self.home, self.settings, self.demo, self.origin = home, settings, demo, origin
        self.domain = origin.split("://", 1)[1]
        # The page is its own redirect URI: the issuer sends the browser back to it with the code.
        self.oidc = OidcIssuer(settings.oidc, f"{origin}/") if settings.oidc else None
        verifiers = [verifier_for(settings, home)]
        if self.oidc is not None:
            verifiers.append(self.oidc.verifier)
            settings = settings.model_copy(update={"issuer_rules": (self.oidc.rules,)})
            self.settings = settings
        self.verifier = BearerTokens(verifiers, settings.claim_rules)  # what every transport of serve verifies with
        if demo and settings.external_issuer:
            raise ValueError("--demo mints tokens with the home's key; it cannot be used with an external issuer")
        self.key = home_key(home) if demo else None
        self.services = services or open_local(home)
        self.signer = UploadSigner()
        # This process runs the stages of the uploads it registers, so it holds their documents' lease;
        # its worker first takes over the uploads a process that ended left unfinished.
        lease = leases.current()
        self.worker = IngestWorker(self.services, lease)
        self.fetches = ThreadPoolExecutor(max_workers=2, thread_name_prefix="citewell-fetch")
        self._backend = ApiBackend(settings=settings, services=self.services, upload_form=self.upload_form, lease=lease,
                                   fetch_page=self.fetch_page)
        self.openapi = openapi_document()
        # The MCP tools: each call under the caller its request's token names (see mcp()).
        self.mcp_sessions = session_manager(build_server(self.services, request_identity, lambda: self.limiter))
        self.page = WebPage(WEB, identities=demo_identities(settings.write_role) if demo else None,
                            refusal_word=REFUSAL_SENTINEL, policy=csp(self.oidc.origins()) if self.oidc else CSP,
                            sign_in_at=urlsplit(self.oidc.page_config()["issuer"]).netloc if self.oidc else None)
        self._local = threading.local()
        self._accepting = threading.Lock()
        self.limiter: anyio.CapacityLimiter | None = None

    # -- the API, in a pool thread ----------------------------------------------------------

    def backend(self) -> ApiBackend:
        return self._backend

    def upload_form(self, key: str, max_bytes: int, expires_in: int, event: Any) -> dict[str, Any]:
        """The form's URL is the configured origin: a request's Host header names whatever the
        client likes, and the form would send the writer's file there."""
        return self.signer.form(key, max_bytes, expires_in, self.origin)

    def fetch_page(self, upload: Upload) -> None:
        """A URL's upload is fetched off the request (a page may take the fetch's time limit),
        then queued for the worker as an upload form's file is."""
        self.fetches.submit(self._fetch, upload)

    def _fetch(self, upload: Upload) -> None:
        from citewell.fetch.client import Fetcher
        from citewell.ingest.fetch_stage import fetch_upload
        from citewell.settings import settings

        config = settings()
        try:
            with Fetcher.configured(config, self.services.max_bytes) as fetcher:
                fetched = fetch_upload(self.services, fetcher, upload)
            if fetched is not None:
                self.worker.submit(fetched)
        except ServerStopped as error:
            record_failure(self.services, upload, error)
        except Exception:  # a bug: the upload stays for the audit, the details go to the log
            logger.exception("fetching %s for %s failed", upload.source, upload.document_id)

    def _resolver(self) -> IsolatedHttpResolver:
        resolver: IsolatedHttpResolver | None = getattr(self._local, "resolver", None)
        if resolver is None:
            resolver = self._local.resolver = build_resolver(self.backend)
        return resolver

    def respond(self, scope: Scope, body: bytes, claims: dict[str, Any], request_id: str) -> tuple[int, bytes, dict[str, str]]:
        """One API request after its token and body, all in one pool thread: the event, the
        resolver and the reply's parts (one hop off the loop and back per request)."""
        event = build_event(scope, body, claims, request_id, self.domain)
        return response_parts(handle(self._resolver(), event, LocalContext(aws_request_id=request_id)))

    def accept_upload(self, key: str, data: bytes) -> None:
        """Store an upload's bytes under its key and queue it, once, while it is the document's latest."""
        found = parse_key(key)
        upload = self.services.uploads.get_upload(found.tenant, found.document_id, found.upload_id)
        if upload is None:
            raise Conflict("this upload is no longer current: a newer upload or a delete of the document came first")
        with self._accepting:  # two posts of one form at once: one stores and queues, the other is refused
            if self.services.objects.exists(key):
                raise Conflict("this upload form was used already: create the document again to send another file")
            self.services.objects.put(key, data)
            self.worker.submit(upload)

    def refuse_upload(self, key: str, error: TooLarge | EmptyText) -> None:
        """A file refused for its size fails its upload at once, with the reason the sender saw:
        the form was used, and the document waits for nothing more."""
        found = parse_key(key)
        upload = self.services.uploads.get_upload(found.tenant, found.document_id, found.upload_id)
        if upload is not None:
            record_failure(self.services, upload, error)

    def warm(self) -> None:
        """Load the model and the access mask before the first request pays for them."""
        from citewell.models.identity import Identity
        from citewell.search import search

        search(self.services, Identity(tenant="warm-up", roles=frozenset({"warm-up"})), "warm up", k=1)

    # -- the ASGI application ---------------------------------------------------------------

    def app(self) -> ASGIApp:
        @asynccontextmanager
        async def lifespan(_: Starlette) -> AsyncIterator[None]:
            self.limiter = anyio.CapacityLimiter(self.settings.threads)
            await anyio.to_thread.run_sync(self.warm)
            self.worker.start()
            async with self.mcp_sessions.run():
                yield
            await anyio.to_thread.run_sync(functools.partial(self.fetches.shutdown, wait=True, cancel_futures=True))
            await anyio.to_thread.run_sync(self.worker.stop, self.settings.grace_seconds)

        routes = [
            Route("/", self.index, methods=["GET", "HEAD"]),
            Route("/static/{name:path}", self.static, methods=["GET", "HEAD"]),
            Route("/openapi.json", self.openapi_json, methods=["GET"]),
            Route(UPLOAD_PATH, self.upload, methods=["POST"]),
            Route("/demo/identities", self.identities, methods=["GET"]),
            Route(MCP_PATH, Plain(self.mcp), methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/auth/config", self.auth_config, methods=["GET"]),
        ]
        routes.append(Route("/{path:path}", Plain(self.api), methods=["GET", "POST", "PUT", "PATCH", "DELETE"]))
        handlers = {HTTPException: http_error, Exception: server_error}
        headers = SECURITY_HEADERS if self.oidc is None else [
            (b"content-security-policy", csp(self.oidc.origins()).encode()), *SECURITY_HEADERS[1:]]
        return SecurityHeaders(Compressed(Starlette(routes=routes, lifespan=lifespan, exception_handlers=handlers)), headers)

    async def index(self, request: Request) -> Response:
        try:
            status, body, headers = self.page.index(request.headers.get("accept-encoding", ""),
                                                    request.headers.get("if-none-match", ""))
        except (PageError, OSError):
            return error(404, "NotFoundError", "the web page is not installed")
        return Response(body, status_code=status, headers=headers)

    async def static(self, request: Request) -> Response:
        """A file of the page, by name only: nothing outside the page's folder, nothing hidden."""
        name = request.path_params["name"]
        if not all(_STATIC_PART.fullmatch(part) for part in name.split("/")):  # no '', '.', '..' or hidden names
            return error(404, "NotFoundError", "no such file")
        try:
            found = self.page.file(name, request.query_params.get("v"), request.headers.get("accept-encoding", ""),
                                   request.headers.get("if-none-match", ""))
        except (PageError, OSError):
            found = None
        if found is None:
            return error(404, "NotFoundError", "no such file")
        status, body, headers = found
        return Response(body, status_code=status, headers=headers)

    async def openapi_json(self, request: Request) -> Response:
        return Response(self.openapi, media_type="application/json")

    async def auth_config(self, request: Request) -> Response:
        """How the page signs in: ``{"oidc": null}``, or the issuer's endpoints, the client id and
        the redirect URI for the authorization code flow with PKCE."""
        return JSONResponse({"oidc": self.oidc.page_config() if self.oidc else None}, headers={"Cache-Control": "no-cache"})

    async def identities(self, request: Request) -> Response:
        if self.key is None:
            return error(404, "NotFoundError", "demo identities exist only when the server runs with --demo")
        settings = self.settings
        listed = [
            {"label": label, "tenant": tenant, "roles": roles,
             "token": mint(self.key, tenant=tenant, roles=roles, ttl_seconds=DEMO_TTL_SECONDS,
                           tenant_claim=settings.tenant_claim, roles_claim=settings.roles_claim)}
            for label, tenant, roles in demo_identities(settings.write_role)
        ]
        return JSONResponse(listed, headers={"Cache-Control": "no-store"})

    async def api(self, scope: Scope, receive: Receive, send: Send) -> None:
        """An API request as plain ASGI, without Starlette's Request and Response around it (about
        0.1 ms of a served search went to them): the token and the body on the loop, then the rest
        in one pool thread (:meth:`respond`)."""
        request_id = uuid.uuid4().hex
        authorization, declared = None, None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value.decode("latin-1")
            elif name == b"content-length":
                declared = value.decode("latin-1")
        try:
            claims = await self.claims(authorization)
            body = await read_body(receive, declared, MAX_BODY_BYTES, self.settings.read_seconds)
        except Unauthorized as refused:
            status, data, headers = unauthorized(refused)
        except IssuerUnavailable as down:
            status, data, headers = refusal(503, "ServiceUnavailable", str(down))
        except Refused as refused:
            status, data, headers = refusal(refused.status, refused.code, refused.message)
        except ClientDisconnect:  # gone mid-body: no one to answer, and nothing went wrong here
            return
        else:
            if wants_events(scope):
                await stream_query(functools.partial(self.respond, scope, body, claims, request_id), send,
                                   {"Cache-Control": "no-store", "X-Request-Id": request_id}, self.limiter)
                return
            status, data, headers = await anyio.to_thread.run_sync(
                self.respond, scope, body, claims, request_id, limiter=self.limiter)
        await reply(send, status, data, headers, request_id)

    async def claims(self, authorization: str | None) -> dict[str, Any]:
        """The request's verified claims (Unauthorized, IssuerUnavailable when they cannot be had)."""
        claims = self.verifier.claims_without_fetching(authorization)
        if claims is None:  # the issuer's keys may have to be fetched: never on the loop
            claims = await anyio.to_thread.run_sync(self.verifier.claims, authorization, limiter=self.limiter)
        return claims

    async def mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``/mcp``: the MCP tools over streamable HTTP. The bearer token is verified as for every
        API request (401 without one) and names the caller every tool call of this request reads as;
        a browser page of another origin is refused; the body is read within the API's limits. Only
        POST: each call's reply is its response, and a stateless server has no events to stream on
        a GET (which would hold its connection for good)."""
        request_id = uuid.uuid4().hex
        try:
            if scope["method"] != "POST":
                raise Refused(405, "MethodNotAllowedError", f"{MCP_PATH} takes POST: each call's reply is its response, "
                                                            "and no events are streamed")
            if (origin := foreign_origin(scope, self.origin)) is not None:
                raise Refused(403, "ForbiddenError", f"requests from {origin} are refused: /mcp answers this server's own page "
                                                     "and clients that send no Origin")
            identity = claims_identity(await self.claims(header(scope, b"authorization")), self.settings)
            body = await read_body(receive, header(scope, b"content-length"), MAX_BODY_BYTES, self.settings.read_seconds)
        except Unauthorized as refused:
            status, data, headers = unauthorized(refused)
        except IssuerUnavailable as down:
            status, data, headers = refusal(503, "ServiceUnavailable", str(down))
        except ForbiddenError as forbidden:
            status, data, headers = refusal(403, "ForbiddenError", str(forbidden.msg))
        except Refused as refused:
            status, data, headers = refusal(refused.status, refused.code, refused.message,
                                            {"Allow": "POST"} if refused.status == 405 else None)
        except ClientDisconnect:
            return
        else:
            await self.mcp_sessions.handle_request({**scope, IDENTITY_SCOPE_KEY: identity}, replayed(body, receive),
                                                   not_stored(send, request_id))
            return
        await reply(send, status, data, headers, request_id)

    async def upload(self, request: Request) -> Response:
        """The form's fields are checked before its file is read (:mod:`.forms`); a refusal
        leaves the rest of the body to the server, which reads it away without keeping it."""
        limit = self.services.max_bytes + FORM_SLACK
        try:
            check_length(request, limit, f"the upload is over the limit of {self.services.max_bytes:,} bytes")
            body = Request(request.scope, counted(request.receive, limit, self.services.max_bytes)).stream()
            received = await read_form(request.headers.get("content-type", ""), body, self.signer.check,
                                       fields_seconds=self.settings.read_seconds, upload_seconds=self.settings.upload_seconds)
            key, data = received.key, received.data
            if received.too_large:
                message = f"the file is over the limit of {received.max_bytes:,} bytes"
                await anyio.to_thread.run_sync(self.refuse_upload, key, TooLarge(message), limiter=self.limiter)
                raise Refused(413, "EntityTooLarge", message)
            if not data:
                await anyio.to_thread.run_sync(self.refuse_upload, key, EmptyText("the file is empty"), limiter=self.limiter)
                raise Refused(400, "EntityTooSmall", "the file is empty")
            await anyio.to_thread.run_sync(self.accept_upload, key, data, limiter=self.limiter)
        except Refused as refused:
            return error(refused.status, refused.code, refused.message)
        except ClientDisconnect:  # the sender went away mid-file: its form may still be sent again
            return error(400, "IncompleteBody", "the connection closed before the whole file arrived")
        except FormRefused as refused:
            return error(403, refused.code, refused.message)
        except ServerStopped as stopped:
            return error(503, stopped.code, stopped.message)
        except TooSlow as late:
            return error(408, late.code, late.message)
        except CitewellError as failed:
            return error(409 if isinstance(failed, Conflict) else 400, failed.code, failed.message)
        return Response(status_code=204)


async def reply(send: Send, status: int, data: bytes, headers: dict[str, str], request_id: str) -> None:
    """One whole response, never cached, with its request id."""
    headers["Cache-Control"] = "no-store"
    headers["X-Request-Id"] = request_id
    headers["Content-Length"] = str(len(data))
    await send({"type": "http.response.start", "status": status,
                "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]})
    await send({"type": "http.response.body", "body": data})


def check_length(request: Request, limit: int, message: str) -> None:
    declared = request.headers.get("content-length")
    if declared is None:
        return
    if not declared.strip().isdigit():
        raise Refused(400, "BadRequestError", "Content-Length is not a number")
    if int(declared) > limit:
        raise Refused(413, "RequestEntityTooLargeError", message)


def counted(receive: Receive, limit: int, max_bytes: int) -> Receive:
    """``receive`` that refuses a body over ``limit`` bytes as it arrives, whatever Content-Length said."""
    seen = 0

    async def counting() -> Message:
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > limit:
            raise Refused(413, "EntityTooLarge", f"the upload is over the limit of {max_bytes:,} bytes")
        return message

    return counting


async def read_body(receive: Receive, declared: str | None, limit: int, seconds: float) -> bytes:
    """The body, refused over ``limit`` bytes (413, as the Lambda refuses it) or when slower than ``seconds``."""
    declared = (declared or "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise Refused(413, "RequestEntityTooLargeError",
                      f"the body is {int(declared):,} bytes; the limit is 64 KiB ({limit:,} bytes)")
    parts, size = [], 0
    try:
        with anyio.fail_after(seconds):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientDisconnect()
                part = message.get("body", b"")
                size += len(part)
                if size > limit:
                    raise Refused(413, "RequestEntityTooLargeError", f"the body is over 64 KiB ({limit:,} bytes)")
                parts.append(part)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        raise Refused(408, "RequestTimeout", f"the body did not arrive within {seconds:.0f} seconds") from None
    return b"".join(parts)


class Plain:
    """An ASGI app as a route's endpoint: Starlette wraps a function or method in its Request and
    Response, and calls anything else as ASGI."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class SecurityHeaders:
    """Every response forbids other origins (CSP) and sniffing, framing and referrers."""

    def __init__(self, app: ASGIApp, headers: list[tuple[bytes, bytes]] = SECURITY_HEADERS) -> None:
        self.app, self.headers = app, headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                message = {**message, "headers": [*message.get("headers", []),
                                                  *(h for h in self.headers if h[0] not in names)]}
            await send(message)

        await self.app(scope, receive, with_headers)


__all__ = ["Server", "demo_identities"]
