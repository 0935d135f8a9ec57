"""The AWS tests' strictness holds the emulation to AWS: S3's 403 for a missing key where the
caller may not list (tests.strict_aws), DynamoDB's key and item sizes and its transactions'
limits, each function's memory and timeout, IAM's evaluation of the synthesized policies
(tests.aws_roles)."""

from __future__ import annotations

import base64

import boto3
import numpy as np
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from citewell.metadata.dynamodb import TABLE_DEFINITION
from tests.aws_roles import permitted
from tests.strict_aws import (
    ITEM_BYTES,
    PARTITION_KEY_BYTES,
    RUNTIME_MB,
    SORT_KEY_BYTES,
    TRANSACTION_ACTIONS,
    FunctionLimits,
    OutOfMemory,
    StrictAws,
    TimedOut,
    Usage,
    dynamodb_problem,
    invocation,
    item_bytes,
    transaction_problem,
)

BUCKET = "strict-test"
READS = {"Effect": "Allow", "Action": ["s3:GetObject", "s3:DeleteObject"], "Resource": f"arn:aws:s3:::{BUCKET}/*"}
ROLES = {
    "reader": [{"Statement": [READS]}],
    "lister": [{"Statement": [READS, {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{BUCKET}"}]}],
    "prefixed": [{"Statement": [READS, {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{BUCKET}",
                                        "Condition": {"StringLike": {"s3:prefix": ["raw/*"]}}}]}],
}


@pytest.fixture
def strict(monkeypatch):
    """A session whose calls are made as ``caller[0]``, S3 and DynamoDB on moto, answering strictly."""
    for name, value in {"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}.items():
        monkeypatch.setenv(name, value)
    caller = ["test"]
    with mock_aws():
        session = boto3.session.Session()
        StrictAws(ROLES, lambda: caller[0], boto3.session.Session().client("s3")).install(session.events)
        s3 = session.client("s3")
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_object(Bucket=BUCKET, Key="raw/there", Body=b"x")
        table = session.resource("dynamodb").create_table(TableName="strict", **TABLE_DEFINITION)
        yield caller, s3, table


def code(call) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(ClientError) as raised:
        call()
    return str(raised.value.response["Error"]["Code"])


def test_a_missing_key_is_403_unless_the_caller_may_list_the_bucket(strict):
    caller, s3, _ = strict
    get = lambda: s3.get_object(Bucket=BUCKET, Key="raw/absent")  # noqa: E731
    head = lambda: s3.head_object(Bucket=BUCKET, Key="raw/absent")  # noqa: E731
    for name, got, headed in [("reader", "AccessDenied", "403"), ("prefixed", "AccessDenied", "403"),
                              ("lister", "NoSuchKey", "404"), ("test", "NoSuchKey", "404")]:
        caller[0] = name
        assert (code(get), code(head)) == (got, headed), name
        assert s3.get_object(Bucket=BUCKET, Key="raw/there")["Body"].read() == b"x"  # what is there is read either way
        assert s3.delete_object(Bucket=BUCKET, Key="raw/absent")["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_a_removed_version_is_403_unless_the_caller_may_list_the_bucket(strict):
    caller, s3, _ = strict
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    version = s3.put_object(Bucket=BUCKET, Key="raw/v", Body=b"1")["VersionId"]
    s3.put_object(Bucket=BUCKET, Key="raw/v", Body=b"2")
    s3.delete_object(Bucket=BUCKET, Key="raw/v", VersionId=version)
    caller[0] = "reader"
    assert code(lambda: s3.get_object(Bucket=BUCKET, Key="raw/v", VersionId=version)) == "AccessDenied"
    caller[0] = "lister"
    assert code(lambda: s3.get_object(Bucket=BUCKET, Key="raw/v", VersionId=version)) in ("NoSuchVersion", "404")


def test_dynamodb_keys_are_held_to_their_limits_in_every_request(strict):
    _, _, table = strict
    longest, over = "s" * SORT_KEY_BYTES, "s" * (SORT_KEY_BYTES + 1)
    table.put_item(Item={"pk": "p", "sk": longest})
    assert table.get_item(Key={"pk": "p", "sk": longest})["Item"]["sk"] == longest
    for call in (lambda: table.get_item(Key={"pk": "p", "sk": over}), lambda: table.delete_item(Key={"pk": "p", "sk": over}),
                 lambda: table.put_item(Item={"pk": "p", "sk": over}),
                 lambda: table.put_item(Item={"pk": "p" * (PARTITION_KEY_BYTES + 1), "sk": "s"})):
        assert code(call) == "ValidationException"
    with pytest.raises(ClientError, match="range keys"), table.batch_writer() as batch:
        batch.delete_item(Key={"pk": "p", "sk": "é" * (SORT_KEY_BYTES // 2 + 1)})  # bytes are counted, not characters


def test_a_dynamodb_item_over_400_kb_is_refused(strict):
    _, _, table = strict
    assert item_bytes({"pk": {"S": "p"}, "sk": {"S": "s"}, "blob": {"B": "eA=="}}) == (2 + 1) + (2 + 1) + (4 + 1)

    def put(size: int) -> dict:  # an item of ``size`` bytes, as the request carries it
        return {"Item": {"pk": {"S": "p"}, "sk": {"S": "s"}, "blob": {"B": base64.b64encode(b"x" * (size - 10)).decode()}}}

    assert dynamodb_problem("PutItem", put(ITEM_BYTES)) is None
    assert dynamodb_problem("PutItem", put(ITEM_BYTES + 1)) == "Item size has exceeded the maximum allowed size"
    writes = {"RequestItems": {"t": [{"PutRequest": put(ITEM_BYTES + 1)}]}}
    assert dynamodb_problem("BatchWriteItem", writes) == "Item size has exceeded the maximum allowed size"
    # moto refuses from 405,000 bytes (under AWS's 409,600): stricter still, never kinder
    assert code(lambda: table.put_item(Item={"pk": "p", "sk": "s", "blob": b"x" * (ITEM_BYTES - 9)})) == "ValidationException"


def test_policies_are_evaluated_as_iam_does():
    bucket = "arn:aws:s3:::b"
    allow = {"Effect": "Allow", "Action": "s3:List*", "Resource": bucket}
    deny = {"Effect": "Deny", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::?"}
    assert permitted([{"Statement": [allow]}], "s3:listbucket", bucket)  # actions match case-insensitively
    assert not permitted([{"Statement": [allow]}, {"Statement": deny}], "s3:ListBucket", bucket)  # a Deny wins
    assert not permitted([{"Statement": [allow]}], "s3:GetObject", f"{bucket}/k")  # nothing allows it
    scoped = {**allow, "Condition": {"StringLike": {"s3:prefix": "raw/*"}}}
    assert permitted([{"Statement": [scoped]}], "s3:ListBucket", bucket, {"s3:prefix": "raw/t/"})
    assert not permitted([{"Statement": [scoped]}], "s3:ListBucket", bucket, {"s3:prefix": "parsed/"})
    assert not permitted([{"Statement": [scoped]}], "s3:ListBucket", bucket)  # an absent key matches nothing
    unknown = {**allow, "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}
    with pytest.raises(AssertionError, match="IpAddress"):
        permitted([{"Statement": [unknown]}], "s3:ListBucket", bucket)


# -- DynamoDB transactions ------------------------------------------------------------------


def test_a_transaction_is_held_to_100_actions_4_mb_and_one_action_an_item(strict):
    _, _, table = strict
    client = table.meta.client

    def put(n: int, blob: int = 10) -> dict:
        return {"Put": {"TableName": "strict", "Item": {"pk": "p", "sk": f"s{n}", "blob": b"x" * blob}}}

    client.transact_write_items(TransactItems=[put(n) for n in range(TRANSACTION_ACTIONS)])
    with pytest.raises(ClientError, match="less than or equal to 100"):
        client.transact_write_items(TransactItems=[put(n) for n in range(TRANSACTION_ACTIONS + 1)])
    big = ITEM_BYTES - 100  # each item fits; eleven of them are over 4 MB, which moto lets through
    with pytest.raises(ClientError, match="larger than 4 MB"):
        client.transact_write_items(TransactItems=[put(n, big) for n in range(11)])
    assert len(table.get_item(Key={"pk": "p", "sk": "s10"})["Item"]["blob"].value) == 10  # nothing of it was written
    check = {"ConditionCheck": {"TableName": "strict", "Key": {"pk": "p", "sk": "s1"},
                                "ConditionExpression": "attribute_exists(pk)"}}
    with pytest.raises(ClientError, match="multiple operations on one item"):
        client.transact_write_items(TransactItems=[check, put(1)])
    assert transaction_problem("TransactWriteItems", {"TransactItems": [
        {"Delete": {"TableName": "strict", "Key": {"pk": {"S": "p"}, "sk": {"S": "a"}}}},
        {"Delete": {"TableName": "strict", "Key": {"pk": {"S": "p"}, "sk": {"S": "b"}}}}]}) is None
    assert transaction_problem("PutItem", {"Item": {}}) is None


# -- Lambda: a function's memory and timeout ------------------------------------------------


def test_a_function_past_its_memory_is_ended_as_lambda_ends_it():
    limits = FunctionLimits(memory_mb=RUNTIME_MB + 64, timeout_s=60)

    def allocating(mb: int, fail: bool = False):  # type: ignore[no-untyped-def]
        def handler(event, context):  # type: ignore[no-untyped-def]
            held = np.ones(mb * 1024 * 1024, dtype=np.uint8)
            if fail:
                raise ValueError("the handler's own error")
            return {"held": int(held[-1])}
        return handler

    usage = Usage()
    assert invocation(allocating(32), {}, None, limits, usage) == {"held": 1}
    assert RUNTIME_MB + 32 <= usage.memory_mb < RUNTIME_MB + 40
    with pytest.raises(OutOfMemory, match=f"of {RUNTIME_MB + 64} MB"):
        invocation(allocating(96), {}, None, limits, usage)
    assert usage.memory_mb >= RUNTIME_MB + 96
    with pytest.raises(OutOfMemory):  # Lambda reports the limit, not what the handler raised meanwhile
        invocation(allocating(96, fail=True), {}, None, limits)
    with pytest.raises(ValueError, match="own error"):  # within it, the handler's error is what it is
        invocation(allocating(8, fail=True), {}, None, limits)
    assert invocation(allocating(96), {}, None) == {"held": 1}  # no limits given: not measured


def test_a_function_past_its_timeout_is_ended_on_the_clock_it_runs_on():
    now = [0.0]

    def waiting(seconds: float):  # type: ignore[no-untyped-def]
        def handler(event, context):  # type: ignore[no-untyped-def]
            now[0] += seconds  # a simulated wait: the test's clock moves, not the machine's
            return {}
        return handler

    limits, usage = FunctionLimits(memory_mb=1024, timeout_s=30), Usage()
    assert invocation(waiting(29.5), {}, None, limits, usage, clock=lambda: now[0]) == {} and usage.seconds == 29.5
    with pytest.raises(TimedOut, match="Task timed out after 30.00 seconds"):
        invocation(waiting(30.5), {}, None, limits, clock=lambda: now[0])


def test_each_function_is_held_to_the_memory_and_timeout_the_stack_gives_it(function_limits):
    assert function_limits["publish"] == FunctionLimits(memory_mb=1024, timeout_s=300)
    assert function_limits["embed"] == FunctionLimits(memory_mb=1024, timeout_s=900)
    assert function_limits["api"].timeout_s == 30 and function_limits["fetch"].memory_mb == 512
    assert {"parse", "chunk", "embed", "publish", "delete", "api", "fetch", "audit"} <= set(function_limits)
