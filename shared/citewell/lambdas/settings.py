"""Configuration of the cloud deployment, from the Lambda environment."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from citewell.api.settings import ApiSettings
from citewell.services import Services, records
from citewell.settings import default_of, settings

if TYPE_CHECKING:
    from citewell.ports import Embedder


class AwsSettings(ApiSettings):
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

    @classmethod
    def from_env(cls) -> AwsSettings:
        found = settings()
        return cls(
            **cls.env_fields(),
            bucket=found.required("bucket"),
            table=found.required("table"),
            opensearch_url=found.opensearch_url,
            opensearch_host=found.opensearch_host,
            region=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
            index_alias=found.index_alias,
            embedder=found.embedder,
            bedrock_embed_model=found.bedrock_embed_model,
            max_bytes=found.max_bytes,
            ocr=found.ocr,
        )


def _embedder(config: AwsSettings) -> Embedder:
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


def open_aws(settings: AwsSettings) -> Services:
    import boto3

    from citewell.chunking import Chunker
    from citewell.embedders.minilm import MiniLMEmbedder
    from citewell.index.opensearch import OpenSearchIndex
    from citewell.metadata.dynamodb import DynamoMetadataStore
    from citewell.objects.s3 import S3ObjectStore, regional_client

    if settings.opensearch_url:
        from opensearchpy import OpenSearch

        index = OpenSearchIndex(OpenSearch(hosts=[settings.opensearch_url]), settings.index_alias)
    else:
        assert settings.opensearch_host, "CITEWELL_OPENSEARCH_HOST or CITEWELL_OPENSEARCH_URL must be set"
        index = OpenSearchIndex.connect(settings.opensearch_host, settings.region or "", settings.index_alias)
    embedder = _embedder(settings)  # the index is mapped from its identity on first write
    ocr = None
    if settings.ocr == "textract":
        from citewell.ocr.textract import TextractOcr

        ocr = TextractOcr(boto3.client("textract", region_name=settings.region))
    return Services(
        objects=S3ObjectStore(settings.bucket, regional_client(settings.region)),
        **records(DynamoMetadataStore(settings.table, boto3.resource("dynamodb", region_name=settings.region))),
        index=index,
        embedder=embedder,
        # Chunk budgets are counted in MiniLM word pieces whatever the embedder: a tokenizer
        # that ships with the package, close to the sub-word counts of the hosted models.
        chunker=Chunker(MiniLMEmbedder().count_tokens),
        max_bytes=settings.max_bytes,
        ocr=ocr,
    )


@lru_cache(maxsize=1)
def services_from_env() -> tuple[AwsSettings, Services]:
    """Built once per Lambda container, on first use."""
    settings = AwsSettings.from_env()
    return settings, open_aws(settings)
