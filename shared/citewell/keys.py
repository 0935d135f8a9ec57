"""Object keys of raw uploads and stage artifacts. One place, so every store agrees."""

from __future__ import annotations

RAW = "raw"
PARSED = "parsed"
CHUNKS = "chunks"
EMBEDDED = "embedded"


def raw_key(tenant: str, document_id: str) -> str:
    return f"{RAW}/{tenant}/{document_id}"


def parsed_key(tenant: str, document_id: str, revision: str) -> str:
    return f"{PARSED}/{tenant}/{document_id}/{revision}.json"


def chunks_key(tenant: str, document_id: str, revision: str) -> str:
    return f"{CHUNKS}/{tenant}/{document_id}/{revision}.json"


def embedded_key(tenant: str, document_id: str, revision: str) -> str:
    """A marker the embed stage writes when every chunk of a revision has its vector."""
    return f"{EMBEDDED}/{tenant}/{document_id}/{revision}.json"


def artifact_keys(tenant: str, document_id: str, revision: str) -> list[str]:
    """Every stage artifact one revision can leave behind."""
    return [
        parsed_key(tenant, document_id, revision),
        chunks_key(tenant, document_id, revision),
        embedded_key(tenant, document_id, revision),
    ]


def parse_key(key: str) -> tuple[str, str, str, str | None]:
    """``(stage, tenant, document_id, revision)`` of an object key; raw keys have no revision."""
    stage, tenant, rest = key.split("/", 2)
    if stage == RAW:
        return stage, tenant, rest, None
    document_id, _, name = rest.rpartition("/")
    return stage, tenant, document_id, name.removesuffix(".json")
