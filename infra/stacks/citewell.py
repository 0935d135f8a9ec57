"""One stack, built from constructs: storage, search, ingestion, API, audit and alarms."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct
from layer import problems, unzipped_bytes

from stacks.api import Api
from stacks.config import RERANK_REGIONS, ROOT, ConfigError, StackConfig
from stacks.functions import Functions, retention
from stacks.logs import keep_logs
from stacks.monitoring import Alarms
from stacks.search import Search
from stacks.storage import Storage


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


def rerank_region_rule(stack: cdk.Stack, config: StackConfig) -> None:
    """Refuse, at deploy time, a region where Bedrock does not offer the reranking model: the
    same check as synthesis, for a template made without knowing its region (an
    environment-agnostic stack synthesized with no CDK_DEFAULT_REGION, then deployed anywhere).

    CloudFormation evaluates a template's Rules before it creates or updates any resource, and
    fails the operation with the AssertDescription when an assertion is false ("Rules syntax",
    "Rule functions"). ``Ref`` may be used inside every rule function but Fn::ValueOf and
    Fn::ValueOfAll, and the pseudo parameters are used "the same way as you would a parameter,
    as the argument for the Ref function" ("Pseudo parameters reference"): so the assertion is
    Fn::Contains over the regions offered and ``Ref AWS::Region``. A model not in the table
    gets no rule (synthesis warns)."""
    offered = RERANK_REGIONS.get(config.rerank_model or "") if config.reranker == "bedrock" else None
    if offered is None:
        return
    regions = sorted(offered)
    cdk.CfnRule(stack, "RerankModelRegion", assertions=[cdk.CfnRuleAssertion(
        assert_=cdk.Fn.condition_contains(regions, cdk.Aws.REGION),
        assert_description=f"rerank_model {config.rerank_model} is not offered by Bedrock in this region; it is offered in "
                           f"{', '.join(regions)}: deploy there, choose another -c rerank_model, or -c reranker=none")])


class CitewellStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, config: StackConfig, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        config.check()
        # An environment-agnostic stack deploys to the CLI's region, which the CLI hands the app.
        region = self.region if not cdk.Token.is_unresolved(self.region) else os.environ.get("CDK_DEFAULT_REGION")
        if unchecked := config.check_region(region):
            cdk.Annotations.of(self).add_warning_v2("citewell:rerank-region", unchecked)
        rerank_region_rule(self, config)
        layer = lambda_.LayerVersion(
            self, "CoreLayer",
            code=layer_asset(config, self),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
            description=f"citewell core and its dependencies for embedder={config.embedder} (make layer)",
        )
        storage = Storage(self, "Storage", noncurrent_version_days=config.noncurrent_version_days)
        search = Search(self, "Search", profile=config.profile)
        functions = Functions(self, "Functions", storage=storage, search=search, layer=layer, config=config)
        api = Api(self, "Api", handler=functions.api, issuer=config.jwt_issuer, audience=config.jwt_audience,
                  throttle_rate=config.api_throttle_rate, throttle_burst=config.api_throttle_burst)
        Alarms(self, "Alarms", queues=functions.dead_letter_queues, inboxes=functions.inboxes, functions=functions.all,
               api=functions.api, email=config.alarm_email, domain=search.domain, capacity=search.capacity,
               http_api=api.http_api)
        keep_logs(self, config.log_retention_days, retention(config.log_retention_days))
