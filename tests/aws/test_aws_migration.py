"""A new embedding model: the migration builds the index for the new identity beside the
served one, re-embeds every served revision, switches the alias in one step and drops the
old index. The new model stands in for a hosted one: words hashed into 64 dimensions."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from citewell.errors import EmbedderMismatch, EmbedderSwitched
from citewell.index import opensearch
from citewell.index.opensearch import OpenSearchIndex
from citewell.keys import chunks_key, embedded_key
from citewell.lambdas.migrate import migrate
from citewell.lambdas.pipeline import run_stage
from citewell.lambdas.settings import services_from_env
from citewell.models.identity import Identity
from citewell.search import search
from tests.aws.test_aws_chain import HANDBOOK, LambdaContext, api, aws, knn_proxy, pump, sqs_event, upload  # noqa: F401


class HashedWords:
    identity = "hashed-words@1:64"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in re.findall(r"\w+", text.lower()):
                row[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
        return rows / np.clip(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12, None)


def test_a_new_model_gets_a_new_index_switched_in_one_step(aws):
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    services = services_from_env()[1]
    client, alias = services.index.client, services.index.alias
    (old,) = client.indices.get_alias(name=alias)
    model, caller = HashedWords(), Identity(tenant="northpier", roles=frozenset({"staff"}))
    with pytest.raises(EmbedderMismatch):
        services.index.lanes("annual leave", model.embed(["annual leave"])[0], model.identity, caller, 5)

    report = migrate(services, model)

    assert report["switched"] and report["chunks"] == 2 and report["dropped"] == [old]
    (new,) = client.indices.get_alias(name=alias)
    assert new != old and not client.indices.exists(index=old)
    found = services.index.lanes("annual leave", model.embed(["paid annual leave per calendar year"])[0], model.identity, caller, 5)
    assert "27 days of paid annual leave" in found["vector"][0].text and found["bm25"]
    assert services.embeddings.get_embeddings(model.identity, [c.content_hash for c in services.chunks.get_chunks(
        "northpier", "handbook.md", services.documents.get_document("northpier", "handbook.md").active_revision)])
    assert migrate(services, model)["switched"] is False  # already there: nothing to do


def deliver(aws, prefix: str) -> tuple[dict, list[str]]:
    """One batch of ``prefix``'s queue to its stage, as SQS hands it: the reply, and the ids of its
    messages. What the reply lists as failed stays on the queue (SQS sends it again later)."""
    messages = aws["sqs"].receive_message(QueueUrl=aws["queues"][prefix], MaxNumberOfMessages=10)["Messages"]
    try:
        reply = aws["handlers"][prefix](sqs_event(messages), LambdaContext())
    except BatchProcessingError as error:  # every record failed: the invocation fails and SQS keeps them all
        assert all(isinstance(e[1], EmbedderSwitched) for e in error.child_exceptions), error
        reply = {"batchItemFailures": [{"itemIdentifier": m["MessageId"]} for m in messages]}
    for message in messages:
        if message["MessageId"] not in {f["itemIdentifier"] for f in reply["batchItemFailures"]}:
            aws["sqs"].delete_message(QueueUrl=aws["queues"][prefix], ReceiptHandle=message["ReceiptHandle"])
    return reply, [m["MessageId"] for m in messages]


def test_a_container_from_before_the_switch_writes_no_old_vectors_and_searches_lexically(aws, monkeypatch):
    """``migrate`` switches the alias while the functions' containers are warm with the old model
    (minilm): until the redeploy, embed and publish refuse (the queue retries them) and search
    answers from the lexical lane, saying so; the redeployed container then takes the retries."""
    upload(aws, "handbook.md", HANDBOOK)
    pump(aws)
    upload(aws, "sick.md", b"# Sick leave\n\nReport sickness to your shift lead before the shift starts.\n")
    for prefix in ("raw/", "parsed/", "chunks/"):  # embedded under the old model, not yet published
        assert deliver(aws, prefix)[0] == {"batchItemFailures": []}
    upload(aws, "rota.md", b"# Rota\n\nThe rota office publishes shifts four weeks ahead.\n")
    for prefix in ("raw/", "parsed/"):
        assert deliver(aws, prefix)[0] == {"batchItemFailures": []}
    status, before = api("POST", "/search", {"question": "annual leave days"})
    assert status == 200 and before["degraded"] == [] and before["hits"][0]["lanes"]["vector"]  # the container read the mapping

    warm = services_from_env()[1]  # what the warm containers hold; the operator migrates with services of their own
    model = HashedWords()
    operator = replace(warm, index=OpenSearchIndex(warm.index.client, warm.index.alias))
    assert migrate(operator, model)["switched"]

    refused, sent = deliver(aws, "embedded/")  # sick.md's publish, embedded by minilm before the switch
    assert refused == {"batchItemFailures": [{"itemIdentifier": m} for m in sent]}
    refused, sent = deliver(aws, "chunks/")  # rota.md's embed, asked of minilm after the switch
    assert refused == {"batchItemFailures": [{"itemIdentifier": m} for m in sent]}
    assert {(d, n) for _, d, _, n in warm.index.inventory()} == {("handbook.md", 2)}  # no minilm vector reached the new index
    assert warm.embeddings.get_embeddings(model.identity, [c.content_hash for c in warm.chunks.get_chunks(
        "northpier", "handbook.md", warm.documents.get_document("northpier", "handbook.md").active_revision)])
    assert warm.documents.get_document("northpier", "sick.md").status.value == "processing"

    monkeypatch.setattr(opensearch, "MAPPING_SECONDS", 0.0)  # the container's trust in what it read has run out
    status, during = api("POST", "/search", {"question": "annual leave days"})
    assert status == 200 and "27 days" in during["hits"][0]["text"]
    assert all(h["lanes"]["bm25"] and not h["lanes"]["vector"] for h in during["hits"])
    assert any("embedder_switched" in note and "redeployed" in note for note in during["degraded"]), during["degraded"]

    # The redeploy: containers built with the migrated model take the messages the queue retries.
    services_from_env.cache_clear()
    redeployed = replace(services_from_env()[1], embedder=model)
    rota = next(f["upload_id"] for f in aws["forms"].values() if f["document_id"] == "rota.md")
    assert run_stage(redeployed, "embed", chunks_key("northpier", "rota.md", rota)).startswith("embedded")
    assert run_stage(redeployed, "publish", embedded_key("northpier", "rota.md", rota)).startswith("published")
    found = search(redeployed, Identity(tenant="northpier", roles=frozenset({"staff"})), "rota office shifts weeks ahead")
    assert found.degraded == [] and found.hits[0].document_id == "rota.md" and found.hits[0].lanes.vector
