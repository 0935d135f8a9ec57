"""Any OpenAI-compatible chat-completions endpoint, over httpx: one completion, whole or streamed.

The transport of a model; what is asked of it (an answer, a rewrite, a rerank, an expansion) is
the caller's (:mod:`citewell.answers.generators.openai_compatible` for answers)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from citewell.deadline import time_for
from citewell.errors import GeneratorUnavailable

RETRY_STATUS = {429, 500, 502, 503, 504}


class OpenAICompatibleModel:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 2,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport)
        self.model = model
        # Cached answers are keyed by it: another server under the same model name gets its own.
        self.fingerprint = str(self.client.base_url)
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout

    @property
    def name(self) -> str:
        return f"openai-compatible:{self.model}"

    def complete(self, system: str, user: str) -> str:
        """One plain completion, not streamed."""
        return _content(self._post(self._body(system, user)))

    def stream(self, system: str, user: str, listen: Callable[[str], None]) -> str:
        """One completion as the model writes it, each piece handed to ``listen``."""
        return self._streamed({**self._body(system, user), "stream": True}, listen)

    def _body(self, system: str, user: str) -> dict[str, Any]:
        return {"model": self.model, "temperature": 0,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}

    def _streamed(self, body: dict[str, Any], listen: Callable[[str], None]) -> str:
        """The reply as the model writes it (OpenAI's ``stream``), each piece handed to ``listen``.
        Retried like a whole reply only until the first piece arrived: after that, a failure is one."""
        import json

        failure = "the model service sent nothing"
        for attempt in range(self.retries + 1):
            pieces: list[str] = []
            try:
                with self.client.stream("POST", "/chat/completions", json=body, timeout=self._time_left()) as response:
                    if response.status_code >= 400:
                        failure = f"the model service answered HTTP {response.status_code}"
                        if response.status_code not in RETRY_STATUS:
                            raise GeneratorUnavailable(failure)
                    else:
                        for line in response.iter_lines():
                            data = line.removeprefix("data:").strip() if line.startswith("data:") else ""
                            if not data:
                                continue
                            if data == "[DONE]":
                                return "".join(pieces)
                            try:
                                piece = json.loads(data)["choices"][0].get("delta", {}).get("content") or ""
                            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                                raise GeneratorUnavailable(
                                    "the model service streamed a chunk that is not a completion chunk") from None
                            pieces.append(str(piece))
                            listen(str(piece))
                        if pieces:
                            return "".join(pieces)  # ended without [DONE]: what it wrote is the reply
                        failure = "the model service ended its stream with nothing"
            except httpx.TimeoutException as exc:
                failure = f"the model service timed out ({exc.__class__.__name__})"
            except httpx.HTTPError as exc:
                failure = f"the model service could not be reached ({exc.__class__.__name__})"
            if pieces:
                raise GeneratorUnavailable(f"{failure}, mid-reply")
            if attempt < self.retries:
                time.sleep(self.backoff * 2**attempt)
        raise GeneratorUnavailable(failure)

    def _time_left(self) -> float:
        """Each attempt's timeout: what the request has left (see :mod:`citewell.deadline`),
        keeping time for the extractive answer, at most the client's own; none left: not made."""
        try:
            return time_for(self.timeout)
        except TimeoutError as exc:
            raise GeneratorUnavailable(f"the model service gave no reply in time ({exc})") from None

    def _post(self, body: dict[str, Any]) -> Any:
        for attempt in range(self.retries + 1):
            try:
                response = self.client.post("/chat/completions", json=body, timeout=self._time_left())
            except httpx.TimeoutException as exc:
                failure = f"the model service timed out ({exc.__class__.__name__})"
            except httpx.HTTPError as exc:
                failure = f"the model service could not be reached ({exc.__class__.__name__})"
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        raise GeneratorUnavailable("the model service replied with something that is not JSON") from None
                failure = f"the model service answered HTTP {response.status_code}"
                if response.status_code not in RETRY_STATUS:
                    raise GeneratorUnavailable(failure)
            if attempt < self.retries:
                time.sleep(self.backoff * 2**attempt)
        raise GeneratorUnavailable(failure)


def _content(payload: Any) -> str:
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise GeneratorUnavailable("the model service reply has no choices[0].message.content") from None
    if not isinstance(content, str):
        raise GeneratorUnavailable("the model service reply content is not text")
    return content
