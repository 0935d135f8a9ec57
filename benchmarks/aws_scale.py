"""The DynamoDB side of the audit's embedding check and of a document's delete, at 1M chunks;
and the audit run in pages at 1M chunks, 10,000 documents and 100,000 cached answers.

Runs the real :class:`DynamoMetadataStore` code paths against moto at a few sizes, counting
every call, item and byte (botocore's ``after-call`` event), shows the counts grow linearly,
then scales them to 1,000,000 chunk records (the audit), a 10,000-chunk document (the
delete) and the pages of a 50 MB text (``GET /documents/{id}``) under DynamoDB's real limits:
1 MB read per Query page (counted before projection), 25 keys per BatchWriteItem, 1,000 WCU/s
per partition key, and typical in-region latencies. Wall time is each operation's calls times
its latency over the store's concurrency (``PARALLEL``), and never below the partition's write
floor.

The audit's pages (:mod:`citewell.audit_pages`) are measured the same way: the live check, the
citations' check, the cached answers' check and the conversations' check run over a corpus in moto at a few sizes,
their DynamoDB and S3 calls counted per item; with the embedding check above (a 16th of it a
page), the plan's inventories and the pages' sizes, each page's time (calls times latency, and
the CPU of reading what it reads, measured here and scaled to a 1,024 MB function's share of a
core) and memory (the parsed records it holds at once, measured with tracemalloc) are set
beside Lambda's 900 s and the function's 1,024 MB, and the run's requests, read units and GB-s
are counted.

    python -m benchmarks.aws_scale [--sizes 250 500 1000] [--page-sizes 20 40 80]
"""

from __future__ import annotations

import argparse
import math
import os
from collections import Counter
from typing import Any

import numpy as np

LATENCY_S = {"Query": 0.006, "QueryPage": 0.060, "BatchWriteItem": 0.020, "BatchGetItem": 0.012, "GetItem": 0.005,
             "DeleteItem": 0.006, "PutItem": 0.006, "HeadObject": 0.015, "ListObjectsV2": 0.050,
             "SendMessageBatch": 0.020}  # typical in-region p50s; a full 1 MB page is transfer-bound
PAGE_BYTES = 1024 * 1024
PARTITION_WCU = 1000  # per partition key, per second
DIMENSIONS = 384  # MiniLM; Titan v2 at 1,024 would make a vector item 2.7x larger
TEXT = "Employees accrue paid leave monthly and may carry over up to five days into the next year. " * 12  # ~1.1 KB


