"""The reranker on AWS, under the role the stack synthesizes for the API function.

The stack is synthesized with ``reranker=bedrock`` and Cohere Rerank 3.5 (a Marketplace model: its
role also needs ``aws-marketplace:ViewSubscriptions`` and ``Subscribe``). The API function runs
with the environment the template gives it; a search goes through the Bedrock reranker's own
boto3 client, whose ``bedrock-agent-runtime`` ``Rerank`` call is answered in the API's reply
shape (moto has no Rerank) after botocore has built and recorded it. The chain's recorder then
holds every call, the rerank included, to the API function's role (tests.aws_roles), as
test_aws_chain does for every function; and the rerank's own needs are checked here too, so that
a role without them fails this test rather than only the chain's teardown."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from tests.aws.test_aws_chain import HANDBOOK, api, aws, knn_proxy, pump, upload  # noqa: F401
from tests.aws_roles import names, needs, permitted, resolve, roles, synthesize

MODEL = "cohere.rerank-v3-5:0"


@pytest.fixture(scope="module")
def reranking_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("aws_cdk")
    return synthesize(tmp_path_factory.mktemp("synth-rerank"), reranker="bedrock", rerank_model=MODEL)


@pytest.fixture(scope="module")
def function_roles(reranking_template: dict[str, Any]) -> dict[str, list[dict]]:
    """The roles of the reranking stack: the chain's fixture (``aws``) records and checks against these."""
    return roles(reranking_template)


RERANK_VARIABLES = ("CITEWELL_RERANKER", "CITEWELL_BEDROCK_RERANK_MODEL_ARN")


def api_environment(template: dict[str, Any]) -> dict[str, str]:
    """The API function's reranker variables as the template sets them, resolved in the tests' account."""
    (function,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"
                   and r["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME") == "citewell-api"]
    variables = function["Properties"]["Environment"]["Variables"]
    return {name: resolve(variables[name], names(template)) for name in RERANK_VARIABLES}


class Rerank:
    """Bedrock's Rerank as its API answers: every source scored, the last one sent first."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, params: dict[str, Any], **_: object) -> tuple[AWSResponse, dict[str, Any]]:
        request = json.loads(params["body"])
        self.requests.append(request)
        count = len(request["sources"])
        wanted = request["rerankingConfiguration"]["bedrockRerankingConfiguration"]["numberOfResults"]
        results = [{"index": i, "relevanceScore": round(0.9 - 0.1 * n, 3)} for n, i in enumerate(reversed(range(count)))]
        # What a before-call handler returns in place of sending: the HTTP reply and its parsed body.
        http = AWSResponse("https://bedrock-agent-runtime.eu-west-1.amazonaws.com/rerank", 200, {}, None)
        return http, {"results": results[:wanted], "ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}}}


def test_the_api_function_reranks_under_its_synthesized_role(aws, reranking_template, function_roles, monkeypatch):  # noqa: F811
    environment = api_environment(reranking_template)
    assert environment["CITEWELL_RERANKER"] == "bedrock"
    for name in RERANK_VARIABLES:
        monkeypatch.setenv(name, environment[name])
    rerank = Rerank()
    boto3.DEFAULT_SESSION.events.register("before-call.bedrock-agent-runtime.Rerank", rerank)
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)

    status, found = api("POST", "/search", {"question": "annual leave days"})
    assert status == 200 and found["degraded"] == [], found
    hits = found["hits"]
    assert len(hits) > 1 and all(h["rerank"] is not None for h in hits)  # the reranker's order, with its scores
    (request,) = rerank.requests
    configured = request["rerankingConfiguration"]["bedrockRerankingConfiguration"]["modelConfiguration"]["modelArn"]
    assert configured == environment["CITEWELL_BEDROCK_RERANK_MODEL_ARN"] and configured.endswith(f"foundation-model/{MODEL}")

    calls = [(caller, service, op, params) for caller, service, op, params in aws["calls"].all()
             if service == "bedrock-agent-runtime"]
    assert [(caller, op) for caller, _, op, _ in calls] == [("api", "Rerank")]
    needed = needs("bedrock-agent-runtime", "Rerank", {**calls[0][3], "caller": "api"})
    assert [action for action, _, _ in needed] == ["bedrock:Rerank", "bedrock:InvokeModel",
                                                   "aws-marketplace:ViewSubscriptions", "aws-marketplace:Subscribe"]
    for action, resource, context in needed:
        assert permitted(function_roles["api"], action, resource, context), (action, resource, context)
    # and no other function may rerank, or subscribe the account to anything
    for name, documents in function_roles.items():
        if name != "api":
            assert not any(permitted(documents, action, resource, context) for action, resource, context in needed), name


def test_the_marketplace_grant_is_held_to_the_models_product(function_roles):
    """Subscribe is allowed for Cohere Rerank 3.5's product only: not another product, nor a request naming none."""
    api_role = function_roles["api"]
    assert permitted(api_role, "aws-marketplace:Subscribe", "*", {"aws-marketplace:ProductId": ["prod-2o5bej62oxkbi"]})
    assert not permitted(api_role, "aws-marketplace:Subscribe", "*", {"aws-marketplace:ProductId": ["prod-another"]})
    assert not permitted(api_role, "aws-marketplace:Subscribe", "*", {})
    assert not permitted(api_role, "aws-marketplace:Unsubscribe", "*", {})
