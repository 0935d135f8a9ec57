"""A real HTTP server on 127.0.0.1 that plays scripted replies, standing in for a model service."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    body: object = None  # dict -> JSON; str -> raw text
    delay: float = 0.0
    pieces: Iterable[bytes] | None = None  # the body as these writes, with no length (read until the connection closes)
    pause: float = 0.0  # between the pieces
    headers: dict[str, str] = field(default_factory=dict)  # sent beside Content-Type (a Content-Encoding)


@dataclass
class ModelService:
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[dict] = field(default_factory=list)
    url: str = ""
    respond: Callable[[dict], Reply] | None = None  # a reply written from the request, when no reply is scripted

    def chat(self, content: str) -> Reply:
        return Reply(body={"choices": [{"message": {"role": "assistant", "content": content}}]})


def start() -> tuple[ModelService, ThreadingHTTPServer]:
    service = ModelService()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", 0))
            service.requests.append({"path": self.path, "headers": dict(self.headers), "json": json.loads(self.rfile.read(length))})
            body = service.requests[-1]["json"]
            if service.replies:
                reply = service.replies.popleft()
            elif service.respond is not None:
                reply = service.respond(body)
            else:
                reply = Reply(status=500, body={"error": "no reply scripted"})
            time.sleep(reply.delay)
            data = reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.pieces is None:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                for piece in [data] if reply.pieces is None else reply.pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    time.sleep(reply.pause)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    service.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return service, server
