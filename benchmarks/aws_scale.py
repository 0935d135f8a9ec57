"""The DynamoDB side of the audit's embedding check and of a document's delete, at 1M chunks.

Runs the real :class:`DynamoMetadataStore` code paths against moto at a few sizes, counting
every call, item and byte (botocore's ``after-call`` event), shows the counts grow linearly,
then scales them to 1,000,000 chunk records (the audit), a 10,000-chunk document (the
delete) and the pages of a 50 MB text (``GET /documents/{id}``) under DynamoDB's real limits:
1 MB read per Query page (counted before projection), 25 keys per BatchWriteItem, 1,000 WCU/s
per partition key, and typical in-region latencies. Wall time is each operation's calls times
its latency over the store's concurrency (``PARALLEL``), and never below the partition's write
floor.

    python -m benchmarks.aws_scale [--sizes 250 500 1000]
"""

from __future__ import annotations

import argparse
import math
import os
from collections import Counter
from typing import Any

import numpy as np

LATENCY_S = {"Query": 0.006, "QueryPage": 0.060, "BatchWriteItem": 0.020, "BatchGetItem": 0.012, "GetItem": 0.005,
             "DeleteItem": 0.006, "PutItem": 0.006}  # typical in-region p50s; a full 1 MB page is transfer-bound
PAGE_BYTES = 1024 * 1024
PARTITION_WCU = 1000  # per partition key, per second
DIMENSIONS = 384  # MiniLM; Titan v2 at 1,024 would make a vector item 2.7x larger
TEXT = "Employees accrue paid leave monthly and may carry over up to five days into the next year. " * 12  # ~1.1 KB


