"""A local model server for measuring citewell's model generators: the stand-in model
(``standin_model``: no language model, nothing downloaded) behind the two APIs they speak.

``python -m benchmarks.model_server [--port 8080] [--fault-rate 0.2] [--seed 0] [--log FILE]``

- OpenAI-compatible: ``GET /v1/models``, ``POST /v1/chat/completions`` (no streaming), as
  llama.cpp's server, vLLM and Ollama serve them. Point ``CITEWELL_OPENAI_BASE_URL`` at
  ``http://HOST:PORT/v1``.
- Bedrock Converse: ``POST /model/{modelId}/converse``, the path and JSON botocore uses.
  Point boto3 at it with ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://HOST:PORT`` (any
  credentials: requests are not checked).

Its first line on stdout names the address it serves (``--port 0`` picks a free port).
``--log FILE`` appends one JSON line per reply: the question, what a faithful reading
decided, and the fault it made, if any. Replies never say they are faulty.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from benchmarks.standin_model import Fault, Reply, StandInModel, parse_prompt

MODEL_NAME = "citewell-stand-in"


class RequestError(Exception):
    """A request the server cannot read: 400, with the message in the API's error shape."""


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list (OpenAI parts, Converse blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    raise RequestError("message content must be text or a list of text parts")


def _chat_prompt(body: dict[str, Any]) -> tuple[str, str]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise RequestError("messages must be a non-empty list of objects")
    if body.get("stream") not in (None, True, False):
        raise RequestError("stream must be true or false")
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    if not users:
        raise RequestError("no user message")
    return system, users[-1]


def _converse_prompt(body: dict[str, Any]) -> tuple[str, str]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise RequestError("messages must be a non-empty list of objects")
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    if not users:
        raise RequestError("no user message")
    return _text(body.get("system", [])), users[-1]


def _usage(system: str, user: str, content: str) -> tuple[int, int]:
    return len((system + " " + user).split()), len(content.split())


def _chat_completion(model: str, reply: Reply, system: str, user: str) -> dict[str, Any]:
    content = reply.content or ""
    prompt_tokens, completion_tokens = _usage(system, user, content)
    return {
        "id": "chatcmpl-" + hashlib.sha256(f"{system}\x00{user}".encode()).hexdigest()[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": MODEL_NAME,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _converse_reply(reply: Reply, system: str, user: str, started: float) -> dict[str, Any]:
    content = reply.content or ""
    prompt_tokens, completion_tokens = _usage(system, user, content)
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": content}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": prompt_tokens, "outputTokens": completion_tokens,
                  "totalTokens": prompt_tokens + completion_tokens},
        "metrics": {"latencyMs": int((time.perf_counter() - started) * 1000)},
    }


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: StandInModel, log: Path | None = None) -> None:
        super().__init__(address, _Handler)
        self.model = model
        self.log = log
        self.replies: list[dict[str, Any]] = []  # what it did, in order: the log's lines
        self.token_seconds = 0.005  # between streamed chunks, as a model writes
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def record(self, api: str, system: str, user: str, reply: Reply) -> None:
        entry = {"api": api, "question": parse_prompt(system, user).question, "decision": reply.decision,
                 "fault": reply.fault.value if reply.fault else None,
                 "cut_off": reply.content is None}
        with self._lock:
            self.replies.append(entry)
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(entry) + "\n")


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, payload: dict[str, Any] | None = None, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, model: str, content: str) -> None:
        """The reply as OpenAI's server-sent chunks: a word (with its space) a chunk, then ``[DONE]``."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for piece in re.findall(r"\S+\s*", content) or [""]:
            chunk = {"object": "chat.completion.chunk", "model": model,
                     "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(self.server.token_seconds)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _error(self, status: int, message: str) -> None:
        if self.path.startswith("/model/"):  # Bedrock's error shape; botocore reads the code from the header
            self.send_response(status)
            data = json.dumps({"message": message}).encode()
            self.send_header("x-amzn-ErrorType", "ValidationException" if status == 400 else "ResourceNotFoundException")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self._send(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}})

    def do_GET(self) -> None:
        model = {"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "citewell (a stand-in, not a language model)"}
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [model]})
        elif self.path.startswith(("/v1/models/", "/models/")):
            self._send(200, {**model, "id": unquote(self.path.rsplit("/", 1)[-1])})
        elif self.path in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        started = time.perf_counter()
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            if not isinstance(body, dict):
                raise RequestError("the body must be a JSON object")
            if self.path.rstrip("/") in ("/v1/chat/completions", "/chat/completions"):
                api, (system, user) = "chat", _chat_prompt(body)
            elif self.path.startswith("/model/") and self.path.endswith("/converse"):
                api, (system, user) = "converse", _converse_prompt(body)
            else:
                self._error(404, f"no route {self.path}")
                return
        except (ValueError, RequestError) as error:
            self._error(400, str(error) if isinstance(error, RequestError) else "the body is not JSON")
            return
        reply = self.server.model.reply(system, user)
        self.server.record(api, system, user, reply)
        if api == "chat" and body.get("stream") is True and reply.content is not None:
            self._stream(str(body.get("model") or MODEL_NAME), reply.content)
            return
        if api == "chat":
            payload = _chat_completion(str(body.get("model") or MODEL_NAME), reply, system, user)
        else:
            payload = _converse_reply(reply, system, user, started)
        data = json.dumps(payload).encode()
        self._send(200, raw=data[: len(data) // 2] if reply.content is None else data)


def serve(model: StandInModel, host: str = "127.0.0.1", port: int = 0, log: Path | None = None) -> ModelServer:
    """A running server on its own thread; ``shutdown()`` stops it."""
    server = ModelServer((host, port), model, log)
    threading.Thread(target=server.serve_forever, name="model-server", daemon=True).start()
    return server


def _faults(value: str) -> tuple[Fault, ...]:
    try:
        return tuple(Fault) if value == "all" else tuple(Fault(v.strip()) for v in value.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--faults takes all or any of {', '.join(Fault)}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0: any free port")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of replies that go wrong, 0 to 1")
    parser.add_argument("--faults", type=_faults, default=tuple(Fault), help=f"all, or any of {', '.join(Fault)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", type=Path, help="append one JSON line per reply")
    args = parser.parse_args()
    if not 0.0 <= args.fault_rate <= 1.0:
        parser.error("--fault-rate is a share, from 0 to 1")
    server = ModelServer((args.host, args.port), StandInModel(args.fault_rate, args.faults, args.seed), args.log)
    print(f"serving {MODEL_NAME} at {server.url}/v1 (OpenAI-compatible) and {server.url} (Bedrock Converse); "
          f"fault rate {args.fault_rate}, seed {args.seed}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
