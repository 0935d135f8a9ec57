"""Shared fixtures: real local stores in a temporary folder, one real embedding model per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from citewell.chunking import Chunker
from citewell.embedders.minilm import MiniLMEmbedder
from citewell.local.index import SqliteSearchIndex
from citewell.local.metadata import SqliteMetadataStore
from citewell.local.objects import FolderObjectStore
from citewell.ports import Embedder
from citewell.services import Services


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def make_services(home: Path, model: MiniLMEmbedder, embedder: Embedder | None = None) -> Services:
    """Real stores under ``home``; chunks are counted in ``model``'s tokens, vectors come from ``embedder``."""
    return Services(
        objects=FolderObjectStore(home / "objects"),
        metadata=SqliteMetadataStore(home / "metadata.db"),
        index=SqliteSearchIndex(home / "index.db"),
        embedder=embedder or model,
        chunker=Chunker(model.count_tokens),
    )


@pytest.fixture(params=["sqlite", "dynamodb"])
def services(request: pytest.FixtureRequest, tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch):
    """Real local stores; the metadata store is SQLite or DynamoDB (moto), so every
    behaviour test also holds the cloud adapter to the same contract."""
    services = make_services(tmp_path, embedder)
    if request.param == "sqlite":
        yield services
        return
    import boto3
    from citewell.aws.metadata import TABLE_DEFINITION, DynamoMetadataStore
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        resource = boto3.resource("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
        resource.create_table(TableName="citewell-metadata", **TABLE_DEFINITION)
        services.metadata = DynamoMetadataStore("citewell-metadata", resource)
        yield services
