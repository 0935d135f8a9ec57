"""Every ``CITEWELL_*`` setting, in one typed model read from the environment.

One place names each variable, what it takes and its default, so a wrong value fails at once
with the variable's name and what it should be (``CITEWELL_MAX_BYTES must be a whole number of
bytes from 1, not 'abc'``) instead of a Python error from wherever it was first used. The
environment is read once per distinct set of values: a process reads it once, and a test that
changes a variable gets the new value.
"""

from __future__ import annotations

import ipaddress
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from citewell.errors import CitewellError

PREFIX = "CITEWELL_"
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_TOKENS = 200
DEFAULT_OVERLAP_TOKENS = 40
DEFAULT_BUDGET_CHARS = 6000
DEFAULT_BEDROCK_EMBED_MODEL = "amazon.titan-embed-text-v2:0"  # Titan Text Embeddings v2: the stack's default too
DEFAULT_STUCK_MINUTES = 60.0
DEFAULT_BUSY_SECONDS = 30.0
# What OCR reads of one file, counted from its headers before a page is decoded: a page takes
# seconds to read on a CPU (BENCHMARKS.md, "OCR"), so a small file of thousands of blank pages
# would be hours of work. 200 pages is a long scanned report; 2,000 megapixels is 200 A4
# pages at 300 dpi (8.7 MP each), or 57 at 600 dpi.
DEFAULT_OCR_MAX_PAGES = 200
DEFAULT_OCR_MAX_PIXELS = 2_000_000_000
# Textract's asynchronous text detection reads a PDF of at most 3,000 pages (and 500 MB): its own
# limit, and the default cap of a scan read that way (docs/aws.md, "Scans").
TEXTRACT_MAX_PAGES = 3000

_DAY = 24 * 3600.0
Seconds = Annotated[float, Field(gt=0, lt=_DAY, description="a number of seconds above 0 and under a day")]


def allow_entry(value: str) -> str:
    """One entry of the fetch allow-list (``CITEWELL_FETCH_ALLOW``, ``--allow-host``), checked: a
    CIDR or address, or a host name (lower-cased). Here beside the settings that read it; the
    fetch guard holds the addresses it names."""
    text = value.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        pass
    labels = text.split(".")
    if not text or len(text) > 253 or not all(label and len(label) <= 63 and label.replace("-", "").isalnum()
                                              and label.isascii() for label in labels):
        raise ValueError(f"an allowed host is a CIDR (10.0.0.0/8), an address or a host name, not {value!r}")
    return text


class InvalidSetting(CitewellError):
    """A ``CITEWELL_*`` variable holds a value its setting cannot take: the operator's to fix, so
    the CLI says which and the API answers 500 without naming it to the caller."""

    code = "invalid_setting"


