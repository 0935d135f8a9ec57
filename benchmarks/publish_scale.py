"""The publish function on a revision of 100,000 chunks: its peak memory beside the 1,024 MB
the stack gives it, and its time.

The revision is written straight into the stores as the chunk and embed stages leave it (short
texts and random float32 vectors of Titan v2's 1,024 dimensions: the publish reads records and
cached vectors, never the model), then the real publish handler takes the embed stage's
marker on moto (S3, DynamoDB) and osmem-server (OpenSearch over HTTP), measured as the AWS
tests measure a function (``tests.strict_aws.limited``: the peak of what Python and numpy
allocate during the call, over the runtime's own ``RUNTIME_MB``).

moto answers a Query by sorting the whole table (every partition) for every page, so a 200-page
read of one partition among 300,000 items would take hours; here a Query of a partition over
``FAST_PARTITION`` items is answered from that partition's sorted keys, with moto's own paging
rules (``Limit``, 1 MB, ``ExclusiveStartKey``, ``begins_with``). Every other call is moto's.

moto keeps every model object it ever makes in its class's ``instances_tracked`` list (its
``BaseModel.__new__``), the copies of items it hands a Query or BatchGetItem among them, until the
mock is reset: ~1.3 KB a chunk read, retained inside the measured process (tracemalloc at the end of
a publish: 5.3 MB over its start at 3,000 chunks, 28.3 MB at 20,000, 25.7 MB of it in
``moto/dynamodb/models/dynamo_type.py`` and ``moto/core/common_models.py``). A function's memory
on AWS holds none of that, so here DynamoDB items are not tracked (:func:`untracked_items`);
``--moto-tracking`` measures with moto's bookkeeping as it is.

    python -m benchmarks.publish_scale [--chunks 100000] [--dims 1024] [--moto-tracking] [--by-file]
"""

from __future__ import annotations

import argparse
import bisect
import copy
import json
import os
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any

import numpy as np

TENANT, DOCUMENT = "northpier", "large.txt"
FAST_PARTITION = 1000
RESULT_BYTES = 1024 * 1024  # moto's (and DynamoDB's) page limit


def fast_queries() -> None:
    """A Query of a large partition answered from its sorted range keys (cached while the
    partition keeps its size: the benchmark writes none of it while it reads)."""
    from moto.dynamodb.models.table import Table

    original = Table.query
    cache: dict[tuple[int, Any], tuple[int, list[Any], list[Any]]] = {}

    def query(self: Any, hash_key: Any, range_comparison: str | None, range_objs: list[Any], limit: int,
              exclusive_start_key: dict[str, Any] | None, scan_index_forward: bool, projection_expressions: Any,
              index_name: str | None = None, consistent_read: bool = False, filter_expression: Any = None,
              **rest: Any) -> Any:
        partition = self.items.get(hash_key) if hash_key is not None else None
        if (index_name or not scan_index_forward or partition is None
                or len(partition) <= FAST_PARTITION or any(rest.get(k) for k in rest if k not in (
                    "hash_key_conditions", "range_key_conditions", "expr_names", "expr_values"))):
            return original(self, hash_key, range_comparison, range_objs, limit, exclusive_start_key, scan_index_forward,
                            projection_expressions, index_name, consistent_read, filter_expression, **rest)
        key = (id(self), hash_key)
        if key not in cache or cache[key][0] != len(partition):
            items = sorted(partition.values(), key=lambda item: item.range_key.value)
            cache[key] = (len(partition), [item.range_key.value for item in items], items)
        _, keys, items = cache[key]
        start = 0
        if exclusive_start_key:
            start = bisect.bisect_right(keys, next(iter(exclusive_start_key[self.range_key_attr].values())))
        results: list[Any] = []
        size, scanned, last = 0, 0, None
        for item in items[start:]:
            if len(results) == limit or size + item.size() > RESULT_BYTES:
                last = self._get_last_evaluated_key(results[-1], None)
                break
            scanned += 1
            if range_comparison and not item.range_key.compare(range_comparison, range_objs):
                continue
            results.append(item)
            size += item.size()
        results = copy.deepcopy(results)
        if filter_expression is not None:  # as moto: after the page is cut
            results = [item for item in results if filter_expression.expr(item)]
        if projection_expressions:
            results = [r.project(projection_expressions) for r in results]
        return results, scanned, last

    Table.query = query  # type: ignore[method-assign]  # the benchmark's faster moto, see the module's docstring


