"""Remote embedders against botocore's Stubber and a local HTTP server."""

from __future__ import annotations

import io
import json

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from citewell.embedders.remote import BedrockTitanEmbedder, OpenAICompatibleEmbedder
from citewell.errors import EmbedderUnavailable
from tests import fake_model_service
from tests.fake_model_service import Reply


def titan_reply(vector: list[float]) -> dict:
    payload = json.dumps({"embedding": vector, "inputTextTokenCount": 3}).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def titan(dims: int = 4):
    client = boto3.client("bedrock-runtime", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    return client, Stubber(client), BedrockTitanEmbedder(dims=dims, client=client, workers=1, backoff=0.0)


def test_titan_embeds_retries_throttling_and_names_its_identity():
    client, stub, embedder = titan()
    params = {"modelId": "amazon.titan-embed-text-v2:0", "body": ANY, "contentType": "application/json", "accept": "application/json"}
    stub.add_response("invoke_model", titan_reply([3.0, 0.0, 4.0, 0.0]), params)
    stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    stub.add_response("invoke_model", titan_reply([0.0, 1.0, 0.0, 0.0]), params)
    with stub:
        vectors = embedder.embed(["first", "second"])
    assert np.allclose(vectors, [[0.6, 0, 0.8, 0], [0, 1, 0, 0]])
    assert embedder.identity == "amazon.titan-embed-text-v2@0:4"


@pytest.mark.parametrize("reply", ["access", "malformed", "wrong_dims"])
def test_titan_failures_are_typed(reply):
    client, stub, embedder = titan()
    if reply == "access":
        stub.add_client_error("invoke_model", service_error_code="AccessDeniedException", http_status_code=403)
    elif reply == "malformed":
        payload = b'{"nothing": 1}'
        stub.add_response("invoke_model", {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"})
    else:
        stub.add_response("invoke_model", titan_reply([1.0, 2.0]))
    with stub, pytest.raises(EmbedderUnavailable):
        embedder.embed(["text"])


@pytest.fixture
def service():
    svc, server = fake_model_service.start()
    yield svc
    server.shutdown()


def test_openai_compatible_embeddings_batch_retry_and_fail(service):
    embedder = OpenAICompatibleEmbedder(base_url=service.url, model="house-embed", dims=2, batch_size=2, backoff=0.01)
    service.replies.extend([
        Reply(body={"data": [{"index": 1, "embedding": [0.0, 2.0]}, {"index": 0, "embedding": [3.0, 4.0]}]}),
        Reply(status=503, body="busy"),
        Reply(body={"data": [{"index": 0, "embedding": [1.0, 0.0]}]}),
    ])
    vectors = embedder.embed(["a", "b", "c"])
    assert np.allclose(vectors, [[0.6, 0.8], [0, 1], [1, 0]])
    assert [r["json"]["input"] for r in service.requests] == [["a", "b"], ["c"], ["c"]]
    assert embedder.identity == "house-embed@1:2"
    service.replies.append(Reply(body={"data": [{"index": 0, "embedding": [1.0]}]}))
    with pytest.raises(EmbedderUnavailable, match="wrong shape"):
        embedder.embed(["d"])
    service.replies.append(Reply(status=400, body={"error": "bad"}))
    with pytest.raises(EmbedderUnavailable, match="HTTP 400"):
        embedder.embed(["e"])
