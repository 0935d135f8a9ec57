"""Object keys of raw uploads and stage artifacts. One place, so every store agrees."""

from __future__ import annotations

RAW = "raw"
PARSED = "parsed"
CHUNKS = "chunks"


def raw_key(tenant: str, document_id: str) -> str:
    return f"{RAW}/{tenant}/{document_id}"


def parsed_key(tenant: str, document_id: str, revision: str) -> str:
    return f"{PARSED}/{tenant}/{document_id}/{revision}.json"


def chunks_key(tenant: str, document_id: str, revision: str) -> str:
    return f"{CHUNKS}/{tenant}/{document_id}/{revision}.json"
