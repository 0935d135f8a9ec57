"""``POST /query`` as server-sent events (``Accept: text/event-stream``): ``draft`` events carry
a model's reply as it is written; then one ``final`` event with the verified answer (the same
JSON as the plain reply), preceded by a ``retraction`` when the draft did not stand (verification
rejected it, or the model failed mid-reply) so a client replaces what it showed. A draft thrown
away because a source changed before the answer was kept gets its ``retraction`` at once, before
the drafts of the question asked again (or the final event). An answer with
no draft (the extractive default, a cached answer) is its final event at once. A refusal of the
request before any event (a bad body, no such conversation) is the plain JSON error with its
status; after one, an ``error`` event holding that same JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from starlette.types import Scope, Send

from citewell.answers.drafts import drafts_to
from citewell.answers.service import DRAFT_REJECTED, GENERATOR_UNAVAILABLE

Respond = Callable[[], tuple[int, bytes, dict[str, str]]]


def wants_events(scope: Scope) -> bool:
    if scope.get("method") != "POST" or scope.get("path") != "/query":
        return False
    accept = ",".join(v.decode("latin-1") for n, v in scope.get("headers") or [] if n == b"accept")
    return "text/event-stream" in accept.lower()


def _event(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


def _retracted(final: dict[str, Any]) -> str | None:
    """Why the draft did not stand, from the answer's own notes; None when it stood."""
    return next((note for note in final.get("degraded", []) if note.startswith((DRAFT_REJECTED, GENERATOR_UNAVAILABLE))), None)


async def stream_query(respond: Respond, send: Send, headers: dict[str, str], limiter: anyio.CapacityLimiter | None) -> None:
    """Run ``respond`` (the whole API request) in a pool thread with its drafts sent as they come."""
    sender, receiver = anyio.create_memory_object_stream[tuple[str, Any]](max_buffer_size=math.inf)

    def work() -> None:
        def listen(piece: str) -> None:
            anyio.from_thread.run_sync(sender.send_nowait, ("draft", piece))

        def retracted(reason: str) -> None:
            anyio.from_thread.run_sync(sender.send_nowait, ("retraction", reason))

        try:
            with drafts_to(listen, retracted):
                result = respond()
        except BaseException as error:  # the loop below must always hear the end
            anyio.from_thread.run_sync(sender.send_nowait, ("failed", error))
            raise
        anyio.from_thread.run_sync(sender.send_nowait, ("done", result))

    started = False

    async def start() -> None:
        nonlocal started
        if not started:
            started = True
            sent = {**headers, "Content-Type": "text/event-stream; charset=utf-8", "X-Accel-Buffering": "no"}
            sent.pop("Content-Length", None)
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in sent.items()]})

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: anyio.to_thread.run_sync(work, limiter=limiter))
        drafted = False
        async with receiver:
            async for kind, value in receiver:
                if kind == "draft":
                    await start()
                    drafted = True
                    body = _event("draft", json.dumps({"text": value}))
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                    continue
                if kind == "retraction":
                    if drafted:  # only a draft shown is withdrawn
                        drafted = False
                        await send({"type": "http.response.body", "body": _event("retraction", json.dumps({"reason": value})),
                                    "more_body": True})
                    continue
                if kind == "failed":
                    break  # the task group raises it; the server's 500 handler answers
                status, data, reply_headers = value
                if status != 200 and not started:
                    merged = {**reply_headers, **headers, "Content-Length": str(len(data))}
                    await send({"type": "http.response.start", "status": status,
                                "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in merged.items()]})
                    await send({"type": "http.response.body", "body": data})
                    return
                await start()
                text = data.decode("utf-8")
                if status != 200:
                    body = _event("error", text)
                else:
                    why = _retracted(json.loads(text)) if drafted else None
                    body = (_event("retraction", json.dumps({"reason": why})) if why else b"") + _event("final", text)
                await send({"type": "http.response.body", "body": body})
                return
