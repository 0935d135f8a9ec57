"""Shared fixtures: real local stores in a temporary folder, one real embedding model per
session, and the cloud stores on moto built the way the stack builds them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from citewell.chunking import Chunker
from citewell.embedders.minilm import MiniLMEmbedder
from citewell.index.sqlite import SqliteSearchIndex
from citewell.metadata.dynamodb import TABLE_DEFINITION, DynamoMetadataStore
from citewell.metadata.sqlite import SqliteMetadataStore
from citewell.objects.folder import FolderObjectStore
from citewell.objects.s3 import S3ObjectStore
from citewell.ports import Embedder
from citewell.services import Services, records


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def make_services(home: Path, model: MiniLMEmbedder, embedder: Embedder | None = None) -> Services:
    """Real stores under ``home``; chunks are counted in ``model``'s tokens, vectors come from ``embedder``."""
    return Services(
        objects=FolderObjectStore(home / "objects"),
        **records(SqliteMetadataStore(home / "metadata.db")),
        index=SqliteSearchIndex(home / "index.db"),
        embedder=embedder or model,
        chunker=Chunker(model.count_tokens),
    )


@contextmanager
def moto_dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoMetadataStore]:
    """A DynamoDB MetadataStore on moto, its table defined as the stack defines it."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        resource = boto3.resource("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
        resource.create_table(TableName="citewell-metadata", **TABLE_DEFINITION)
        yield DynamoMetadataStore("citewell-metadata", resource)


@contextmanager
def moto_bucket(monkeypatch: pytest.MonkeyPatch, name: str = "citewell-test") -> Iterator[S3ObjectStore]:
    """An S3 ObjectStore on a versioned moto bucket, as the stack creates it."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        client = boto3.client("s3", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
        client.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        yield S3ObjectStore(name, client)


@pytest.fixture(params=["sqlite", "dynamodb"])
def services(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Services]:
    """Real local stores; the metadata store is SQLite or DynamoDB (moto), so every
    behaviour test also holds the cloud adapter to the same contract."""
    services = make_services(tmp_path, embedder)
    if request.param == "sqlite":
        yield services
        return
    with moto_dynamodb(monkeypatch) as store:
        yield replace(services, **records(store))


@pytest.fixture(scope="session")
def stack_template(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The stack's CloudFormation template (tests.aws_roles.synthesize), once a session."""
    pytest.importorskip("aws_cdk")
    from tests.aws_roles import synthesize

    return synthesize(tmp_path_factory.mktemp("synth"))


@pytest.fixture(scope="session")
def function_roles(stack_template: dict) -> dict[str, list[dict]]:
    """Each function's policy documents as the stack synthesizes them (tests.aws_roles)."""
    from tests.aws_roles import roles

    return roles(stack_template)


@pytest.fixture(scope="session")
def function_limits(stack_template: dict) -> dict:
    """Each function's memory and timeout as the stack synthesizes them (tests.strict_aws)."""
    from tests.strict_aws import function_limits

    return function_limits(stack_template)


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser tests write their screenshots: this run's temporary folder, or the
    folder ``CITEWELL_SCREENSHOTS`` names (``make screenshots``: docs/screenshots)."""
    from tests.web_browser import screenshot_folder

    return screenshot_folder(tmp_path_factory)