class _Untracked(list[Any]):
    """A tracking list that keeps nothing."""

    def append(self, _: Any) -> None:
        return


def untracked_items() -> None:
    """moto's DynamoDB items (the table's, and every copy a read makes) left out of its instance
    tracking, which would hold each copy to the end of the run (see the module's docstring)."""
    from moto.dynamodb.models.dynamo_type import Item

    Item.instances_tracked = _Untracked()  # type: ignore[attr-defined]  # the benchmark's moto, see above


def patient_client() -> None:
    """Clients that wait 120 s for a reply, not opensearch-py's 10 s: osmem on a shared machine
    can take longer over a 10 MB ``_bulk`` (the domain's client waits 30 s, ``OpenSearchIndex.connect``)."""
    import opensearchpy

    original = opensearchpy.OpenSearch.__init__

    def patient(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("timeout", 120)
        original(self, *args, **kwargs)

    opensearchpy.OpenSearch.__init__ = patient  # type: ignore[method-assign]  # the benchmark's machine, see above


def stage(chunks: int, dims: int) -> tuple[dict[str, Any], str]:
    """The revision's records, cached vectors and marker; returns the publish function's event and the revision."""
    from citewell.ingest.stages import IngestRequest, register
    from citewell.keys import embedded_key
    from citewell.lambdas.settings import services_from_env
    from citewell.models.chunks import Chunk
    from citewell.models.documents import publication_revision

    _, services = services_from_env()
    upload = register(services, IngestRequest(document_id=DOCUMENT, tenant=TENANT, allowed_roles=frozenset({"staff"}),
                                              data=b"x", filename=DOCUMENT, title="Large"))
    content = f"{DOCUMENT}:{chunks}"
    revision = publication_revision(content, upload.upload_id)
    identity = services.embedder.identity
    assert identity.endswith(f":{dims}"), identity
    rng = np.random.default_rng(0)
    step = 10_000
    for first in range(0, chunks, step):  # written in slices: the benchmark's own memory stays small too
        part = [Chunk(chunk_id=f"{DOCUMENT}#0#{i:06d}", document_id=DOCUMENT, tenant=TENANT, allowed_roles=frozenset({"staff"}),
                      revision=revision, title="Large", section_index=0, index=i, heading_path=["Part"], start=i * 60,
                      end=i * 60 + 50, body_start=i * 60, text=f"Passage {i} of the large text on leave and pay.")
                for i in range(first, min(first + step, chunks))]
        services.chunks.put_chunks(part) if first == 0 else _append(services, part)
        vectors = rng.standard_normal((len(part), dims)).astype(np.float32)
        services.embeddings.put_embeddings(identity, {c.content_hash: v for c, v in zip(part, vectors)})
    key = embedded_key(TENANT, DOCUMENT, upload.upload_id)
    marker = {"revision": revision, "content_sha256": content, "encoding": None, "chunks": chunks}
    services.objects.put(key, json.dumps(marker).encode())
    body = {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "eu-west-1",
                         "eventName": "ObjectCreated:Put",
                         "s3": {"bucket": {"name": "citewell-documents"}, "object": {"key": key, "size": 100}}}]}
    return {"Records": [{"messageId": "m1", "receiptHandle": "r1", "body": json.dumps(body), "attributes": {},
                         "messageAttributes": {}, "eventSource": "aws:sqs", "awsRegion": "eu-west-1",
                         "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:citewell-publish"}]}, revision


def _append(services: Any, part: list[Any]) -> None:
    """Records past the first slice: put_chunks replaces a revision whole, so these go as it writes them."""
    store = services.chunks
    with store.table.batch_writer() as references:
        for c in part:
            references.put_item(Item=store._reference(c.content_hash, c.tenant, c.document_id, c.revision, c.chunk_id))
    with store.table.batch_writer() as batch:
        for c in part:
            batch.put_item(Item={"pk": f"C#{c.tenant}#{c.document_id}#{c.revision}", "sk": f"K#{c.chunk_id}",
                                 "position": c.index, "content_hash": c.content_hash, "record": c.record_json()})


