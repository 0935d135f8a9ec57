"""The roles the stack synthesizes for its functions, and IAM's answer to one call under them.

The CDK app is synthesized once (CloudFormation references resolved to the tests' bucket,
table and domain), each function's policy documents are read off the template, and a call is
turned into the action and resource AWS authorizes for it (:func:`needs`). Evaluation follows
IAM's rules for identity policies (an explicit Deny wins, else an Allow must match action,
resource and every condition), with a small evaluator of its own: moto's ignores condition
operators it does not know and takes a condition that fails for a Deny. An operator this one
does not know fails the test instead of being guessed.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
REGION, ACCOUNT = "eu-west-1", "123456789012"
BUCKET, TABLE, DOMAIN = "citewell-documents", "citewell-metadata", "citewell-search"
BUCKET_ARN = f"arn:aws:s3:::{BUCKET}"
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}"
DOMAIN_ARN = f"arn:aws:es:{REGION}:{ACCOUNT}:domain/{DOMAIN}"
# Textract's completion topic and the role it publishes there with, as the tests name them
TEXTRACT_TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:citewell-textract-done"
TEXTRACT_ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/citewell-textract"

Policies = list[dict[str, Any]]


# -- the synthesized roles -------------------------------------------------------------


def synthesize(tmp: Path, **config: Any) -> dict[str, Any]:
    """The stack's CloudFormation template (the layer is an empty stand-in: only roles are read),
    with ``config`` over the defaults (``reranker="bedrock"``, say)."""
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    import aws_cdk as cdk

    if str(ROOT / "infra") not in sys.path:
        sys.path.insert(0, str(ROOT / "infra"))
    from stacks.citewell import CitewellStack
    from stacks.config import StackConfig

    layer = tmp / "layer"
    (layer / "python" / "citewell").mkdir(parents=True)
    (layer / "python" / "citewell" / "__init__.py").write_text("")
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    flags = {name: value for name, value in context.items() if name.startswith("@aws-cdk")}  # as `cdk deploy` synthesizes
    app = cdk.App(outdir=str(tmp / "cdk.out"), context=flags)
    stack = CitewellStack(app, "Citewell", config=StackConfig(layer_path=str(layer), **config))
    return cdk.assertions.Template.from_stack(stack).to_json()  # type: ignore[no-any-return]


def names(template: dict[str, Any]) -> dict[str, str]:
    """What each Ref and GetAtt of the template stands for in the tests' account."""
    found = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
    for logical, resource in template["Resources"].items():
        kind = resource["Type"]
        if kind == "AWS::S3::Bucket":
            found |= {logical: BUCKET, f"{logical}.Arn": BUCKET_ARN}
        elif kind == "AWS::DynamoDB::Table":
            found |= {logical: TABLE, f"{logical}.Arn": TABLE_ARN}
        elif kind == "AWS::OpenSearchService::Domain":
            found |= {logical: DOMAIN, f"{logical}.Arn": DOMAIN_ARN, f"{logical}.DomainArn": DOMAIN_ARN}
        elif kind == "AWS::SQS::Queue" and (queue := re.fullmatch(r"Functions([A-Z][a-z]+)(Queue|Dlq)[0-9A-F]{8}", logical)):
            name = f"citewell-{queue.group(1).lower()}" + ("-dlq" if queue.group(2) == "Dlq" else "")  # as the tests name them
            found |= {logical: f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}",
                      f"{logical}.Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}", f"{logical}.QueueName": name}
        elif kind == "AWS::SNS::Topic" and re.fullmatch(r"FunctionsTextractDone[0-9A-F]{8}", logical):
            found |= {logical: TEXTRACT_TOPIC_ARN}  # a topic's Ref is its ARN
        elif kind == "AWS::IAM::Role" and re.fullmatch(r"FunctionsTextractPublisher[0-9A-F]{8}", logical):
            found |= {logical: "citewell-textract", f"{logical}.Arn": TEXTRACT_ROLE_ARN}
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


def roles(template: dict[str, Any]) -> dict[str, Policies]:
    """Each function's policy documents, resolved, by function name (``parse``, ``api`` ...)."""
    known = names(template)
    resources = template["Resources"]
    role_of = {}
    for resource in resources.values():
        if resource["Type"] == "AWS::Lambda::Function":
            service = resource["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME", "")
            if service.startswith("citewell-"):
                role_of[service.removeprefix("citewell-")] = resource["Properties"]["Role"]["Fn::GetAtt"][0]
    documents: dict[str, Policies] = {name: [] for name in role_of}
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        attached = {r["Ref"] for r in resource["Properties"]["Roles"]}
        for name, role in role_of.items():
            if role in attached:
                documents[name].append(resolve(resource["Properties"]["PolicyDocument"], known))
    return documents


def granted_actions(documents: Policies) -> set[str]:
    actions = set()
    for document in documents:
        for statement in document["Statement"]:
            given = statement["Action"]
            actions |= set(given if isinstance(given, list) else [given])
    return actions


