"""The AWS wiring (``services_from_env``, what every function starts with) builds the embedder
``CITEWELL_EMBEDDER`` names from its own variables: ``openai`` from ``CITEWELL_OPENAI_*``
(docs/aws.md, docs/configuration.md), embedding through that endpoint with that key."""

from __future__ import annotations

import boto3
import numpy as np
import pytest
from moto import mock_aws

from citewell.embedders.remote import OpenAICompatibleEmbedder
from citewell.lambdas.settings import services_from_env
from tests import fake_model_service
from tests.fake_model_service import Reply


@pytest.fixture
def model_service():
    service, server = fake_model_service.start()
    yield service
    server.shutdown()


def test_an_openai_compatible_embedder_is_built_from_its_variables(monkeypatch, model_service):
    env = {
        "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
        "CITEWELL_BUCKET": "citewell-documents", "CITEWELL_TABLE": "citewell-metadata",
        "CITEWELL_OPENSEARCH_URL": "http://127.0.0.1:9", "CITEWELL_EMBEDDER": "openai",
        "CITEWELL_OPENAI_BASE_URL": model_service.url, "CITEWELL_OPENAI_EMBED_MODEL": "house-embed",
        "CITEWELL_OPENAI_EMBED_DIMS": "2", "CITEWELL_OPENAI_API_KEY": "house-key",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        boto3.setup_default_session()
        services_from_env.cache_clear()
        try:
            settings, services = services_from_env()
        finally:
            services_from_env.cache_clear()
            boto3.DEFAULT_SESSION = None
    assert settings.embedder == "openai"
    embedder = services.embedder
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.identity == "house-embed@1:2"
    model_service.replies.append(Reply(body={"data": [{"index": 0, "embedding": [3.0, 4.0]}]}))
    assert np.allclose(embedder.embed(["annual leave"]), [[0.6, 0.8]])
    request = model_service.requests[-1]
    assert request["path"] == "/v1/embeddings"
    assert request["json"] == {"model": "house-embed", "input": ["annual leave"]}
    assert request["headers"]["Authorization"] == "Bearer house-key"
