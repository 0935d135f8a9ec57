"""The two deployments, side by side: what each builds its :class:`~citewell.services.Services` from.

:func:`open_local` wires the embedded adapters under one folder (a folder of objects, SQLite
records, the SQLite and tantivy index, the packaged model, RapidOCR); :func:`open_aws` wires the
AWS ones (S3, DynamoDB, OpenSearch, a hosted or the packaged embedder, Textract) from
:class:`AwsDeployment`, which the Lambda runtime reads from its environment
(:class:`citewell.lambdas.settings.AwsSettings`). Each imports its adapters when called, never at
import: a Lambda's cold start loads none of the embedded engines, and the CLI none of boto3's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from citewell.chunking import Chunker, ChunkingConfig
from citewell.services import Services, records
from citewell.settings import default_of, settings

if TYPE_CHECKING:
    from citewell.ports import Embedder


# -- on one machine: everything under one folder ----------------------------------------------


def default_home() -> Path:
    """``CITEWELL_HOME`` if set, else the per-user data folder."""
    if found := settings().home:
        return found
    from platformdirs import user_data_path

    return user_data_path("citewell")


def home_folder(home: Path) -> Path:
    """``home``, created if missing; a clear error if it is a file or cannot be created."""
    from citewell.errors import HomeNotWritable, InvalidInput

    home = home.expanduser()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InvalidInput(f"the home {home} is not a folder (a file has that name or is on its path)") from None
    except PermissionError:
        raise HomeNotWritable(f"cannot create the home {home}: no permission to write in {home.parent}") from None
    return home


def open_local(home: Path | None = None, *, chunking: ChunkingConfig | None = None, existing: bool = False) -> Services:
    """Everything under ``home``: ``objects/``, ``metadata.db``, ``index.db``. With ``existing``
    (a command that reads, or changes what is there) a home nothing was ingested into is an
    error, not a new empty home: a mistyped ``--home`` would otherwise answer "no documents"
    and leave databases behind."""
    from citewell.embedders.minilm import MiniLMEmbedder
    from citewell.errors import NotFound
    from citewell.index.sqlite import SqliteSearchIndex
    from citewell.metadata.sqlite import SqliteMetadataStore
    from citewell.objects.folder import FolderObjectStore
    from citewell.ocr.rapid import embedded_engine

    home = (home or default_home()).expanduser()
    if existing and not (home / "metadata.db").exists():  # a folder in its place is named by the store
        if not any(p.exists() and not p.is_dir() for p in (home, *home.parents)):  # a file in the way: below
            raise NotFound(f"there is no citewell home at {home}: nothing was ingested there (check --home, or ingest first)")
    home = home_folder(home)
    embedder = MiniLMEmbedder()
    found = settings()
    max_bytes = found.max_bytes
    chunking = chunking or ChunkingConfig(max_tokens=found.chunk_tokens, overlap_tokens=found.chunk_overlap)
    return Services(
        objects=FolderObjectStore(home / "objects"),
        **records(SqliteMetadataStore(home / "metadata.db")),
        index=SqliteSearchIndex(home / "index.db"),
        embedder=embedder,
        chunker=Chunker(embedder.count_tokens, chunking),
        max_bytes=max_bytes,
        ocr=embedded_engine(),
    )


# -- on AWS: a bucket, a table, a search domain -------------------------------------------------


class AwsDeployment(BaseModel):
    """What the AWS services are built from: the stack's resources, the embedder and OCR it names."""

    bucket: str
    table: str
    opensearch_url: str | None = None  # a plain endpoint (tests, self-managed); else host + SigV4
    opensearch_host: str | None = None
    region: str | None = None
    index_alias: str = default_of("index_alias")
    embedder: Literal["bedrock", "openai", "minilm"] = default_of("embedder")
    bedrock_embed_model: str = default_of("bedrock_embed_model")
    max_bytes: int = default_of("max_bytes")
    # textract: scans read by Amazon Textract (the stack sets it where uploads are parsed)
    ocr: Literal["none", "textract"] = default_of("ocr")
    # a scanned PDF read by an asynchronous job: where Textract publishes its completion, and as whom
    textract_topic_arn: str | None = None
    textract_role_arn: str | None = None

    @staticmethod
    def deployment_fields() -> dict[str, Any]:
        """The fields from the Lambda environment (``CITEWELL_BUCKET``, ``CITEWELL_TABLE``, ...
        and ``AWS_REGION``), for the settings that read more of it."""
        found = settings()
        return {
            "bucket": found.required("bucket"),
            "table": found.required("table"),
            "opensearch_url": found.opensearch_url,
            "opensearch_host": found.opensearch_host,
            "region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
            "index_alias": found.index_alias,
            "embedder": found.embedder,
            "bedrock_embed_model": found.bedrock_embed_model,
            "max_bytes": found.max_bytes,
            "ocr": found.ocr,
            "textract_topic_arn": found.textract_topic_arn,
            "textract_role_arn": found.textract_role_arn,
        }