class Settings(BaseSettings):
    """The descriptions are the error messages' "must be ...": say what a value takes."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_ignore_empty=True, extra="ignore", frozen=True)

    # Where the embedded default keeps its data, and what it takes in.
    home: Path | None = Field(None, description="a folder path")
    max_bytes: int = Field(DEFAULT_MAX_BYTES, ge=1, description="a whole number of bytes from 1")
    chunk_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=16, le=4096, description="a whole number of tokens from 16 to 4096")
    chunk_overlap: int = Field(DEFAULT_OVERLAP_TOKENS, ge=0, le=1024, description="a whole number of tokens from 0 to 1024")
    busy_seconds: float = Field(DEFAULT_BUSY_SECONDS, ge=0, lt=float("inf"), description="a number of seconds from 0")
    embed_threads: int = Field(0, ge=0, le=256, description="a whole number of threads (0: one per core)")
    stuck_minutes: float = Field(DEFAULT_STUCK_MINUTES, ge=0, lt=float("inf"), description="a number of minutes from 0")
    # A scan read by OCR (embedded or Textract): its pages, and the pixels of all of them.
    ocr_max_pages: int = Field(DEFAULT_OCR_MAX_PAGES, ge=1, le=1_000_000, description="a whole number of pages from 1")
    ocr_max_pixels: int = Field(DEFAULT_OCR_MAX_PIXELS, ge=1, description="a whole number of pixels from 1")

    # Fetching web pages: the operator's allow-list past the refused ranges (CIDRs or host names), and a fetch's time limit.
    fetch_allow: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="CIDRs (10.0.0.0/8, ::1/128) or host names, separated by commas")
    fetch_seconds: Seconds = 30.0
    # A PEM file of certificate authorities trusted for https pages beside the system's (an intranet's own CA).
    fetch_ca: Path | None = Field(None, description="the path of a PEM file of CA certificates")

    # Who answers.
    generator: Literal["extractive", "openai", "bedrock"] = Field(
        "extractive", description="extractive, openai or bedrock")
    generator_timeout: float = Field(30.0, gt=0, le=600, description="a number of seconds above 0, at most 600")
    conversation_days: float = Field(
        30.0, gt=0, le=3650, description="a number of days above 0, at most 3650 (how long a conversation's turns are kept)")
    evidence_chars: int = Field(DEFAULT_BUDGET_CHARS, ge=500, le=1_000_000,
                                description="a whole number of characters from 500")
    openai_base_url: str | None = Field(None, description="an http(s) URL")
    openai_model: str | None = None
    openai_api_key: str | None = None
    openai_embed_model: str | None = None
    openai_embed_dims: int | None = Field(None, ge=1, le=65536, description="a whole number of dimensions from 1")
    bedrock_model_id: str | None = None
    bedrock_embed_model: str = DEFAULT_BEDROCK_EMBED_MODEL

    # Query expansion (citewell.expansion): auto runs it through a model generator, never the extractive one.
    query_expansion: Literal["auto", "off"] = Field("auto", description="auto or off")

    # What reorders the read-back hits (citewell.rerankers).
    reranker: Literal["none", "http", "tei", "bedrock", "llm"] = Field("none", description="none, http, tei, bedrock or llm")
    rerank_url: str | None = Field(None, description="an http(s) URL")
    rerank_model: str | None = None
    rerank_api_key: str | None = None
    bedrock_rerank_model_arn: str | None = None
    rerank_depth: int = Field(30, ge=1, le=1000, description="a whole number of hits from 1 to 1000")
    rerank_timeout: float = Field(10.0, gt=0, le=600, description="a number of seconds above 0, at most 600")

    # The API, on every transport: which claims name the caller, which role writes, which lanes run.
    lanes: Annotated[tuple[Literal["bm25", "vector"], ...], NoDecode] = Field(
        ("bm25", "vector"), min_length=1, description="bm25, vector or both, separated by commas")
    tenant_claim: str = "custom:tenant"
    roles_claim: str = "cognito:groups"
    write_role: str = "citewell:write"

    # citewell serve.
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_jwks_url: str | None = Field(None, description="an http(s) URL")
    jwt_public_key: Path | None = Field(None, description="the path of a PEM file")
    oidc_issuer: str | None = Field(None, description="the issuer's https URL")
    oidc_client_id: str | None = None
    oidc_audience: str | None = None
    oidc_tenant_claim: str | None = None
    oidc_tenant: str | None = None
    oidc_groups_claim: str = "groups"
    oidc_group_roles: Path | None = Field(None, description="the path of a TOML file")
    oidc_scope: str = "openid"
    public_url: str | None = Field(None, description="http(s)://host[:port]")
    read_seconds: Seconds = 30.0
    idle_seconds: Seconds = 5.0
    idle_per_client: int = Field(32, ge=1, le=1_000_000, description="a whole number from 1")
    connections_per_client: int = Field(32, ge=1, le=1_000_000, description="a whole number from 1")
    upload_seconds: Seconds = 300.0
    grace_seconds: Seconds = 30.0

    # The AWS deployment (set by the stack on each function).
    bucket: str | None = None
    table: str | None = None
    opensearch_url: str | None = None
    opensearch_host: str | None = None
    index_alias: str = "citewell-chunks"
    fetch_queue_url: str | None = Field(None, description="an SQS queue URL")  # the API hands URL uploads to the fetch function
    audit_queue_url: str | None = Field(None, description="an SQS queue URL")  # the audit's pages, fanned out
    embedder: Literal["bedrock", "openai", "minilm"] = Field("bedrock", description="bedrock, openai or minilm")
    ocr: Literal["none", "textract"] = Field("none", description="none or textract")  # textract: scans read by Amazon Textract
    # A scanned PDF read by an asynchronous Textract job: the SNS topic its completion is published
    # to and the role Textract publishes it with (both set by the stack; without them pages are
    # read one synchronous call each), and the most pages such a PDF may have.
    textract_topic_arn: str | None = None
    textract_role_arn: str | None = None
    textract_max_pages: int = Field(TEXTRACT_MAX_PAGES, ge=1, le=TEXTRACT_MAX_PAGES,
                                    description=f"a whole number of pages from 1 to {TEXTRACT_MAX_PAGES:,}")

    @field_validator("lanes", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return tuple(x.strip().lower() for x in value.split(",") if x.strip()) if isinstance(value, str) else value

    @field_validator("fetch_allow", mode="before")
    @classmethod
    def _allow_list(cls, value: Any) -> Any:
        items = [x.strip() for x in value.split(",") if x.strip()] if isinstance(value, str) else value
        return tuple(allow_entry(x) for x in items)

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        return None if value is None else public_url(value)

    @field_validator("generator", "embedder", "ocr", "reranker", "query_expansion", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    def required(self, name: str) -> str:
        """A setting that the chosen generator or embedder cannot do without."""
        value = getattr(self, name)
        if value in (None, ""):
            raise InvalidSetting(f"{PREFIX}{name.upper()} must be set for this configuration")
        return str(value)


def default_of(name: str) -> Any:
    """The default of the setting ``name``: the models that carry a transport's share of the
    settings (the API's, ``citewell serve``'s, the Lambda functions') take their defaults from
    here, so each default is written once."""
    return Settings.model_fields[name].get_default(call_default_factory=True)


def public_url(raw: str) -> str:
    """``scheme://host[:port]`` as clients reach this server (what the upload form's URL starts
    with): no path, query, fragment or credentials, so a form never points anywhere else."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(raw.strip())
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password \
            or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{PREFIX}PUBLIC_URL must be http(s)://host[:port], not {raw!r}")
    return f"{parts.scheme}://{parts.netloc}"


def _message(error: ErrorDetails, values: dict[str, str]) -> str:
    field = str(error["loc"][0]) if error["loc"] else ""
    name = f"{PREFIX}{field.upper()}"
    info = Settings.model_fields.get(field)
    what = info.description if info and info.description else None
    if what is None:  # a Seconds field carries its description on the annotation's metadata
        what = next((m.description for m in (info.metadata if info else []) if getattr(m, "description", None)), None)
    raw = values.get(name)
    if str(error.get("msg", "")).startswith("Value error, ") and PREFIX in str(error["msg"]):
        return str(error["msg"]).removeprefix("Value error, ")
    return f"{name} must be {what or 'a valid value'}, not {raw!r}"


@lru_cache(maxsize=8)
def _read(values: tuple[tuple[str, str], ...]) -> Settings:
    try:
        return Settings()
    except ValidationError as error:
        found = dict(values)
        raise InvalidSetting("; ".join(_message(e, found) for e in error.errors())) from None


def settings() -> Settings:
    """The settings of this environment, validated; :class:`InvalidSetting` names every bad variable."""
    return _read(tuple(sorted((k, v) for k, v in os.environ.items() if k.upper().startswith(PREFIX))))