# -- IAM's evaluation ------------------------------------------------------------------


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _like(pattern: str, value: str, case: bool = True) -> bool:
    """IAM's wildcards: ``*`` any run of characters (``/`` and ``:`` too), ``?`` one character."""
    expression = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(expression, value, 0 if case else re.IGNORECASE) is not None


_OPERATORS = {
    "StringEquals": lambda expected, actual: actual == expected,
    "StringLike": lambda expected, actual: _like(expected, actual),
    "ArnEquals": lambda expected, actual: actual == expected,
    "ArnLike": lambda expected, actual: _like(expected, actual),
    "Bool": lambda expected, actual: str(actual).lower() == str(expected).lower(),
}


def _condition_holds(operator: str, key: str, expected: Any, context: dict[str, Any]) -> bool:
    if operator.startswith("ForAllValues:"):
        raise AssertionError(f"condition operator {operator} is not evaluated here: add it to tests/aws_roles.py")
    if operator.startswith("ForAnyValue:"):  # a multivalued key: some value in the request matches; an absent key, none
        if key not in context:
            return False
        values = context[key] if isinstance(context[key], list) else [context[key]]
        return any(_condition_holds(operator.removeprefix("ForAnyValue:"), key, expected, {key: v}) for v in values)
    if_exists = operator.endswith("IfExists")
    base = operator.removesuffix("IfExists")
    negated = base.replace("Not", "", 1) if base.startswith(("StringNot", "ArnNot")) else None
    test = _OPERATORS.get(negated or base)
    if test is None:
        raise AssertionError(f"condition operator {operator} is not evaluated here: add it to tests/aws_roles.py")
    if key not in context:  # an absent key matches nothing; a negated operator then holds
        return if_exists or negated is not None
    matched = any(test(str(e), context[key]) for e in _listed(expected))
    return not matched if negated else matched


def _applies(statement: dict[str, Any], action: str, resource: str, context: dict[str, Any]) -> bool:
    if "NotAction" in statement:
        if any(_like(a, action, case=False) for a in _listed(statement["NotAction"])):
            return False
    elif not any(_like(a, action, case=False) for a in _listed(statement["Action"])):
        return False
    if "NotResource" in statement:
        if any(_like(r, resource) for r in _listed(statement["NotResource"])):
            return False
    elif not any(_like(r, resource) for r in _listed(statement.get("Resource", []))):
        return False
    return all(_condition_holds(operator, key, expected, context)
               for operator, keys in statement.get("Condition", {}).items() for key, expected in keys.items())


def permitted(documents: Policies, action: str, resource: str, context: dict[str, Any] | None = None) -> bool:
    """Whether identity policies ``documents`` let ``action`` on ``resource`` through, the request
    carrying the condition keys ``context`` (``s3:prefix`` of a listing, say)."""
    statements = [s for d in documents for s in _listed(d["Statement"])]
    matching = [s for s in statements if _applies(s, action, resource, context or {})]
    return bool(matching) and all(s["Effect"] == "Allow" for s in matching)


# -- the calls, as IAM sees them -------------------------------------------------------


