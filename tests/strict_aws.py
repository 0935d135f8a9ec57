"""AWS answering as strictly as AWS where moto is kinder, for the AWS tests that run the functions.

- S3 tells a caller that a key (or a version of it) is not there only if the caller may list
  the bucket: a GetObject or HeadObject of a missing key is a 404 for a role allowed
  ``s3:ListBucket`` on the bucket and a 403 for any other (AccessDenied; a HEAD has no body,
  so a bare 403), so that a role without it learns nothing of what the bucket holds. S3
  documents no ``s3:prefix`` for that check, so a ListBucket limited by prefix is taken not to
  count. A DeleteObject of a missing key is a 204 either way (moto answers so already). The
  test's own calls are the operator's, who may list.
- S3 sends a ranged GetObject's range alone; moto reads the whole object into memory to answer
  one (its ``FakeKey.value``), which would count a large object whole against a function that
  reads it a range at a time: :func:`ranged_read` answers a ranged read from what moto stored,
  reading the range alone, with S3's ``IfMatch`` (412) and unsatisfiable range (416).
- DynamoDB refuses a key over its limits (partition key 2,048 bytes, sort key 1,024) in every
  request that names one, read or write, and an item over 400 KB in every put (moto checks
  key sizes on puts only, and items against a limit of its own).

- DynamoDB refuses a transaction of more than 100 actions, of more than 4 MB, or with two
  actions on one item (moto checks the first and the last, not the size): :func:`transaction_problem`.

- Lambda takes a request payload and returns a response of at most 6 MB (synchronous
  invocations, API Gateway's included; an SQS batch is held to the same): :func:`invocation`
  fails a bigger one as the Lambda service does, so a test that would exceed it fails.
- Lambda ends a function that outgrows its memory or its timeout (the ``MemorySize`` and
  ``Timeout`` the stack synthesizes, :func:`function_limits`): :func:`invocation` given a
  function's :class:`FunctionLimits` measures the call (:func:`limited`) and fails it as Lambda does.

OpenSearch's 512-byte limit on ``_id`` is osmem's own, on bulk and single writes alike
(``tests/test_aws_knn`` holds the stand-in to it).
"""

from __future__ import annotations

import base64
import io
import json
import re
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.response import StreamingBody

from citewell.metadata.dynamodb import TABLE_DEFINITION
from tests.aws_roles import Policies, permitted

PARTITION_KEY_BYTES, SORT_KEY_BYTES, ITEM_BYTES = 2048, 1024, 400 * 1024
_KEY = {k["KeyType"]: k["AttributeName"] for k in TABLE_DEFINITION["KeySchema"]}
PAYLOAD_BYTES = 6_291_556  # Lambda's synchronous payload limit, in bytes, as its errors name it
PARAMS = "citewell.params"  # a call's API parameters, kept in its request context for its before-call
RECORDED = "citewell.recorded"  # the entry a recorder (tests.aws.test_aws_chain.Calls) made of the call
OPERATOR = "test"


class _NoBody:
    def stream(self, **_: object) -> Iterator[bytes]:
        yield b""


def refusal(status: int, code: str, message: str) -> tuple[AWSResponse, dict[str, Any]]:
    """What botocore makes of an error reply, ready for a ``before-call`` handler to return."""
    http = AWSResponse("https://strict.invalid/", status, {}, _NoBody())
    return http, {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}}}


