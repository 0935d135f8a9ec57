"""Amazon Bedrock's Rerank API: ``bedrock-agent-runtime`` ``rerank`` with a reranking model's ARN
(Cohere Rerank or Amazon Rerank on Bedrock). The stack's query role may call it for the
configured model only (``bedrock:Rerank`` on the agent runtime, ``bedrock:InvokeModel`` on that
model's ARN)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from citewell.boto_deadline import bound_by_deadline
from citewell.deadline import bounded
from citewell.errors import RerankerUnavailable
from citewell.models.search import SearchHit
from citewell.ports import Reranked
from citewell.rerankers.http import checked

MAX_DOCUMENTS = 1000  # the API's bound on sources per call


class BedrockReranker:
    def __init__(self, model_arn: str, client: Any = None, region: str | None = None, timeout: float = 10.0) -> None:
        if client is None:
            import boto3
            from botocore.config import Config

            # One attempt ("max_attempts" alone counts retries: two calls, twice the timeout).
            config = Config(retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=timeout,
                            connect_timeout=min(timeout, 5.0))
            client = boto3.client("bedrock-agent-runtime", region_name=region, config=config)
        self.client = bound_by_deadline(client)  # a call given up on at the deadline stops reading then too
        self.model_arn = model_arn
        self.timeout = timeout

    @property
    def name(self) -> str:
        return f"bedrock-rerank:{self.model_arn.rsplit('/', 1)[-1]}"

    def rerank(self, question: str, hits: Sequence[SearchHit], top_n: int) -> list[Reranked]:
        from botocore.exceptions import BotoCoreError, ClientError
        from botocore.parsers import ResponseParserError

        hits = hits[:MAX_DOCUMENTS]
        try:  # within what the request has left, keeping time for the answer
            response = bounded(lambda: self.client.rerank(
                queries=[{"type": "TEXT", "textQuery": {"text": question}}],
                sources=[{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": h.text}}}
                         for h in hits],
                rerankingConfiguration={"type": "BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {
                    "numberOfResults": min(top_n, len(hits)), "modelConfiguration": {"modelArn": self.model_arn}}},
            ), self.timeout + min(self.timeout, 5.0))
        except TimeoutError as exc:
            raise RerankerUnavailable(f"Bedrock's rerank gave no reply in time ({exc})") from None
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise RerankerUnavailable(f"Bedrock refused the rerank request ({code})") from None
        except BotoCoreError as exc:
            raise RerankerUnavailable(f"Bedrock's rerank could not be reached ({exc.__class__.__name__})") from None
        except (AttributeError, KeyError, TypeError, ValueError, ResponseParserError) as exc:
            # botocore parses the reply by the API's model, and a body not in that shape fails inside
            # it with whatever the parser tripped on: still a malformed reply, never a failed search.
            raise RerankerUnavailable(f"the Bedrock rerank reply is malformed ({exc.__class__.__name__})") from None
        try:
            found = [(int(r["index"]), float(r["relevanceScore"])) for r in response["results"]]
        except (KeyError, TypeError, ValueError):
            raise RerankerUnavailable("the Bedrock rerank reply has no results of index and relevanceScore") from None
        return checked(found, len(hits), top_n, "Bedrock rerank")
