"""A real ``citewell serve`` process on 127.0.0.1 for the tests, and a client that talks to it as a browser would."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from citewell.serve.tokens import home_key, mint

WRITE = "citewell:write"
EVENTS_DIR = Path(__file__).resolve().parents[1] / "events"
CLEAN_EXIT = (0, -signal.SIGTERM)  # uvicorn raises SIGTERM again once it has shut down cleanly
HANDBOOK = (b"# Northpier Staff Handbook\n\n## Annual leave\n\nFull-time staff receive 27 days of paid annual leave per "
            b"calendar year, plus public holidays.\n\n## Sick leave\n\nReport sickness to your shift lead before your shift "
            b"starts.\n")
ERRORS = (b"# Error codes\n\n## E1027\n\nError E1027 means the crane controller lost its heartbeat. The operator must "
          b"reset the controller and call the duty engineer.\n")
SALARIES = b"# Salary bands\n\n## Shift lead\n\nThe salary band of a shift lead is 41,000 to 47,000 euros a year.\n"
GUIDE = (b"# Bluefen Employee Guide\n\n## Holidays\n\nBluefen employees receive 25 days of annual leave each year, "
         b"booked through the rota office.\n")
CORPUS = [  # (tenant, document id, roles, bytes)
    ("northpier", "handbook.md", ("staff",), HANDBOOK),
    ("northpier", "engineering/errors.md", ("support", "engineering"), ERRORS),
    ("northpier", "hr/salaries.md", ("hr",), SALARIES),
    ("bluefen", "guide.md", ("staff",), GUIDE),
]


LISTENING = b"Uvicorn running on"  # logged once the socket is bound, after the app's start-up
PORT_TAKEN = b"address already in use"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_serve(home: Path, command: Callable[[int], list[str]], env: dict[str, str],
                seconds: float = 120) -> tuple[subprocess.Popen[bytes], int, Path]:
    """``command(port)`` (a ``citewell serve``) on a free loopback port: its process, port and log.

    A port found free may be bound by another process before the server binds it (a test worker
    running beside this one, or a client's outgoing connection): that server exits saying so and
    starts again on another port. It is waited for until its own log says it listens, so a probe
    of the port never reaches another process's server; an exit for any other reason, or no word
    in time, is the caller's to report."""
    for _ in range(5):
        port = free_port()
        log = home.parent / f"serve-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(command(port), stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + seconds
        while process.poll() is None and LISTENING not in log.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.1)
        if process.poll() is None or PORT_TAKEN not in log.read_bytes().lower():
            return process, port, log
    raise RuntimeError(f"citewell serve found every port it tried taken:\n{log.read_text()}")


class Served:
    """``citewell serve`` on ``home`` in its own process (``--home`` typed before the command, or
    after it with ``home_after``); ``stop`` sends SIGTERM and waits."""

    def __init__(self, home: Path, *, demo: bool = False, env: dict[str, str] | None = None, args: Iterable[str] = (),
                 home_after: bool = False) -> None:
        self.home = home
        where = ["serve", "--home", str(home)] if home_after else ["--home", str(home), "serve"]
        options = [*args, *(["--demo"] if demo else [])]
        environment = {**os.environ, "CITEWELL_EMBED_THREADS": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process, self.port, self.log = start_serve(
            home, lambda port: [sys.executable, "-m", "citewell", *where, "--port", str(port), *options], environment)
        self.url = f"http://127.0.0.1:{self.port}"
        self.client = httpx.Client(base_url=self.url, timeout=60)
        self._wait_ready()

    def _wait_ready(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"citewell serve exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if self.client.get("/openapi.json").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"citewell serve did not start:\n{self.log.read_text()}")

    def token(self, tenant: str, roles: Iterable[str], ttl: int = 600, subject: str | None = None) -> str:
        return mint(home_key(self.home), tenant=tenant, roles=roles, ttl_seconds=ttl, tenant_claim="custom:tenant",
                    roles_claim="cognito:groups", subject=subject)

    def call(self, method: str, path: str, token: str | None = None, body: Any = None, **kwargs: Any) -> httpx.Response:
        headers = {**kwargs.pop("headers", {})}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            kwargs["json"] = body
        return self.client.request(method, path, headers=headers, **kwargs)

    def upload(self, token: str, document_id: str, data: bytes, roles: Iterable[str], wait: bool = True) -> dict[str, Any]:
        """What the web page does: create the document, post the form with the file last, poll until it settles."""
        created = self.call("POST", "/documents", token, {"document_id": document_id, "allowed_roles": list(roles),
                                                           "filename": document_id.rsplit("/", 1)[-1]})
        assert created.status_code == 201, created.text
        form = created.json()["upload"]
        sent = httpx.post(form["url"], data=form["fields"], files={"file": ("upload", data)}, timeout=60)
        assert sent.status_code == 204, sent.text
        return self.settled(token, document_id) if wait else created.json()

    def settled(self, token: str, document_id: str, seconds: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        path = "/documents/" + quote(document_id, safe="")
        while time.monotonic() < deadline:
            reply = self.call("GET", path, token)
            document = reply.json()["document"]
            if document["status"] != "processing":
                return document
            time.sleep(0.1)
        raise AssertionError(f"{document_id} still processing after {seconds} s")

    def vectors_ready(self, token: str, seconds: float = 120) -> None:
        """Wait until search says no document ``token`` may read still waits for its vectors."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            reply = self.call("POST", "/search", token, {"question": "vectors", "k": 1})
            if not any(note.startswith("vector index not ready") for note in reply.json()["degraded"]):
                return
            time.sleep(0.1)
        raise AssertionError(f"vectors still not ready after {seconds} s")

    def stop(self, sig: int = signal.SIGTERM, seconds: float = 120) -> int:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def load_corpus(served: Served) -> None:
    """Every document of ``CORPUS`` through the server's own upload path, by a writer of its tenant,
    then until its vectors are in: a published upload is searched by words first, and the tests
    that load the corpus compare replies with a pipeline that embeds before it publishes."""
    for tenant, document_id, roles, data in CORPUS:
        writer = served.token(tenant, [*roles, WRITE])
        assert served.upload(writer, document_id, data, roles)["status"] == "published"
    for tenant in {t for t, _, _, _ in CORPUS}:
        served.vectors_ready(served.token(tenant, {r for t, _, roles, _ in CORPUS if t == tenant for r in roles}))
