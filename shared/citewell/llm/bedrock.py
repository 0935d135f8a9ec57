"""Amazon Bedrock's Converse API through boto3 (any Converse-capable text model): one completion,
whole, or as it is written through ConverseStream. The transport of a model; what is asked of it
is the caller's (:mod:`citewell.answers.generators.bedrock` for answers)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from citewell.boto_deadline import bound_by_deadline
from citewell.deadline import bounded, time_for
from citewell.errors import GeneratorUnavailable

READ_TIMEOUT_S, CONNECT_TIMEOUT_S = 20, 3  # one attempt ends by 23 s, inside the API function's 30 s


@lru_cache(maxsize=8)
def shared_client(region: str | None) -> Any:
    """One client per region for the container's life: a client costs tens of milliseconds and
    its connection pool is what keeps the TLS session to Bedrock warm across requests. A single
    attempt, since a retry after a 20 s read would outlive the request."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=READ_TIMEOUT_S,
                    connect_timeout=CONNECT_TIMEOUT_S)
    return bound_by_deadline(boto3.client("bedrock-runtime", region_name=region, config=config))


class BedrockModel:
    def __init__(self, model_id: str, client: Any = None, region: str | None = None, max_tokens: int = 800) -> None:
        # A call given up on at the request's deadline stops reading then too (see citewell.boto_deadline).
        self.client = bound_by_deadline(client) if client is not None else shared_client(region)
        self.model_id = model_id
        # Cached answers are keyed by it: another endpoint under the same model id gets its own.
        self.fingerprint = str(self.client.meta.endpoint_url)
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:
        return f"bedrock:{self.model_id}"

    def complete(self, system: str, user: str) -> str:
        """One plain completion, not streamed."""
        return self._converse(system, user)

    def stream(self, system: str, user: str, listen: Callable[[str], None]) -> str:
        """One completion as the model writes it, each piece handed to ``listen``."""
        return self._streamed(system, user, listen)

    def _request(self, system: str, user: str) -> dict[str, Any]:
        return {"modelId": self.model_id, "system": [{"text": system}],
                "messages": [{"role": "user", "content": [{"text": user}]}],
                "inferenceConfig": {"temperature": 0, "maxTokens": self.max_tokens}}

    def _streamed(self, system: str, user: str, listen: Callable[[str], None]) -> str:
        """The reply as the model writes it (ConverseStream's ``contentBlockDelta`` events), each
        piece handed to ``listen``. Not retried: the client makes one attempt, as for Converse."""
        from botocore.exceptions import BotoCoreError, ClientError

        pieces: list[str] = []
        try:  # a stream's pieces are handed on as they come, so it is not waited on: it starts only with time left
            time_for(READ_TIMEOUT_S + CONNECT_TIMEOUT_S)
            response = self.client.converse_stream(**self._request(system, user))
            for event in response["stream"]:  # an exception event raises EventStreamError, a ClientError
                text = event.get("contentBlockDelta", {}).get("delta", {}).get("text", "")
                if text:
                    pieces.append(text)
                    listen(text)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise GeneratorUnavailable(f"Bedrock refused the request or broke off its stream ({code})") from exc
        except BotoCoreError as exc:
            raise GeneratorUnavailable(f"Bedrock could not be reached ({exc.__class__.__name__})") from exc
        except TimeoutError as exc:
            raise GeneratorUnavailable(f"no time left for Bedrock ({exc})") from None
        content = "".join(pieces)
        if not content.strip():
            raise GeneratorUnavailable("the Bedrock stream is empty")
        return content

    def _converse(self, system: str, user: str) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        try:  # within what the request has left, keeping time for the extractive answer
            response = bounded(lambda: self.client.converse(**self._request(system, user)),
                               READ_TIMEOUT_S + CONNECT_TIMEOUT_S)
        except TimeoutError as exc:
            raise GeneratorUnavailable(f"Bedrock gave no reply in time ({exc})") from None
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise GeneratorUnavailable(f"Bedrock refused the request ({code})") from exc
        except BotoCoreError as exc:
            raise GeneratorUnavailable(f"Bedrock could not be reached ({exc.__class__.__name__})") from exc
        try:
            blocks = response["output"]["message"]["content"]
            content = "".join(block["text"] for block in blocks if "text" in block)
        except (KeyError, TypeError):
            raise GeneratorUnavailable("the Bedrock reply has no output.message.content") from None
        if not content.strip():
            raise GeneratorUnavailable("the Bedrock reply is empty")
        return content