class Calls:
    """Calls, items and response bytes per operation of one client (DynamoDB's, S3's), from botocore's events."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.items: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        client.meta.events.register(f"after-call.{client.meta.service_model.service_name}", self._seen)

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
    parser.add_argument("--page-sizes", type=int, nargs="+", default=[20, 40, 80], help="documents of the paged audit's runs")
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
    range_s = math.ceil(pages / segments) * LATENCY_S["QueryPage"] + per_hash / segments * LATENCY_S["Query"] / PARALLEL
    audit_pages_at_scale(sorted(args.page_sizes), range_s, pages, per_hash)

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


# -- the audit in pages ----------------------------------------------------------------------

SCALE = {"chunks": 1_000_000, "documents": 10_000, "answers": 100_000, "turns": 3}  # 3 turns a conversation
FUNCTION_MB = 1024  # the audit function's memory (infra/stacks/functions.py)
CPU_SHARE = FUNCTION_MB / 1769  # Lambda gives a full vCPU at 1,769 MB, and a share of one below
CONCURRENCY = 8  # the audit queue's max_concurrency (cdk.json)
PRICES = {"rru": 0.125e-6, "wru": 0.625e-6, "gb_s": 0.0000166667, "s3_get": 0.0004e-3, "s3_list": 0.005e-3,
          "sqs": 0.40e-6}  # on-demand list prices (us-east-1): DynamoDB per request unit, Lambda x86 per GB-s, S3, SQS


def _corpus(store: Any, s3: Any, documents: int, chunks: int, answers: int) -> list[Any]:
    """``documents`` served documents of ``chunks`` records each, their raw uploads, ``answers``
    answers each resting on one of them and cached, and their turns, three a conversation."""
    from citewell.keys import raw_key
    from citewell.models.answers import AnswerRecord, Citation
    from citewell.models.conversations import Conversation, Turn
    from citewell.models.documents import Document, DocumentStatus

    served = []
    for d in range(documents):
        document_id = f"doc-{d:05d}.md"
        upload = f"{d:032x}"
        record = store.save_document(Document(
            document_id=document_id, tenant="northpier", allowed_roles=frozenset({"staff"}), title="Handbook", source="bench",
            status=DocumentStatus.PUBLISHED, active_revision="r1", chunk_count=chunks, active_upload=upload, generation="a" * 32))
        s3.put_object(Bucket="citewell-bench", Key=raw_key("northpier", document_id, upload), Body=b"x")
        store.put_chunks(_chunks(chunks, document_id))
        served.append(record)
    for a in range(answers):
        document_id = f"doc-{a % documents:05d}.md"
        cited = Citation(ref="S1", chunk_id=f"{document_id}#0#0", document_id=document_id, revision="r1", title="Handbook",
                         section_path=["Leave"], quote="27 days")
        store.put_answer(AnswerRecord(answer_id=f"{a:032x}", tenant="northpier", roles=["staff"], question="How many days? " * 4,
                                      answer="Full-time staff receive 27 days of paid annual leave. [S1]", refused=False,
                                      citations=[cited], generator="extractive"))
        store.put_cached_answer(f"key-{a}", "northpier", 0, f"{a:032x}")
    turns = SCALE["turns"]
    for c in range(answers // turns):
        store.save_conversation(Conversation(
            conversation_id=f"c{c:05d}", tenant="northpier", subject=f"user-{c}", roles=["staff"],  # the worst case:
            # every conversation another owner's, so a page reads an owner's history for each
            turns=[Turn(seq=t + 1, answer_id=f"{c * turns + t:032x}", asked="and Leeds?", question="How many days in Leeds?")
                   for t in range(turns)]))
    return served


def measure_pages(documents: int, chunks: int = 20) -> dict[str, Any]:
    """The calls of the live, citation, cached-answer and conversation checks over a corpus of
    ``documents`` (and 10 answers a document, as at scale), each check run whole as one page."""
    from datetime import timedelta
    from types import SimpleNamespace

    import boto3
    from moto import mock_aws

    from citewell.audit_checks import Checks, Served
    from citewell.metadata.dynamodb import TABLE_DEFINITION, DynamoMetadataStore
    from citewell.objects.s3 import S3ObjectStore

    answers = documents * SCALE["answers"] // SCALE["documents"]
    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        resource = boto3.resource("dynamodb", region_name="eu-west-1")
        resource.create_table(TableName="citewell", **TABLE_DEFINITION)
        store = DynamoMetadataStore("citewell", resource)
        s3 = boto3.client("s3", region_name="eu-west-1")
        s3.create_bucket(Bucket="citewell-bench", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        served = _corpus(store, s3, documents, chunks, answers)
        services = SimpleNamespace(documents=store, uploads=store, chunks=store, answers=store, conversations=store,
                                   embeddings=store, objects=S3ObjectStore("citewell-bench", s3))
        dynamo, objects = Calls(store.client), Calls(s3)
        found: dict[str, Any] = {}

        def counted(name: str, run: Any) -> None:
            dynamo.reset(), objects.reset()
            run()
            found[name] = (Counter(dynamo.calls) + Counter(objects.calls), Counter(dynamo.bytes))

        checks = Checks(services, False, timedelta(minutes=30))  # type: ignore[arg-type]
        counted("snapshot", lambda: checks.documents)
        counted("plan", lambda: (store.cited_documents(), store.cache_inventory(), store.conversation_keys()))
        items = [Served(tenant=d.tenant, document_id=d.document_id, revision="r1", indexed=chunks,
                        access=[(["staff"], "Handbook")]) for d in served]
        counted("live", lambda: checks.live(items))
        counted("citations", lambda: checks.citations(sorted(store.cited_documents())))
        counted("caches", lambda: checks.caches(sorted(store.cache_inventory())))
        counted("conversations", lambda: checks.conversations(sorted(store.conversation_keys())))
        assert checks.findings == [], checks.findings  # a consistent corpus: the counts are the checks' own
        record = resource.Table("citewell").get_item(Key={"pk": "T#northpier", "sk": f"A#{0:032x}"})["Item"]["record"]
        conversation = resource.Table("citewell").get_item(Key={"pk": "T#northpier", "sk": "V#c00000"})["Item"]["record"]
        document = resource.Table("citewell").get_item(Key={"pk": "T#northpier", "sk": "D#doc-00000.md"})["Item"]["record"]
    return {"documents": documents, "answers": answers, "conversations": answers // SCALE["turns"], "found": found,
            "answer_bytes": len(record), "conversation_bytes": len(conversation), "document_bytes": len(document)}


def _per_item(runs: list[dict[str, Any]], check: str, items: str) -> dict[str, tuple[float, float]]:
    """Each operation's calls of ``check`` as ``a * items + b`` over the runs."""
    sizes = np.array([r[items] for r in runs], dtype=float)
    fits = {}
    for op in sorted({op for r in runs for op in r["found"][check][0]}):
        counts = np.array([r["found"][check][0][op] for r in runs], dtype=float)
        a, b = np.polyfit(sizes, counts, 1)
        fits[op] = (float(a), float(b))
        residual = float(np.max(np.abs(counts - (a * sizes + b))))
        print(f"    {check:<13} {op:<15} calls = {a:.4f} * {items} + {b:.1f}   (worst residual {residual:.2f})")
    return fits


