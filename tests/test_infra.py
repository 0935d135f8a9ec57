"""The CDK app, synthesized offline and checked with aws_cdk.assertions."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
cdk = pytest.importorskip("aws_cdk")
from aws_cdk.assertions import Match, Template  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "infra"))
from stacks.citewell import CitewellStack, StackConfig  # noqa: E402


def synth(tmp_path_factory, search: str) -> Template:
    layer = tmp_path_factory.mktemp("layer")
    (layer / "python").mkdir()
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    stack = CitewellStack(app, "Citewell", config=StackConfig(search=search, layer_path=str(layer)))
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Template:
    return synth(tmp_path_factory, "domain")


def test_storage_is_encrypted_versioned_private_and_tls_only(template):
    template.has_resource_properties("AWS::S3::Bucket", {
        "VersioningConfiguration": {"Status": "Enabled"},
        "BucketEncryption": {"ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
    })
    template.has_resource_properties("AWS::S3::BucketPolicy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})])}})
    template.has_resource_properties("AWS::DynamoDB::Table", {
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
        "GlobalSecondaryIndexes": [Match.object_like({"IndexName": "by_hash"})],
    })


def test_search_domain_has_fine_grained_access_control(template):
    template.has_resource_properties("AWS::OpenSearchService::Domain", {
        "AdvancedSecurityOptions": Match.object_like({"Enabled": True}),
        "EncryptionAtRestOptions": {"Enabled": True},
        "NodeToNodeEncryptionOptions": {"Enabled": True},
        "DomainEndpointOptions": Match.object_like({"EnforceHTTPS": True}),
    })


def test_serverless_collection_by_context_flag(tmp_path_factory):
    serverless = synth(tmp_path_factory, "serverless")
    serverless.resource_count_is("AWS::OpenSearchService::Domain", 0)
    serverless.has_resource_properties("AWS::OpenSearchServerless::Collection", {"Type": "VECTORSEARCH"})
    serverless.resource_count_is("AWS::OpenSearchServerless::SecurityPolicy", 2)
    serverless.resource_count_is("AWS::OpenSearchServerless::AccessPolicy", 1)


def test_every_stage_is_wired_s3_to_sqs_to_lambda_with_a_dead_letter_queue(template):
    queues = template.find_resources("AWS::SQS::Queue")
    inboxes = [q for q in queues.values() if "RedrivePolicy" in q["Properties"]]
    assert len(inboxes) == 5 and all(q["Properties"]["RedrivePolicy"]["maxReceiveCount"] == 5 for q in inboxes)
    mappings = template.find_resources("AWS::Lambda::EventSourceMapping")
    assert len(mappings) == 5
    assert all(m["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in mappings.values())
    (notifications,) = template.find_resources("Custom::S3BucketNotifications").values()
    configs = notifications["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    wired = sorted((c["Events"][0], c["Filter"]["Key"]["FilterRules"][0]["Value"]) for c in configs)
    assert wired == [("s3:ObjectCreated:*", p) for p in ("chunks/", "embedded/", "parsed/", "raw/")] + [("s3:ObjectRemoved:*", "raw/")]


def test_every_route_needs_the_jwt_authorizer(template):
    routes = template.find_resources("AWS::ApiGatewayV2::Route")
    keys = sorted(r["Properties"]["RouteKey"] for r in routes.values())
    assert keys == sorted(["POST /documents", "GET /documents", "GET /documents/{id+}", "DELETE /documents/{id+}",
                           "POST /search", "POST /query", "GET /answers/{id}/citations"])
    assert all(r["Properties"]["AuthorizationType"] == "JWT" for r in routes.values())
    template.has_resource_properties("AWS::ApiGatewayV2::Authorizer", {"AuthorizerType": "JWT"})


def test_audit_schedule_and_alarms(template):
    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(6 hours)"})
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    dead_letter = [a for a in alarms.values() if a["Properties"]["MetricName"] == "ApproximateNumberOfMessagesVisible"]
    errors = [a for a in alarms.values() if a["Properties"]["MetricName"] == "Errors"]
    assert len(dead_letter) == 5 and len(errors) == 7


def test_no_function_may_do_everything_everywhere(template):
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            assert not ("*" in actions and "*" in resources), statement
            assert not any(a.endswith(":*") for a in actions) or "*" not in resources, statement