def by_file(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, top: int = 8) -> list[str]:
    """What the call left allocated, by the file that allocated it, largest first: where a peak
    that grows with the revision comes from (moto's files or citewell's)."""
    return [f"{s.size_diff / 2**20:8.1f} MB {s.count_diff:9,d} blocks  {s.traceback[0].filename}"
            for s in after.compare_to(before, "filename")[:top]]


def measure(chunks: int, dims: int, moto_tracking: bool = False, files: bool = False) -> dict[str, Any]:
    import boto3
    from moto import mock_aws
    from osmem_server import OsmemServer

    from citewell.lambdas.settings import services_from_env
    from citewell.metadata.dynamodb import TABLE_DEFINITION
    from tests.strict_aws import FunctionLimits, Usage, invocation

    env = {"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
           "CITEWELL_BUCKET": "citewell-documents", "CITEWELL_TABLE": "citewell-metadata", "CITEWELL_EMBEDDER": "bedrock",
           "POWERTOOLS_TRACE_DISABLED": "1", "POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_NAMESPACE": "citewell"}
    os.environ.update(env)
    fast_queries()
    patient_client()
    with OsmemServer.start() as server, mock_aws():
        os.environ["CITEWELL_OPENSEARCH_URL"] = server.url
        if not moto_tracking:
            untracked_items()
        boto3.client("s3").create_bucket(Bucket="citewell-documents",
                                         CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        boto3.resource("dynamodb").create_table(TableName="citewell-metadata", **TABLE_DEFINITION)
        services_from_env.cache_clear()
        started = time.monotonic()
        event, revision = stage(chunks, dims)
        staged_s = time.monotonic() - started
        from citewell.lambdas.handlers import stage_handler

        handler, usage = stage_handler("publish"), Usage()
        context = SimpleNamespace(function_name="citewell-publish", memory_limit_in_mb=1024, aws_request_id="bench",
                                  invoked_function_arn="arn:aws:lambda:eu-west-1:123456789012:function:citewell-publish")
        if files:  # traced from here, so the call's own measuring leaves it on for the snapshot after
            tracemalloc.start()
            before = tracemalloc.take_snapshot()
        cpu = time.process_time()
        # Memory held to the function's 1,024 MB; time measured, not held to its 300 s: moto and
        # osmem on a shared machine are no measure of DynamoDB's and the domain's latencies.
        try:
            reply = invocation(handler, event, context, FunctionLimits(memory_mb=1024, timeout_s=10**6), usage)
        finally:
            cpu = time.process_time() - cpu
            print(f"the call: peak {usage.memory_mb:.0f} MB, {usage.seconds:.0f} s wall, {cpu:.0f} s CPU", flush=True)
        assert reply == {"batchItemFailures": []}, reply
        if files:
            print("left allocated by the call, by file:", *by_file(before, tracemalloc.take_snapshot()), sep="\n")
            tracemalloc.stop()
        _, services = services_from_env()
        document = services.documents.get_document(TENANT, DOCUMENT)
        assert document is not None and document.active_revision == revision and document.chunk_count == chunks, document
        indexed = services.index.count(TENANT, DOCUMENT, revision)
        assert indexed == chunks, indexed
    return {"chunks": chunks, "dims": dims, "moto_tracking": moto_tracking,
            "peak_mb": usage.memory_mb, "seconds": usage.seconds, "cpu_s": cpu,
            "staged_s": staged_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=1024)
    parser.add_argument("--moto-tracking", action="store_true", help="keep moto's tracking of every item copy it makes")
    parser.add_argument("--by-file", action="store_true", help="print what the call left allocated, by file")
    args = parser.parse_args()
    found = measure(args.chunks, args.dims, args.moto_tracking, args.by_file)
    tracking = "moto tracking its item copies" if found["moto_tracking"] else "moto's item copies untracked"
    print(f"publish of {found['chunks']:,} chunks at {found['dims']} dimensions ({tracking}): "
          f"peak {found['peak_mb']:.0f} MB of 1,024 MB "
          f"(the runtime's 80 MB included); {found['seconds']:.0f} s wall, {found['cpu_s']:.0f} s of this process's CPU "
          f"(the handler, moto and the measuring; osmem apart) "
          f"(staging the revision took {found['staged_s']:.0f} s)")


if __name__ == "__main__":
    main()