def _parsed_cost(model: Any, text: str, n: int = 2000) -> tuple[float, float]:
    """Seconds of CPU and bytes of memory to parse one record of ``model`` from ``text``."""
    import time
    import tracemalloc

    started = time.process_time()
    for _ in range(n):
        model.model_validate_json(text)
    cpu = (time.process_time() - started) / n
    tracemalloc.start()
    kept = [model.model_validate_json(text) for _ in range(200)]
    held = tracemalloc.get_traced_memory()[0] / len(kept)
    tracemalloc.stop()
    return cpu, held


def audit_pages_at_scale(sizes: list[int], range_s: float, embedding_pages: int, reference_queries: float) -> None:
    from citewell.audit_pages import PAGE_ITEMS, STEP_ITEMS
    from citewell.models.answers import AnswerRecord
    from citewell.models.chunks import Chunk
    from citewell.models.conversations import Conversation
    from citewell.models.documents import Document

    print("\nthe audit in pages: calls per item, fitted over", sizes, "documents")
    runs = [measure_pages(n) for n in sizes]
    live = _per_item(runs, "live", "documents")
    cited = _per_item(runs, "citations", "documents")
    caches = _per_item(runs, "caches", "answers")
    conversations = _per_item(runs, "conversations", "conversations")
    last = runs[-1]
    documents, chunks, answers = SCALE["documents"], SCALE["chunks"], SCALE["answers"]
    talks = answers // SCALE["turns"]
    per_document = chunks // documents
    record_bytes = len(_chunks(1, "doc-00000.md")[0].record_json()) + 120  # the item: keys, position and hash beside the JSON
    chunk_cpu, chunk_mem = _parsed_cost(Chunk, _chunks(1, "doc-00000.md")[0].record_json())
    doc_json = Document(document_id="doc-00000.md", tenant="northpier", allowed_roles=frozenset({"staff"}), title="Handbook",
                        source="bench").model_dump_json()
    doc_cpu, doc_mem = _parsed_cost(Document, doc_json)
    answer_cpu, answer_mem = _parsed_cost(AnswerRecord, AnswerRecord(
        answer_id="a" * 32, tenant="northpier", roles=["staff"], question="How many days? " * 4, answer="27 days [S1]",
        refused=False, citations=[], generator="extractive").model_dump_json())
    talk_cpu, talk_mem = _parsed_cost(Conversation, Conversation(conversation_id="c1", tenant="northpier", subject="anna",
                                                                 roles=["staff"]).model_dump_json())
    print(f"    record sizes: chunk {record_bytes} B, document {last['document_bytes']} B, answer {last['answer_bytes']} B, "
          f"conversation {last['conversation_bytes']} B; parse (this machine, per record): chunk {chunk_cpu * 1e6:.0f} us, "
          f"document {doc_cpu * 1e6:.0f} us, answer {answer_cpu * 1e6:.0f} us")

    def latency(calls: dict[str, float]) -> float:
        return sum(n * LATENCY_S.get(op, 0.006) for op, n in calls.items())

    # The snapshot every page of the live and whole checks reads: 10,000 records in 1 MB pages.
    snapshot_pages = math.ceil(documents * (last["document_bytes"] + 60) / PAGE_BYTES)
    snapshot_s = snapshot_pages * LATENCY_S["QueryPage"] + documents * doc_cpu / CPU_SHARE
    snapshot_mb = documents * doc_mem / 2**20
    # live: per document its fitted calls, its chunk pages (1,000 records or 1 MB each) and the parse of its records.
    n = PAGE_ITEMS["live"]
    chunk_page_bytes = min(PAGE_BYTES, 1000 * record_bytes)
    pages_per_document = math.ceil(per_document * record_bytes / chunk_page_bytes)
    live_calls = {op: a * n for op, (a, _) in live.items()}
    live_calls["Query"] = n * pages_per_document
    live_calls["PutItem"] = math.ceil(n / STEP_ITEMS["live"])  # a checkpoint a step
    transfer = n * per_document * record_bytes / PAGE_BYTES * (LATENCY_S["QueryPage"] - LATENCY_S["Query"])
    live_s = snapshot_s + latency(live_calls) + transfer + n * per_document * chunk_cpu / CPU_SHARE
    live_mb = snapshot_mb + min(per_document, 1000) * chunk_mem / 2**20 + 3 * chunk_page_bytes / 2**20
    live_pages = math.ceil(documents / n)
    # cached answers: the answers and the documents they rest on in batches of 100.
    n = PAGE_ITEMS["caches"]
    cache_calls = {op: a * n + b for op, (a, b) in caches.items()}
    # the corpus above rests its answers on few documents; at scale a step's 100 answers rest on about 100
    cache_calls["BatchGetItem"] = 2 * math.ceil(n / 100)
    cache_calls["PutItem"] = math.ceil(n / STEP_ITEMS["caches"])
    cache_s = latency(cache_calls) + n * (answer_cpu + doc_cpu) / CPU_SHARE
    cache_mb = STEP_ITEMS["caches"] * (answer_mem + doc_mem) / 2**20
    cache_pages = math.ceil(answers / n)
    # conversations: each read, its owner's history once a page, its turns' answers in batches.
    n = PAGE_ITEMS["conversations"]
    talk_calls = {op: a * n + b for op, (a, b) in conversations.items()}
    talk_calls["PutItem"] = math.ceil(n / STEP_ITEMS["conversations"])
    talk_s = latency(talk_calls) + n * (talk_cpu + SCALE["turns"] * answer_cpu) / CPU_SHARE
    talk_mb = STEP_ITEMS["conversations"] * (talk_mem + SCALE["turns"] * answer_mem) / 2**20
    talk_pages = math.ceil(talks / n)
    # citations: each cited document's record (batches of 100), and its X# entries at revisions other
    # than the served one: two key ranges, nothing read of a consistent corpus's entries.
    n = PAGE_ITEMS["citations"]
    cited_calls = {op: a * n + b for op, (a, b) in cited.items()}
    cited_calls["BatchGetItem"] = math.ceil(n / 100)  # the corpus above has under 100 documents: one batch a run
    cited_calls["PutItem"] = math.ceil(n / STEP_ITEMS["citations"])
    cited_s = latency(cited_calls) + n * doc_cpu / CPU_SHARE
    cited_mb = STEP_ITEMS["citations"] * doc_mem / 2**20
    cited_pages = math.ceil(documents / n)
    # the plan (the schedule's invocation): the snapshot, the index's aggregations, the keys of the
    # cited documents (about 60 B a marker), cached answers (about 150 B an entry) and conversations
    # (read whole: the projection saves bytes sent, not pages), and the pages sent 10 a SendMessageBatch.
    plan_pages = (math.ceil(documents * 60 / PAGE_BYTES) + math.ceil(answers * 150 / PAGE_BYTES)
                  + math.ceil(talks * last["conversation_bytes"] / PAGE_BYTES))
    total_pages = 1 + live_pages + 4 + cited_pages + cache_pages + talk_pages + 1 + 16 + 3 + 1
    aggregation_s = 2 * math.ceil(documents / 1000) * 0.2  # the index's two inventories: composite pages of 1,000 buckets
    sent_s = math.ceil(total_pages / 10) * LATENCY_S["SendMessageBatch"]
    plan_s = snapshot_s + aggregation_s + plan_pages * LATENCY_S["QueryPage"] + sent_s
    plan_mb = snapshot_mb + (answers + talks) * 200 / 2**20 + documents * 400 / 2**20
    # the whole checks: each its inventory.
    objects_s = snapshot_s + 4 * math.ceil(documents / 1000) * LATENCY_S["ListObjectsV2"]
    range_mb = reference_queries / 16 * 120 / 2**20
    rows = [
        ("plan (schedule: expunge, inventories, send)", 1, plan_s, plan_mb),
        (f"live ({PAGE_ITEMS['live']} documents, {per_document * PAGE_ITEMS['live']:,} chunk records)", live_pages, live_s,
         live_mb),
        (f"caches ({PAGE_ITEMS['caches']} cached answers)", cache_pages, cache_s, cache_mb),
        (f"conversations ({PAGE_ITEMS['conversations']}, {SCALE['turns']} turns each)", talk_pages, talk_s, talk_mb),
        ("embeddings (a 16th of the hashes)", 16, range_s, range_mb),
        (f"citations ({PAGE_ITEMS['citations']} cited documents)", cited_pages, cited_s, cited_mb),
        ("objects (4 prefixes listed)", 1, objects_s, snapshot_mb),
    ]
    print(f"\naudit pages at {chunks:,} chunks, {documents:,} documents, {answers:,} cached answers, {talks:,} conversations "
          f"(Lambda: 900 s, {FUNCTION_MB} MB; CPU at {CPU_SHARE:.2f} of a core):")
    for name, count, seconds, mb in rows:
        print(f"    {name:<58} {count:>4} pages  {seconds:7.1f} s each  {mb:6.1f} MB each")
    busy = sum(count * seconds for _, count, seconds, _ in rows) + 8 * snapshot_s  # the other whole checks: about a snapshot each
    wall = plan_s + (busy - plan_s) / CONCURRENCY
    print(f"    {total_pages} pages; {busy:,.0f} s of function time; about {wall / 60:.1f} min from the schedule to the last "
          f"page at {CONCURRENCY} at once (the slowest page {max(s for _, _, s, _ in rows):.0f} s of 900)")

    # What the run costs: requests, read units (eventually consistent 0.5 per 4 KB, strongly 1), GB-s.
    ru = {
        "chunk records": chunks * record_bytes / 4096 * 0.5,
        "embedding keys": embedding_pages * PAGE_BYTES / 4096 * 0.5,
        "reference Queries": reference_queries,  # strongly consistent, 1 unit each
        "documents (snapshots)": (live_pages + 11) * documents * (last["document_bytes"] + 60) / 4096 * 0.5,
        "cited documents' records and X# ranges": documents * (1 + 2 * 0.5),  # strongly consistent gets, 2 Queries
        "cached answers and turns": (answers + talks * SCALE["turns"]) * math.ceil(last["answer_bytes"] / 4096),
        "conversations": talks * math.ceil(last["conversation_bytes"] / 4096) * 2,  # read, and again in the owner's history
    }
    requests = {"DynamoDB": (live_pages * sum(v for k, v in live_calls.items() if k != "HeadObject")
                             + cited_pages * sum(cited_calls.values()) + cache_pages * sum(cache_calls.values())
                             + talk_pages * sum(talk_calls.values())
                             + reference_queries + embedding_pages + documents),
                "S3 HeadObject": documents, "SQS": 3 * total_pages}
    gb_s = busy * FUNCTION_MB / 1024
    cost = (sum(ru.values()) * PRICES["rru"] + (live_pages * live_calls["PutItem"] + cache_pages * cache_calls["PutItem"]
            + cited_pages * cited_calls["PutItem"]
            + talk_pages * talk_calls["PutItem"]) * PRICES["wru"] + gb_s * PRICES["gb_s"] + documents * PRICES["s3_get"]
            + requests["SQS"] * PRICES["sqs"])
    print("    read units: " + ", ".join(f"{k} {v:,.0f}" for k, v in ru.items()) + f"; total {sum(ru.values()):,.0f}")
    print("    requests: " + ", ".join(f"{k} {v:,.0f}" for k, v in requests.items())
          + f"; Lambda {gb_s:,.0f} GB-s; about ${cost:.2f} a run, ${cost * 4 * 30:.0f} a month at 4 runs a day")


if __name__ == "__main__":
    main()