class StrictAws:
    """Installed on a boto3 session's events; ``caller()`` names the function making a call."""

    def __init__(self, roles: dict[str, Policies], caller: Callable[[], str], inspector: Any) -> None:
        self.roles = roles
        self.caller = caller
        self.inspector = inspector  # an S3 client whose calls nobody records: what the bucket holds

    def install(self, events: Any) -> None:
        events.register("before-parameter-build", self._keep_params)
        events.register("before-call.s3.GetObject", self._read)
        events.register("before-call.s3.HeadObject", self._read)
        events.register("before-call.s3.GetObject", ranged_read)
        events.register("before-call.dynamodb", self._dynamodb)

    @staticmethod
    def _keep_params(params: dict[str, Any], context: dict[str, Any] | None = None, **_: object) -> None:
        if context is not None:
            context[PARAMS] = params

    # -- S3: a missing key is a 404 only for a role that may list the bucket ---------------

    def _read(self, model: Any, context: dict[str, Any], **_: object) -> tuple[AWSResponse, dict[str, Any]] | None:
        params = context[PARAMS]
        if self._present(params):
            return None
        if (recorded := context.get(RECORDED)) is not None:
            recorded["absent"] = True  # S3 checked s3:ListBucket to answer this one
        caller = self.caller()
        if caller == OPERATOR or permitted(self.roles.get(caller, []), "s3:ListBucket", f"arn:aws:s3:::{params['Bucket']}"):
            return None  # moto's own 404
        if model.name == "HeadObject":
            return refusal(403, "403", "Forbidden")
        return refusal(403, "AccessDenied", "Access Denied")

    def _present(self, params: dict[str, Any]) -> bool:
        version = {"VersionId": params["VersionId"]} if params.get("VersionId") else {}
        try:
            self.inspector.head_object(Bucket=params["Bucket"], Key=params["Key"], **version)
        except ClientError as error:
            if error.response["Error"]["Code"] in ("404", "NoSuchKey", "NoSuchVersion", "NotFound"):
                return False
            raise
        return True

    # -- DynamoDB: key and item sizes in every request ----------------------------------

    @staticmethod
    def _dynamodb(model: Any, params: dict[str, Any], **_: object) -> tuple[AWSResponse, dict[str, Any]] | None:
        request = json.loads(params.get("body") or b"{}")
        problem = dynamodb_problem(model.name, request) or transaction_problem(model.name, request)
        return None if problem is None else refusal(400, "ValidationException", problem)


# -- S3: a ranged read reads its range ----------------------------------------------------

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


