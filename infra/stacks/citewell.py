"""One stack, built from constructs: storage, search, ingestion, API, audit and alarms."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, Node

from stacks.api import Api
from stacks.functions import Functions
from stacks.monitoring import Alarms
from stacks.search import Search
from stacks.storage import Storage

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class StackConfig:
    search: str = "domain"
    layer_path: str = "build/layer"
    embedding_model: str = "amazon.titan-embed-text-v2:0"
    tenant_claim: str = "custom:tenant"
    roles_claim: str = "cognito:groups"
    jwt_issuer: str | None = None
    jwt_audience: str | None = None

    @classmethod
    def from_context(cls, node: Node) -> StackConfig:
        values = {name: node.try_get_context(name) for name in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in values.items() if v is not None})


class CitewellStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, config: StackConfig, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        if config.search not in ("domain", "serverless"):
            raise ValueError("context 'search' must be 'domain' or 'serverless'")
        layer_path = Path(config.layer_path)
        layer_path = layer_path if layer_path.is_absolute() else ROOT / layer_path
        if not (layer_path / "python").is_dir():
            layer_path = ROOT / "build" / "layer-missing"
            (layer_path / "python").mkdir(parents=True, exist_ok=True)
            cdk.Annotations.of(self).add_warning_v2(
                "citewell:layer", "the Lambda layer is not built: run `make layer` before `cdk deploy`")
        layer = lambda_.LayerVersion(
            self, "CoreLayer",
            code=lambda_.Code.from_asset(str(layer_path)),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
            description="citewell core and its dependencies (make layer)",
        )
        storage = Storage(self, "Storage")
        search = Search(self, "Search", serverless=config.search == "serverless")
        functions = Functions(self, "Functions", storage=storage, search=search, layer=layer, config=config)
        search.seal()
        Api(self, "Api", handler=functions.api, issuer=config.jwt_issuer, audience=config.jwt_audience)
        Alarms(self, "Alarms", queues=functions.dead_letter_queues, functions=functions.all)
