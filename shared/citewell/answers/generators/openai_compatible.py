"""Any OpenAI-compatible chat-completions endpoint, over httpx."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx

from citewell.answers.prompt import SYSTEM_PROMPT, draft_from_reply, user_prompt
from citewell.errors import GeneratorUnavailable
from citewell.models import Draft, EvidenceItem

RETRY_STATUS = {429, 500, 502, 503, 504}


class OpenAICompatibleGenerator:
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

    @property
    def name(self) -> str:
        return f"openai-compatible:{self.model}"

    def generate(self, question: str, evidence: Sequence[EvidenceItem]) -> Draft:
        return draft_from_reply(self.complete(SYSTEM_PROMPT, user_prompt(question, evidence)))

    def complete(self, system: str, user: str) -> str:
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        return _content(self._post(body))

    def _post(self, body: dict[str, Any]) -> Any:
        for attempt in range(self.retries + 1):
            try:
                response = self.client.post("/chat/completions", json=body)
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