def ranged_read(model: Any, context: dict[str, Any], **_: object) -> tuple[AWSResponse, dict[str, Any]] | None:
    """A GetObject with ``Range: bytes=A-B`` answered as S3 does (206, ``ContentRange``) from the
    stored object, reading those bytes alone; any other read, and a key not there, is moto's."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import FakeKey, s3_backends

    params = context[PARAMS]
    asked = _RANGE.match(str(params.get("Range") or ""))
    if asked is None:
        return None
    try:
        key = s3_backends[DEFAULT_ACCOUNT_ID]["aws"].get_object(params["Bucket"], params["Key"], params.get("VersionId"))
    except Exception:  # noqa: BLE001 - a missing bucket or version: moto answers it
        return None
    if not isinstance(key, FakeKey):
        return None
    if params.get("IfMatch") and params["IfMatch"].strip('"') != key.etag.strip('"'):
        return refusal(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
    size, first = key.size, int(asked.group(1))
    if first >= size:
        return refusal(416, "InvalidRange", "The requested range is not satisfiable")
    last = min(int(asked.group(2)) if asked.group(2) else size - 1, size - 1)
    with key.lock:
        key._value_buffer.seek(first)
        data = key._value_buffer.read(last - first + 1)
    headers = {"content-range": f"bytes {first}-{last}/{size}", "content-length": str(len(data)), "etag": key.etag}
    parsed = {"Body": StreamingBody(io.BytesIO(data), len(data)), "ContentLength": len(data), "AcceptRanges": "bytes",
              "ContentRange": headers["content-range"], "ETag": key.etag,
              "ResponseMetadata": {"HTTPStatusCode": 206, "HTTPHeaders": headers}}
    if key.version_id != "null":
        parsed["VersionId"] = key.version_id
    return AWSResponse("https://strict.invalid/", 206, headers, _NoBody()), parsed


def dynamodb_problem(operation: str, request: dict[str, Any]) -> str | None:
    """Why DynamoDB refuses this request (as the JSON on the wire has it), or None."""
    for attributes, is_item in _named(operation, request):
        if _KEY["HASH"] in attributes and attribute_bytes(attributes[_KEY["HASH"]]) > PARTITION_KEY_BYTES:
            return ("One or more parameter values were invalid: Size of hashkey has exceeded the maximum size "
                    f"limit of{PARTITION_KEY_BYTES} bytes")
        if _KEY["RANGE"] in attributes and attribute_bytes(attributes[_KEY["RANGE"]]) > SORT_KEY_BYTES:
            return ("One or more parameter values were invalid: Aggregated size of all range keys has exceeded "
                    f"the size limit of {SORT_KEY_BYTES} bytes")
        if is_item and item_bytes(attributes) > ITEM_BYTES:
            return "Item size has exceeded the maximum allowed size"
    return None


def _named(operation: str, request: dict[str, Any]) -> Iterator[tuple[dict[str, Any], bool]]:
    """``(attributes, is a whole item)`` of every key and item a request names."""
    if operation == "PutItem":
        yield request["Item"], True
    elif operation in ("GetItem", "DeleteItem", "UpdateItem"):
        yield request["Key"], False
    elif operation == "BatchGetItem":
        for table in request["RequestItems"].values():
            for key in table["Keys"]:
                yield key, False
    elif operation == "BatchWriteItem":
        for writes in request["RequestItems"].values():
            for write in writes:
                yield (write["PutRequest"]["Item"], True) if "PutRequest" in write else (write["DeleteRequest"]["Key"], False)
    elif operation in ("TransactWriteItems", "TransactGetItems"):
        for entry in request["TransactItems"]:
            for kind, body in entry.items():
                yield (body["Item"], True) if kind == "Put" else (body["Key"], False)
    if "ExclusiveStartKey" in request:
        yield request["ExclusiveStartKey"], False


def attribute_bytes(value: dict[str, Any]) -> int:
    """DynamoDB's size of one attribute value: UTF-8 bytes of a string, raw bytes of a binary,
    about one byte per two significant digits of a number plus one, 3 bytes of overhead and
    one per element of a list or map."""
    ((kind, given),) = value.items()
    if kind == "S":
        return len(given.encode("utf-8"))
    if kind == "B":
        return len(base64.b64decode(given))
    if kind == "N":
        digits = given.lstrip("-").replace(".", "").split("e")[0].split("E")[0].strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_bytes({kind[0]: member}) for member in given)
    if kind == "L":
        return 3 + sum(1 + attribute_bytes(member) for member in given)
    if kind == "M":
        return 3 + sum(len(name.encode("utf-8")) + 1 + attribute_bytes(member) for name, member in given.items())
    raise AssertionError(f"no DynamoDB size for a {kind} value")


def item_bytes(item: dict[str, Any]) -> int:
    """An item's size: each attribute's name in UTF-8 bytes and its value."""
    return sum(len(name.encode("utf-8")) + attribute_bytes(value) for name, value in item.items())


# -- DynamoDB transactions: 100 actions, 4 MB, one action an item ---------------------------

TRANSACTION_ACTIONS, TRANSACTION_BYTES = 100, 4 * 1024 * 1024


def transaction_problem(operation: str, request: dict[str, Any]) -> str | None:
    """Why DynamoDB refuses this transaction (as the JSON on the wire has it), or None. Its size is
    what the request carries of its items: whole items put, keys (and an update's values) else."""
    if operation not in ("TransactWriteItems", "TransactGetItems"):
        return None
    actions = request["TransactItems"]
    if len(actions) > TRANSACTION_ACTIONS:
        return ("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: "
                f"Member must have length less than or equal to {TRANSACTION_ACTIONS}")
    seen: set[tuple[str, str]] = set()
    size = 0
    for entry in actions:
        ((kind, body),) = entry.items()
        attributes = body["Item"] if kind == "Put" else body["Key"]
        size += item_bytes(attributes) + item_bytes(body.get("ExpressionAttributeValues") or {})
        key = (body["TableName"], json.dumps({name: attributes.get(name) for name in _KEY.values()}, sort_keys=True))
        if key in seen:
            return "Transaction request cannot include multiple operations on one item"
        seen.add(key)
    if size > TRANSACTION_BYTES:
        return f"Transaction request cannot be larger than 4 MB (got {size:,} bytes)"
    return None


class PayloadTooLarge(Exception):
    """What Lambda answers for a request or response over its payload limit (API Gateway then replies 5xx)."""


def invocation(handler: Callable[[Any, Any], Any], event: Any, context: Any, limits: FunctionLimits | None = None,
               usage: Usage | None = None, clock: Callable[[], float] = time.monotonic) -> Any:
    """``handler`` run as Lambda runs it: the event and the reply each serialized to JSON (as the
    service and the runtime serialize them, non-ASCII escaped) and refused over 6 MB; given the
    function's ``limits``, held to its memory and timeout (:func:`limited`, ``usage`` told what it took)."""
    size = len(json.dumps(event).encode("utf-8"))
    if size > PAYLOAD_BYTES:
        raise PayloadTooLarge(f"Request must be smaller than {PAYLOAD_BYTES} bytes for the InvokeFunction operation (got {size})")
    with limited(limits, usage, clock):
        reply = handler(event, context)
    size = len(json.dumps(reply).encode("utf-8"))
    if size > PAYLOAD_BYTES:
        raise PayloadTooLarge(f"Response payload size ({size} bytes) exceeded maximum allowed payload size ({PAYLOAD_BYTES} bytes).")
    return reply


# -- Lambda: each function's memory and timeout, as the stack synthesizes them --------------

# What a function holds before its handler runs: a fresh interpreter's RSS after importing a
# function's app.py (79.6 MB for publish and embed, 80.9 MB for the API, measured with
# ``resource.getrusage`` after ``runpy.run_path("functions/publish/app.py")``).
RUNTIME_MB = 80


@dataclass(frozen=True)
class FunctionLimits:
    memory_mb: int
    timeout_s: int


@dataclass
class Usage:
    """What one call took: the peak of what it allocated, with the runtime's own, and its time."""

    memory_mb: float = 0.0
    seconds: float = 0.0


class OutOfMemory(Exception):
    """Lambda's ``Runtime.OutOfMemory``: the function passed its ``MemorySize`` and was ended."""


class TimedOut(Exception):
    """Lambda's ``Task timed out after N seconds``: the function passed its ``Timeout``."""


def function_limits(template: dict[str, Any]) -> dict[str, FunctionLimits]:
    """Each function's ``MemorySize`` and ``Timeout`` off the synthesized template, by name
    (``publish``, ``api`` ...: its ``POWERTOOLS_SERVICE_NAME`` without ``citewell-``)."""
    found = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        properties = resource["Properties"]
        service = properties.get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME", "")
        if service.startswith("citewell-"):
            found[service.removeprefix("citewell-")] = FunctionLimits(int(properties.get("MemorySize", 128)),
                                                                      int(properties.get("Timeout", 3)))
    return found


@contextmanager
def limited(limits: FunctionLimits | None, usage: Usage | None = None,
            clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """The call inside held to ``limits`` (none: not measured). Its memory is the peak of what
    Python and numpy allocated during it (tracemalloc, every thread: the in-process fakes'
    allocations count too, never kinder) over ``RUNTIME_MB``; its time is ``clock``'s (wall,
    or a test's simulated one). Lambda ends a function at the limit, whatever it was doing, so
    going over fails the call even where it raised, with the error Lambda reports."""
    if limits is None:
        yield
        return
    started, tracing = clock(), tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    failed: BaseException | None = None
    try:
        yield
    except BaseException as error:  # judged below: Lambda's limit, if passed, is what it reports
        failed = error
    finally:
        _, peak = tracemalloc.get_traced_memory()
        if not tracing:
            tracemalloc.stop()
    used, took = RUNTIME_MB + (peak - base) / (1024 * 1024), clock() - started
    if usage is not None:
        usage.memory_mb, usage.seconds = used, took
    if used > limits.memory_mb:
        raise OutOfMemory(f"Runtime.OutOfMemory: Max Memory Used {used:.0f} MB of {limits.memory_mb} MB") from failed
    if took > limits.timeout_s:
        raise TimedOut(f"Task timed out after {limits.timeout_s:.2f} seconds (took {took:.2f})") from failed
    if failed is not None:
        raise failed