def needs(service: str, operation: str, params: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The (action, resource, condition keys) AWS authorizes for one API call made by ``params['caller']``.

    A read of a key S3 found absent (``params['absent']``) also asked for ``s3:ListBucket``:
    S3 answers it with 404 only to a caller allowed to list the bucket (and the request carries
    no ``s3:prefix`` for that check)."""
    if service == "s3" and operation == "CreateBucket" and params["caller"] == "api":
        return []  # botocore resolves a presigned POST's endpoint through this operation; nothing is sent
    if service == "s3":
        bucket = f"arn:aws:s3:::{params['Bucket']}"
        obj = f"{bucket}/{params.get('Key')}"
        if operation in ("GetObject", "HeadObject"):
            read = [("s3:GetObjectVersion" if params.get("VersionId") else "s3:GetObject", obj, {})]
            return read + ([("s3:ListBucket", bucket, {})] if params.get("absent") else [])
        if operation == "PutObject":
            return [("s3:PutObject", obj, {})]
        if operation == "CopyObject":  # a write of the new key and a read of the source, which the request names
            source = params["CopySource"]  # as given, or as botocore writes it: "bucket/key[?versionId=v]", quoted
            if isinstance(source, str):
                path, _, version = unquote(source).lstrip("/").partition("?versionId=")
                source = {"Bucket": path.split("/", 1)[0], "Key": path.split("/", 1)[1], "VersionId": version}
            named = f"{source['Bucket']}/{source['Key']}"
            read = "s3:GetObjectVersion" if source.get("VersionId") else "s3:GetObject"
            return [("s3:PutObject", obj, {"s3:x-amz-copy-source": named}), (read, f"arn:aws:s3:::{named}", {})]
        if operation == "DeleteObject":
            return [("s3:DeleteObjectVersion" if params.get("VersionId") else "s3:DeleteObject", obj, {})]
        if operation == "DeleteObjects":
            return [("s3:DeleteObjectVersion" if o.get("VersionId") else "s3:DeleteObject", f"{bucket}/{o['Key']}", {})
                    for o in params["Delete"]["Objects"]]
        lists = {"ListObjectVersions": "s3:ListBucketVersions", "ListObjectsV2": "s3:ListBucket",
                 "ListMultipartUploads": "s3:ListBucketMultipartUploads"}
        if operation in lists:
            return [(lists[operation], bucket, {"s3:prefix": params["Prefix"]} if "Prefix" in params else {})]
        if operation == "AbortMultipartUpload":
            return [("s3:AbortMultipartUpload", obj, {})]
    if service == "dynamodb":
        if operation in ("BatchGetItem", "BatchWriteItem"):
            return [(f"dynamodb:{operation}", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{t}", {}) for t in params["RequestItems"]]
        if operation == "TransactWriteItems":  # authorised item by item, each as its own action
            actions = {"ConditionCheck": "ConditionCheckItem", "Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}
            return [(f"dynamodb:{actions[kind]}", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{body['TableName']}", {})
                    for item in params["TransactItems"] for kind, body in item.items()]
        table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{params['TableName']}"
        return [(f"dynamodb:{operation}", f"{table}/index/{params['IndexName']}" if params.get("IndexName") else table, {})]
    if service == "es":  # an HTTP request to the domain: (method, path)
        return [(f"es:ESHttp{operation.capitalize()}", f"{DOMAIN_ARN}{params['path']}", {})]
    if service == "textract" and operation == "StartDocumentTextDetection":
        # Textract reads the object as the caller, and publishes the completion as the role it is passed
        obj = params["DocumentLocation"]["S3Object"]
        read = ("s3:GetObjectVersion" if obj.get("Version") else "s3:GetObject", f"arn:aws:s3:::{obj['Bucket']}/{obj['Name']}", {})
        passed = [("iam:PassRole", params["NotificationChannel"]["RoleArn"], {"iam:PassedToService": "textract.amazonaws.com"})
                  ] if "NotificationChannel" in params else []
        return [(f"textract:{operation}", "*", {}), read, *passed]
    if service == "textract":  # Textract's actions take no resource: "*" is the only one IAM accepts
        return [(f"textract:{operation}", "*", {})]
    if service == "sqs" and operation in ("SendMessage", "SendMessageBatch"):  # the queue's URL is https://sqs.<region>.amazonaws.com/<account>/<name>
        region, account, name = re.fullmatch(r"https://sqs\.([a-z0-9-]+)\.amazonaws\.com/(\d+)/([\w-]+)", params["QueueUrl"]).groups()
        return [("sqs:SendMessage", f"arn:aws:sqs:{region}:{account}:{name}", {})]
    if service == "bedrock-runtime":
        return [("bedrock:InvokeModel", f"arn:aws:bedrock:{REGION}::foundation-model/{params['modelId']}", {})]
    if service == "bedrock-agent-runtime" and operation == "Rerank":
        return rerank_needs(params)
    raise AssertionError(f"no IAM mapping for {service}.{operation} ({params}): add it here")


# Reranking models sold through AWS Marketplace, by their Marketplace product id (Bedrock's model
# card for Cohere Rerank 3.5). Amazon's own models are not.
MARKETPLACE_PRODUCTS = {"cohere.rerank-v3-5:0": "prod-2o5bej62oxkbi"}


def rerank_needs(params: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``bedrock:Rerank`` (no resource type: "*") and ``bedrock:InvokeModel`` on the model, as
    "Permissions for reranking in Amazon Bedrock" pairs them; for a Marketplace model also
    ``aws-marketplace:ViewSubscriptions`` and ``aws-marketplace:Subscribe`` of its product, which
    the first call in an account makes under the caller's role (neither has a resource type)."""
    model = params["rerankingConfiguration"]["bedrockRerankingConfiguration"]["modelConfiguration"]["modelArn"]
    needed: list[tuple[str, str, dict[str, Any]]] = [("bedrock:Rerank", "*", {}), ("bedrock:InvokeModel", model, {})]
    if product := MARKETPLACE_PRODUCTS.get(model.rsplit("/", 1)[-1]):
        needed += [("aws-marketplace:ViewSubscriptions", "*", {}),
                   ("aws-marketplace:Subscribe", "*", {"aws-marketplace:ProductId": [product]})]
    return needed


def refusals(synthesized: dict[str, Policies], calls: list[tuple[str, str, str, dict[str, Any]]]) -> list[str]:
    """Each call (``(caller, service, operation, params)``) the caller's synthesized role refuses;
    the test's own calls are the operator's and are not checked."""
    refused = []
    for caller, service, operation, params in calls:
        if caller == "test":
            continue
        for action, resource, context in needs(service, operation, {**params, "caller": caller}):
            if caller not in synthesized or not permitted(synthesized[caller], action, resource, context):
                refused.append(f"{caller}: {action} on {resource}" + (f" with {context}" if context else ""))
    return sorted(set(refused))
