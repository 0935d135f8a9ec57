"""Every function's calls are allowed by the role the stack synthesizes for it, and it is
granted nothing it does not call.

The chain runs a full life (upload through the presigned POST, publish, search, answer, a
replacement, a delete through the API, a removal from S3, the audit) while every boto3 call
and every OpenSearch request is recorded with the function that made it. Each call is then
turned into the IAM action and resource AWS checks for it, and evaluated against that
function's policies from the synthesized template (CloudFormation references resolved to
the test's bucket, table and domain) with moto's IAM policy evaluator."""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.test_aws_chain import (  # noqa: F401
    EVENTS, HANDBOOK, LambdaContext, api, aws, knn_proxy, load_handler, pump, removal_event, resend, sqs_event, upload,
)

os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
cdk = pytest.importorskip("aws_cdk")

ROOT = Path(__file__).resolve().parents[1]
REGION, ACCOUNT = "eu-west-1", "123456789012"
BUCKET, TABLE, DOMAIN = "citewell-documents", "citewell-metadata", "citewell-search"
BUCKET_ARN = f"arn:aws:s3:::{BUCKET}"
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}"
DOMAIN_ARN = f"arn:aws:es:{REGION}:{ACCOUNT}:domain/{DOMAIN}"
FUNCTIONS = ("parse", "chunk", "embed", "publish", "delete", "api", "audit")
# What the Lambda service itself does with a function's role (poll its queue, send traces, write
# logs): granted by the stack for the platform, never called by our code.
PLATFORM = {"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage",
            "sqs:GetQueueAttributes", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
# Granted for paths this life does not walk, each with the reason. The test embeds with the
# packaged model, so Bedrock is checked in test_infra (granted only where configured).
BEDROCK = {"bedrock:InvokeModel"}
UNWALKED = {
    "audit": BEDROCK | {
        "s3:PutObject", "s3:DeleteObjectVersion", "s3:ListBucketVersions",  # a repair re-runs a stage or purges objects
        "s3:AbortMultipartUpload",  # a repair aborts an unfinished multipart upload
        "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
        "dynamodb:BatchWriteItem",  # repairs change records
        "es:ESHttpPut",  # a repair re-publishes into a missing index
    },
    "api": BEDROCK | {"s3:AbortMultipartUpload"},  # a delete aborts an unfinished multipart upload of the document
    "delete": {"s3:AbortMultipartUpload"},
    "embed": BEDROCK, "publish": set(), "parse": set(), "chunk": set(),
}


# -- the synthesized roles -------------------------------------------------------------


def synthesize(tmp: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "infra"))
    from stacks.citewell import CitewellStack, StackConfig

    layer = tmp / "layer"
    (layer / "python" / "citewell").mkdir(parents=True)
    (layer / "python" / "citewell" / "__init__.py").write_text("")
    app = cdk.App(outdir=str(tmp / "cdk.out"))
    stack = CitewellStack(app, "Citewell", config=StackConfig(layer_path=str(layer)))
    return cdk.assertions.Template.from_stack(stack).to_json()


def names(template: dict[str, Any]) -> dict[str, str]:
    """What each Ref and GetAtt of the template stands for in this test's account."""
    found = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
    for logical, resource in template["Resources"].items():
        kind = resource["Type"]
        if kind == "AWS::S3::Bucket":
            found |= {logical: BUCKET, f"{logical}.Arn": BUCKET_ARN}
        elif kind == "AWS::DynamoDB::Table":
            found |= {logical: TABLE, f"{logical}.Arn": TABLE_ARN}
        elif kind == "AWS::OpenSearchService::Domain":
            found |= {logical: DOMAIN, f"{logical}.Arn": DOMAIN_ARN, f"{logical}.DomainArn": DOMAIN_ARN}
        else:
            found |= {logical: f"<{logical}>", f"{logical}.Arn": f"arn:aws:unknown:{REGION}:{ACCOUNT}:{logical}"}
    return found