class Calls:
    """Calls, items and response bytes per DynamoDB operation, from botocore's events."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.items: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        client.meta.events.register("after-call.dynamodb", self._seen)

    def _seen(self, http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        self.calls[name] += 1
        self.bytes[name] += len(http_response.content or b"")
        if "Items" in parsed:
            self.items[name] += len(parsed["Items"])
        elif "Responses" in parsed:
            self.items[name] += sum(len(v) for v in parsed["Responses"].values())

    def reset(self) -> None:
        self.calls.clear(), self.items.clear(), self.bytes.clear()


def _chunks(n: int, document_id: str) -> list[Any]:
    from citewell.models.chunks import Chunk

    return [Chunk(chunk_id=f"{document_id}#0#{i}", document_id=document_id, tenant="northpier",
                  allowed_roles=frozenset({"staff"}), revision="r1", title="Handbook", section_index=0, index=i,
                  heading_path=["Leave"], start=0, end=len(TEXT) + 8, body_start=0, text=f"{i:08d}{TEXT}") for i in range(n)]


def measure(n: int) -> dict[str, Any]:
    import boto3
    from moto import mock_aws

    from citewell.metadata.dynamodb import TABLE_DEFINITION, DynamoMetadataStore

    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        resource = boto3.resource("dynamodb", region_name="eu-west-1")
        resource.create_table(TableName="citewell", **TABLE_DEFINITION)
        store = DynamoMetadataStore("citewell", resource)
        chunks = _chunks(n, "handbook.md")
        store.put_chunks(chunks)
        rng = np.random.default_rng(0)
        store.put_embeddings("minilm", {c.content_hash: rng.standard_normal(DIMENSIONS).astype(np.float32) for c in chunks})
        key = {"pk": "C#northpier#handbook.md#r1", "sk": f"K#{chunks[0].chunk_id}"}
        record = resource.Table("citewell").get_item(Key=key)["Item"]
        record_bytes = sum(len(str(k)) + len(str(v)) for k, v in record.items())
        vector_bytes = len("pk") + len("E#minilm") + len("sk") + 64 + len("vector") + DIMENSIONS * 4
        calls = Calls(store.client)
        cached = store.embedding_hashes("minilm")
        unused = cached - store.hashes_in_use(cached)
        audit = (Counter(calls.calls), Counter(calls.items), Counter(calls.bytes))
        assert not unused and len(cached) == n
        calls.reset()
        # purge_revision's metadata part, as the delete runs it
        hashes = {c.content_hash for c in store.get_chunks("northpier", "handbook.md", "r1")}
        store.delete_chunks("northpier", "handbook.md", "r1")
        gone = store.delete_unused_embeddings("minilm", hashes)
        assert gone == n and not store.embedding_hashes("minilm")
        delete = (Counter(calls.calls), Counter(calls.items), Counter(calls.bytes))
    return {"n": n, "audit": audit, "delete": delete, "record_bytes": record_bytes, "vector_bytes": vector_bytes}


def _linear(runs: list[dict[str, Any]], phase: str) -> dict[str, tuple[float, float]]:
    """Each operation's calls as ``a * chunks + b``, fitted over the sizes, with the worst
    residual printed: the scaling to 1M is only as good as this line."""
    sizes = np.array([r["n"] for r in runs], dtype=float)
    fits = {}
    for op in sorted({op for r in runs for op in r[phase][0]}):
        counts = np.array([r[phase][0][op] for r in runs], dtype=float)
        a, b = np.polyfit(sizes, counts, 1)
        residual = float(np.max(np.abs(counts - (a * sizes + b))))
        fits[op] = (float(a), float(b))
        print(f"    {phase} {op:<15} calls = {a:.4f} * chunks + {b:.1f}   (worst residual {residual:.2f} calls)")
    return fits


def scaled(fits: dict[str, tuple[float, float]], n: int) -> dict[str, float]:
    return {op: a * n + b for op, (a, b) in fits.items()}


def wall(calls: dict[str, float], parallel: int) -> float:
    return sum(count * LATENCY_S.get(op, 0.006) for op, count in calls.items()) / parallel


def main() -> None:
    from citewell.metadata.dynamodb import PARALLEL, SEGMENTS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000])
    args = parser.parse_args()
    runs = [measure(n) for n in sorted(args.sizes)]
    for r in runs:
        a, d = r["audit"], r["delete"]
        print(f"n={r['n']}: audit calls {dict(a[0])} items {dict(a[1])} bytes {sum(a[2].values())}; "
              f"delete calls {dict(d[0])} items {dict(d[1])} bytes {sum(d[2].values())}")
    audit_fit, delete_fit = _linear(runs, "audit"), _linear(runs, "delete")
    record_bytes, vector_bytes = runs[-1]["record_bytes"], runs[-1]["vector_bytes"]

    # The audit at 1M: the key-only reads of the embedding partition are paged by 1 MB of items
    # read (before projection) in 16 ranges at once; then one Query per hash, PARALLEL at once.
    total = 1_000_000
    pages = math.ceil(total * vector_bytes / PAGE_BYTES)
    segments = len(SEGMENTS) + 1
    read_s = math.ceil(pages / segments) * LATENCY_S["QueryPage"]
    per_hash = audit_fit["Query"][0] * total  # the slope: one reference Query per hash
    query_s = per_hash * LATENCY_S["Query"] / PARALLEL
    print(f"\naudit, 1,000,000 embeddings of {vector_bytes} B: {pages} pages in {segments} ranges -> {read_s:.1f} s; "
          f"{per_hash:,.0f} reference Queries / {PARALLEL} -> {query_s:.1f} s; total {read_s + query_s:.1f} s of 900 s")

    # The delete of a 10,000-chunk document (purge_revision's metadata part).
    n = 10_000
    calls = scaled(delete_fit, n)
    record_pages = math.ceil(n * record_bytes / PAGE_BYTES)
    sequential = 2 * record_pages * LATENCY_S["QueryPage"]  # get_chunks, then delete_chunks' key read: one partition, in order
    parallel_calls = {op: c for op, c in calls.items() if op != "Query"}
    parallel_calls["Query"] = calls.get("Query", 0) - 2 * record_pages  # the per-hash reference checks
    fanned = wall(parallel_calls, PARALLEL)
    floor = n * math.ceil(record_bytes / 1024) / PARTITION_WCU  # the chunk partition's write ceiling
    writes = max(parallel_calls.get("BatchWriteItem", 0) * LATENCY_S["BatchWriteItem"] / PARALLEL, floor)
    others = fanned - parallel_calls.get("BatchWriteItem", 0) * LATENCY_S["BatchWriteItem"] / PARALLEL
    print(f"delete, 10,000 chunks of {record_bytes} B: {dict((k, round(v)) for k, v in calls.items())}; "
          f"paged reads {sequential:.1f} s + per-hash checks and batch gets {others:.1f} s + deletes {writes:.1f} s "
          f"(partition floor {floor:.1f} s) = {sequential + others + writes:.1f} s of 30 s")

    # Reading a 50 MB text through GET /documents/{id}: every page reads the revision's chunk
    # partition whole (get_chunks, in order), then cuts TEXT_PAGE_CHARS characters of it.
    from citewell.api.paging import TEXT_PAGE_CHARS

    text_chars = 50 * 1024 * 1024
    chunk_chars = len(TEXT) + 8
    chunk_count = math.ceil(text_chars / chunk_chars)
    per_page = math.ceil(chunk_count * record_bytes / PAGE_BYTES) * LATENCY_S["QueryPage"]
    text_pages = math.ceil(text_chars / TEXT_PAGE_CHARS)
    print(f"text of {text_chars:,} characters ({chunk_count:,} chunks of {record_bytes} B): {text_pages} pages of "
          f"{TEXT_PAGE_CHARS:,}; each reads {chunk_count * record_bytes / PAGE_BYTES:,.0f} MB -> {per_page:.1f} s of 30 s; "
          f"the whole read {text_pages * per_page / 60:.1f} min")


if __name__ == "__main__":
    main()
