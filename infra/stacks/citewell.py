"""One stack, built from constructs: storage, search, ingestion, API, audit and alarms."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, Node

from layer import problems, unzipped_bytes
from stacks.api import Api
from stacks.functions import Functions
from stacks.monitoring import Alarms
from stacks.search import PROFILES, Search
from stacks.storage import Storage

ROOT = Path(__file__).resolve().parents[2]


class ConfigError(ValueError):
    """A context value the stack cannot deploy with; the message says which and what to pass."""


@dataclass(frozen=True)
class StackConfig:
    layer_path: str = "build/layer"
    synth_only: bool = False  # check the template without a built layer; never deploy such a synthesis
    embedder: str = "bedrock"  # bedrock | minilm (a packaged model, no Bedrock grant)
    embedding_model: str = "amazon.titan-embed-text-v2:0"
    generator: str = "extractive"  # extractive | bedrock
    generator_model: str | None = None  # a Bedrock model or inference profile id, with generator=bedrock
    tenant_claim: str = "custom:tenant"
    roles_claim: str = "cognito:groups"
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    alarm_email: str | None = None
    log_retention_days: int = 90
    noncurrent_version_days: int = 7
    # per stage: the most concurrent invocations SQS starts (Lambda's floor is 2) and the batch size
    max_concurrency: dict[str, int] = field(default_factory=lambda: {"parse": 10, "chunk": 10, "embed": 4, "publish": 4, "delete": 4})
    batch_size: dict[str, int] = field(default_factory=lambda: {"parse": 5, "chunk": 5, "embed": 1, "publish": 1, "delete": 1})
    api_reserved_concurrency: int | None = None
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
        for name in ("log_retention_days", "noncurrent_version_days", "api_reserved_concurrency"):
            if isinstance(values.get(name), str):
                values[name] = int(values[name])
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
        if self.generator not in ("extractive", "bedrock"):
            raise ConfigError("context generator must be 'extractive' or 'bedrock'")
        if self.generator == "bedrock" and not self.generator_model:
            raise ConfigError("context generator=bedrock needs generator_model (a Bedrock model or inference profile id)")
        if self.profile not in PROFILES:
            raise ConfigError(f"context profile must be one of {', '.join(sorted(PROFILES))}")
        if set(self.max_concurrency) != set(self.batch_size) or any(v < 2 for v in self.max_concurrency.values()):
            raise ConfigError("context max_concurrency names every queue-fed stage, each at least 2 (Lambda's floor)")

    def layer(self) -> Path:
        path = Path(self.layer_path)
        return path if path.is_absolute() else ROOT / path


def layer_asset(config: StackConfig, scope: Construct) -> lambda_.Code:
    """The built layer. One that is not built, lacks what the embedder imports (embedder=minilm
    needs onnxruntime, the model and tokenizers) or is over Lambda's 250 MB would deploy
    functions that fail every import or every embedding, or fail the deployment itself: so
    synthesis stops here, unless it was asked only to check the template."""
    path = config.layer()
    functions = max(unzipped_bytes(folder) for folder in (ROOT / "functions").iterdir() if folder.is_dir())
    found = problems(path, config.embedder, function_bytes=functions)
    if not found:
        return lambda_.Code.from_asset(str(path))
    if not config.synth_only:
        raise ConfigError("; ".join(found) + " (or pass -c synth_only=true, or CITEWELL_SYNTH_ONLY=1, to check the "
                          "template without deploying it)")
    cdk.Annotations.of(scope).add_warning_v2("citewell:layer", f"synth_only: the layer is a placeholder ({'; '.join(found)}); "
                                                               "do not deploy this")
    placeholder = Path(tempfile.mkdtemp(prefix="citewell-layer-"))
    (placeholder / "python").mkdir()
    return lambda_.Code.from_asset(str(placeholder))


class CitewellStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, config: StackConfig, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        config.check()
        layer = lambda_.LayerVersion(
            self, "CoreLayer",
            code=layer_asset(config, self),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
            description=f"citewell core and its dependencies for embedder={config.embedder} (make layer)",
        )
        storage = Storage(self, "Storage", noncurrent_version_days=config.noncurrent_version_days)
        search = Search(self, "Search", profile=config.profile)
        functions = Functions(self, "Functions", storage=storage, search=search, layer=layer, config=config)
        api = Api(self, "Api", handler=functions.api, issuer=config.jwt_issuer, audience=config.jwt_audience)
        Alarms(self, "Alarms", queues=functions.dead_letter_queues, functions=functions.all, email=config.alarm_email,
               domain=search.domain, volume_gib=search.volume_gib, http_api=api.http_api)