def resolve(value: Any, known: dict[str, str]) -> Any:
    if isinstance(value, list):
        return [resolve(v, known) for v in value]
    if not isinstance(value, dict):
        return value
    if "Ref" in value:
        return known[value["Ref"]]
    if "Fn::GetAtt" in value:
        return known[".".join(value["Fn::GetAtt"])]
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolve(p, known)) for p in parts)
    return {k: resolve(v, known) for k, v in value.items()}


def roles(template: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each function's policy documents, resolved."""
    known = names(template)
    resources = template["Resources"]
    role_of = {}
    for resource in resources.values():
        if resource["Type"] == "AWS::Lambda::Function":
            service = resource["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME", "")
            if service.startswith("citewell-"):
                role_of[service.removeprefix("citewell-")] = resource["Properties"]["Role"]["Fn::GetAtt"][0]
    documents: dict[str, list[dict[str, Any]]] = {name: [] for name in role_of}
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        attached = {r["Ref"] for r in resource["Properties"]["Roles"]}
        for name, role in role_of.items():
            if role in attached:
                documents[name].append(resolve(resource["Properties"]["PolicyDocument"], known))
    return documents


def granted_actions(documents: list[dict[str, Any]]) -> set[str]:
    actions = set()
    for document in documents:
        for statement in document["Statement"]:
            given = statement["Action"]
            actions |= set(given if isinstance(given, list) else [given])
    return actions


def permitted(documents: list[dict[str, Any]], action: str, resource: str) -> bool:
    from moto.iam.access_control import IAMPolicy, PermissionResult

    results = [IAMPolicy(json.dumps(d)).is_action_permitted(action, resource) for d in documents]
    return PermissionResult.DENIED not in results and PermissionResult.PERMITTED in results


# -- the calls, as IAM sees them -------------------------------------------------------


def needs(service: str, operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    """The (action, resource) pairs AWS authorizes for one API call."""
    if service == "s3" and operation == "CreateBucket" and params["caller"] == "api":
        return []  # botocore resolves a presigned POST's endpoint through this operation; nothing is sent
    if service == "s3":
        bucket = f"arn:aws:s3:::{params['Bucket']}"
        obj = f"{bucket}/{params.get('Key')}"
        if operation in ("GetObject", "HeadObject"):
            return [("s3:GetObjectVersion" if params.get("VersionId") else "s3:GetObject", obj)]
        if operation == "PutObject":
            return [("s3:PutObject", obj)]
        if operation == "DeleteObject":
            return [("s3:DeleteObjectVersion" if params.get("VersionId") else "s3:DeleteObject", obj)]
        if operation == "DeleteObjects":
            return [("s3:DeleteObjectVersion" if o.get("VersionId") else "s3:DeleteObject", f"{bucket}/{o['Key']}")
                    for o in params["Delete"]["Objects"]]
        lists = {"ListObjectVersions": "s3:ListBucketVersions", "ListObjectsV2": "s3:ListBucket",
                 "ListMultipartUploads": "s3:ListBucketMultipartUploads"}
        if operation in lists:
            return [(lists[operation], bucket)]
        if operation == "AbortMultipartUpload":
            return [("s3:AbortMultipartUpload", obj)]
    if service == "dynamodb":
        if operation in ("BatchGetItem", "BatchWriteItem"):
            return [(f"dynamodb:{operation}", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{t}") for t in params["RequestItems"]]
        if operation == "TransactWriteItems":  # authorised item by item, each as its own action
            actions = {"ConditionCheck": "ConditionCheckItem", "Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}
            return [(f"dynamodb:{actions[kind]}", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{body['TableName']}")
                    for item in params["TransactItems"] for kind, body in item.items()]
        table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{params['TableName']}"
        return [(f"dynamodb:{operation}", f"{table}/index/{params['IndexName']}" if params.get("IndexName") else table)]
    if service == "es":  # an HTTP request to the domain: (method, path)
        return [(f"es:ESHttp{operation.capitalize()}", f"{DOMAIN_ARN}{params['path']}")]
    if service == "bedrock-runtime":
        return [("bedrock:InvokeModel", f"arn:aws:bedrock:{REGION}::foundation-model/{params['modelId']}")]
    raise AssertionError(f"no IAM mapping for {service}.{operation} ({params}): add it here")


def step(aws, prefix: str) -> None:
    """Deliver what one stage's queue holds now, and only that."""
    url = aws["queues"][prefix]
    while messages := aws["sqs"].receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        assert aws["handlers"][prefix](sqs_event(messages), LambdaContext()) == {"batchItemFailures": []}
        for message in messages:
            aws["sqs"].delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def superseded_at(aws, document_id: str, stages: list[str]) -> None:
    """An upload goes through ``stages``; then a newer upload of the document makes it stale."""
    upload(aws, document_id, b"# Notice\n\nThe gate closes at nine.\n")
    for prefix in stages:
        step(aws, prefix)
    upload(aws, document_id, b"# Notice\n\nThe gate closes at ten.\n")
    pump(aws)


def life(aws) -> None:
    """Everything each function does in a document's life."""
    upload(aws, "scan.pdf", b"this is not a pdf")  # a typed failure is recorded
    pump(aws)
    for n, stages in enumerate([[], ["raw/"], ["raw/", "parsed/"], ["raw/", "parsed/", "chunks/"]]):
        superseded_at(aws, f"notice-{n}.md", stages)  # each stage meets a stale upload
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    upload(aws, "handbook.md", HANDBOOK)  # the same text again: unchanged
    pump(aws)
    assert api("POST", "/search", {"question": "annual leave days"})[0] == 200
    status, answer = api("POST", "/query", {"question": "How many days of paid annual leave do full-time staff receive?"})
    assert status == 200
    assert api("GET", f"/answers/{answer['answer_id']}/citations")[0] == 200
    assert api("GET", "/documents")[0] == 200 and api("GET", "/documents/handbook.md")[0] == 200
    replaced = upload(aws, "handbook.md", HANDBOOK.replace(b"27 days", b"28 days"))  # a replacement purges the old revision
    pump(aws)
    resend(aws, replaced, HANDBOOK)  # a replayed form: parse refuses it and removes its version
    pump(aws)
    assert api("DELETE", "/documents/handbook.md")[0] == 200
    resend(aws, replaced, HANDBOOK)  # and after the delete: parse removes what has no upload
    pump(aws)
    key = upload(aws, "guide.md", HANDBOOK)
    pump(aws)
    aws["s3"].delete_object(Bucket=BUCKET, Key=key)
    assert load_handler("delete")(removal_event(key), LambdaContext()) == {"batchItemFailures": []}
    audit = load_handler("audit")(json.loads((EVENTS / "schedule.json").read_text()), LambdaContext())
    assert audit["ok"], audit


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> dict[str, list[dict[str, Any]]]:
    return roles(synthesize(tmp_path_factory.mktemp("synth")))


def test_each_function_may_make_every_call_it_makes_and_no_other(aws, synthesized):
    aws["calls"].containers = True
    life(aws)
    calls = [(caller, service, op, params) for caller, service, op, params in aws["calls"].made if caller != "test"]
    calls += [(caller, "es", method, {"path": path}) for caller, method, path in aws["proxy"].calls if caller != "test"]
    assert {caller for caller, *_ in calls} == set(FUNCTIONS)
    assert set(synthesized) == set(FUNCTIONS)
    refused, used = [], defaultdict(set)
    for caller, service, operation, params in calls:
        for action, resource in needs(service, operation, {**params, "caller": caller}):
            used[caller].add(action)
            if not permitted(synthesized[caller], action, resource):
                refused.append(f"{caller}: {action} on {resource}")
    assert not refused, "refused by the synthesized role:\n" + "\n".join(sorted(set(refused)))
    extra = {name: sorted(granted_actions(synthesized[name]) - used[name] - PLATFORM - UNWALKED[name]) for name in FUNCTIONS}
    assert not any(extra.values()), f"granted but never called: {extra}; called: { {n: sorted(u) for n, u in used.items()} }"
