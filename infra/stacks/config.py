"""The stack's configuration, read from the CDK context: what every construct of the stack builds from."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from constructs import Node

from citewell.settings import DEFAULT_BEDROCK_EMBED_MODEL
from stacks.search import PROFILES

ROOT = Path(__file__).resolve().parents[2]

# Where Bedrock offers each reranking model (single-region support), as "Supported Regions and
# models for reranking in Amazon Bedrock" lists them
# (https://docs.aws.amazon.com/bedrock/latest/userguide/rerank-supported.html): Amazon Rerank 1.0
# is not offered in us-east-1. A model not listed here is not checked (synthesis warns).
RERANK_REGIONS = {
    "amazon.rerank-v1:0": frozenset({"ap-northeast-1", "ca-central-1", "eu-central-1", "us-west-2"}),
    "cohere.rerank-v3-5:0": frozenset({"ap-northeast-1", "ca-central-1", "eu-central-1", "us-east-1", "us-west-2"}),
}
# A third-party model is sold through AWS Marketplace: the first call in an account subscribes to
# its product under the caller's role, which needs aws-marketplace:ViewSubscriptions and Subscribe
# ("Permissions for reranking in Amazon Bedrock"); Subscribe is held to the model's product by the
# aws-marketplace:ProductId key. The product id is the model card's (Cohere Rerank 3.5).
MARKETPLACE_PRODUCTS = {"cohere.rerank-v3-5:0": "prod-2o5bej62oxkbi"}


class ConfigError(ValueError):
    """A context value the stack cannot deploy with; the message says which and what to pass."""


@dataclass(frozen=True)
class StackConfig:
    layer_path: str = "build/layer"
    synth_only: bool = False  # check the template without a built layer; never deploy such a synthesis
    embedder: str = "bedrock"  # bedrock | minilm (a packaged model, no Bedrock grant)
    embedding_model: str = DEFAULT_BEDROCK_EMBED_MODEL
    ocr: str = "textract"  # textract (scans read by Amazon Textract, billed per page) | none (scans are empty_text)
    generator: str = "extractive"  # extractive | bedrock
    generator_model: str | None = None  # a Bedrock model or inference profile id, with generator=bedrock
    reranker: str = "none"  # none | bedrock (the Rerank API on rerank_model)
    # a Bedrock reranking model id (amazon.rerank-v1:0, cohere.rerank-v3-5:0), with reranker=bedrock
    rerank_model: str | None = None
    tenant_claim: str = "custom:tenant"
    roles_claim: str = "cognito:groups"
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    alarm_email: str | None = None
    log_retention_days: int = 90
    noncurrent_version_days: int = 7
    # per stage: the most concurrent invocations SQS starts (Lambda's floor is 2) and the batch size
    max_concurrency: dict[str, int] = field(
        default_factory=lambda: {"parse": 10, "chunk": 10, "embed": 4, "publish": 4, "delete": 4, "fetch": 4, "ocr": 4,
                                 "audit": 8})
    batch_size: dict[str, int] = field(
        default_factory=lambda: {"parse": 5, "chunk": 5, "embed": 1, "publish": 1, "delete": 1, "fetch": 1, "ocr": 1, "audit": 1})
    # The API function's reserved concurrency: at most this many run at once, and this many are
    # always available to it whatever the stages use. 0 reserves none (an account whose
    # concurrency quota leaves no room: Lambda keeps 100 unreserved).
    api_reserved_concurrency: int = 25
    # The HTTP API stage's throttle (every route): steady requests per second and burst; beyond
    # them API Gateway answers 429 before any function runs.
    api_throttle_rate: float = 20.0
    api_throttle_burst: int = 40
    fetch_allow: tuple[str, ...] = ()  # CIDRs or host names the fetch function may reach although private (CITEWELL_FETCH_ALLOW)
    profile: str = "default"  # the search domain's nodes: default | production (stacks/search.py PROFILES)

    @classmethod
    def from_context(cls, node: Node) -> StackConfig:
        if node.try_get_context("search") not in (None, "domain"):
            raise ConfigError("context search=serverless is not offered: OpenSearch Serverless vector collections take no "
                              "custom document ids, refresh, _delete_by_query or force merge, which deletion rests on; "
                              "the stack deploys a managed domain")
        values: dict[str, Any] = {name: node.try_get_context(name) for name in cls.__dataclass_fields__}
        if os.environ.get("CITEWELL_SYNTH_ONLY"):
            values["synth_only"] = True
        if isinstance(values.get("synth_only"), str):
            values["synth_only"] = values["synth_only"].lower() == "true"
        if isinstance(values.get("fetch_allow"), str):
            values["fetch_allow"] = tuple(x.strip() for x in values["fetch_allow"].split(",") if x.strip())
        for name in ("log_retention_days", "noncurrent_version_days", "api_reserved_concurrency", "api_throttle_burst"):
            if isinstance(values.get(name), str):
                values[name] = int(values[name])
        if isinstance(values.get("api_throttle_rate"), str | int):
            values["api_throttle_rate"] = float(values["api_throttle_rate"])
        return cls(**{k: v for k, v in values.items() if v is not None})

    def check(self) -> None:
        """Refuse what would deploy but not work."""
        if self.jwt_issuer is not None and not (self.jwt_audience or "").strip():
            raise ConfigError("context jwt_issuer needs jwt_audience too (the client id your identity provider puts in the "
                              "token's aud claim): pass -c jwt_audience=...")
        if self.jwt_audience is not None and self.jwt_issuer is None:
            raise ConfigError("context jwt_audience is only used with jwt_issuer; the bundled Cognito pool sets its own")
        if self.embedder not in ("bedrock", "minilm"):
            raise ConfigError("context embedder must be 'bedrock' or 'minilm'")
        if self.ocr not in ("textract", "none"):
            raise ConfigError("context ocr must be 'textract' or 'none'")
        if self.generator not in ("extractive", "bedrock"):
            raise ConfigError("context generator must be 'extractive' or 'bedrock'")
        if self.generator == "bedrock" and not self.generator_model:
            raise ConfigError("context generator=bedrock needs generator_model (a Bedrock model or inference profile id)")
        if self.reranker not in ("none", "bedrock"):
            raise ConfigError("context reranker must be 'none' or 'bedrock'")
        if self.reranker == "bedrock" and not self.rerank_model:
            raise ConfigError(
                "context reranker=bedrock needs rerank_model (a Bedrock reranking model id, such as amazon.rerank-v1:0)")
        if self.profile not in PROFILES:
            raise ConfigError(f"context profile must be one of {', '.join(sorted(PROFILES))}")
        if self.api_reserved_concurrency < 0:
            raise ConfigError("context api_reserved_concurrency is a count of concurrent invocations (0 reserves none)")
        if self.api_throttle_rate <= 0 or self.api_throttle_burst < 1:
            raise ConfigError("context api_throttle_rate (requests per second) and api_throttle_burst must be positive")
        if set(self.max_concurrency) != set(self.batch_size) or any(v < 2 for v in self.max_concurrency.values()):
            raise ConfigError("context max_concurrency names every queue-fed stage, each at least 2 (Lambda's floor)")

    def check_region(self, region: str | None) -> str | None:
        """Refuse a reranking model Bedrock does not offer in ``region`` (the stack's, or the CLI's
        target for an environment-agnostic stack); a warning's text when it cannot be checked."""
        if self.reranker != "bedrock" or not self.rerank_model:
            return None
        offered = RERANK_REGIONS.get(self.rerank_model)
        if offered is None:
            return (f"rerank_model {self.rerank_model} is not in the table of reranking models' regions "
                    "(infra/stacks/config.py RERANK_REGIONS): check that Bedrock offers it in the stack's region")
        if region is None:
            return (f"the stack's region is not known at synthesis (no env, no CDK_DEFAULT_REGION): rerank_model "
                    f"{self.rerank_model} is offered only in {', '.join(sorted(offered))}; the template's "
                    "RerankModelRegion rule refuses a deploy anywhere else")
        if region not in offered:
            raise ConfigError(f"rerank_model {self.rerank_model} is not offered by Bedrock in {region}; it is offered in "
                              f"{', '.join(sorted(offered))}: deploy to one of them, pick another model "
                              f"({', '.join(m for m, r in sorted(RERANK_REGIONS.items()) if region in r) or 'none here'} "
                              f"in {region}), or -c reranker=none")
        return None

    def layer(self) -> Path:
        path = Path(self.layer_path)
        return path if path.is_absolute() else ROOT / path