def _embedder(config: AwsDeployment) -> Embedder:
    """The embedder ``config`` names; ``openai`` reads its endpoint, model, dimensions and key from
    the CITEWELL_OPENAI_* variables (through :func:`citewell.settings.settings`)."""
    if config.embedder == "minilm":
        from citewell.embedders.minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    if config.embedder == "openai":
        from citewell.embedders.remote import OpenAICompatibleEmbedder

        found = settings()
        return OpenAICompatibleEmbedder(
            base_url=found.required("openai_base_url"), model=found.required("openai_embed_model"),
            dims=int(found.required("openai_embed_dims")), api_key=found.openai_api_key,
        )
    from citewell.embedders.remote import BedrockTitanEmbedder

    return BedrockTitanEmbedder(model_id=config.bedrock_embed_model, region=config.region)


def dynamodb_resource(region: str | None) -> Any:
    """The table's resource: a connection is given :data:`~citewell.boto_deadline.STORE_CONNECT_S` (not
    botocore's 60 s), so a request's call, connect and read, ends by its deadline."""
    import boto3
    from botocore.config import Config

    from citewell.boto_deadline import STORE_CONNECT_S

    return boto3.resource("dynamodb", region_name=region, config=Config(connect_timeout=STORE_CONNECT_S))


def open_aws(settings: AwsDeployment) -> Services:
    import boto3

    from citewell.embedders.minilm import MiniLMEmbedder
    from citewell.index.opensearch import OpenSearchIndex
    from citewell.metadata.dynamodb import DynamoMetadataStore
    from citewell.objects.s3 import S3ObjectStore, regional_client

    if settings.opensearch_url:
        from opensearchpy import OpenSearch

        from citewell.index.opensearch_deadline import BoundedUrllib3Connection

        index = OpenSearchIndex(OpenSearch(hosts=[settings.opensearch_url], connection_class=BoundedUrllib3Connection),
                                settings.index_alias)
    else:
        assert settings.opensearch_host, "CITEWELL_OPENSEARCH_HOST or CITEWELL_OPENSEARCH_URL must be set"
        index = OpenSearchIndex.connect(settings.opensearch_host, settings.region or "", settings.index_alias)
    embedder = _embedder(settings)  # the index is mapped from its identity on first write
    ocr = None
    if settings.ocr == "textract":
        from citewell.ocr.textract import TextractOcr
        from citewell.ocr.textract_jobs import Channel, TextractJobs, TextractWithJobs

        client = boto3.client("textract", region_name=settings.region)
        ocr = TextractOcr(client)
        if settings.textract_topic_arn and settings.textract_role_arn:
            ocr = TextractWithJobs(client, TextractJobs(client, Channel(settings.textract_topic_arn, settings.textract_role_arn)))
    return Services(
        objects=S3ObjectStore(settings.bucket, regional_client(settings.region)),
        **records(DynamoMetadataStore(settings.table, dynamodb_resource(settings.region))),
        index=index,
        embedder=embedder,
        # Chunk budgets are counted in MiniLM word pieces whatever the embedder: a tokenizer
        # that ships with the package, close to the sub-word counts of the hosted models.
        chunker=Chunker(MiniLMEmbedder().count_tokens),
        max_bytes=settings.max_bytes,
        ocr=ocr,
    )
