"""Object keys of raw uploads and stage artifacts, and the cache's namespaces. One place, so
every store, and every deletion and audit of them, agrees.

A key is ``STAGE/TENANT/DOCUMENT/UPLOAD``: the tenant and document id are validated here
(whatever the caller passed, no key leaves its tenant's prefix) and the document id is
percent-encoded into one path segment, so ``guide`` and ``guide/intro.md`` never share a
prefix. Everything is keyed by upload: each upload owns its objects and nobody else's.

The embedding cache keys a revision's unit vectors (the extractive answerer's) by
:func:`units_identity`, which deletion and the audit use too.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import quote, unquote

from citewell.errors import InvalidInput
from citewell.models.values import validate_document_id, validate_tenant, validate_token

RAW = "raw"
PARSED = "parsed"
CHUNKS = "chunks"
EMBEDDED = "embedded"
OCR = "ocr"  # what an OCR job read of an upload (and the job's id): kept so no retry pays for it again
STAGES = (RAW, PARSED, CHUNKS, EMBEDDED, OCR)
_SUFFIX = {RAW: "", PARSED: ".json", CHUNKS: ".json", EMBEDDED: ".json", OCR: ".json"}


class ObjectKey(NamedTuple):
    stage: str
    tenant: str
    document_id: str
    upload_id: str


def _checked(tenant: str, document_id: str) -> tuple[str, str]:
    try:
        return validate_tenant(tenant), quote(validate_document_id(document_id), safe="")
    except ValueError as error:
        raise InvalidInput(str(error)) from None


def document_prefix(stage: str, tenant: str, document_id: str) -> str:
    """Every object of one document at one stage, and nothing of any other document."""
    tenant, encoded = _checked(tenant, document_id)
    return f"{stage}/{tenant}/{encoded}/"


def object_key(stage: str, tenant: str, document_id: str, upload_id: str) -> str:
    try:
        validate_token(upload_id)
    except ValueError as error:
        raise InvalidInput(str(error)) from None
    return f"{document_prefix(stage, tenant, document_id)}{upload_id}{_SUFFIX[stage]}"


def raw_key(tenant: str, document_id: str, upload_id: str) -> str:
    return object_key(RAW, tenant, document_id, upload_id)


def parsed_key(tenant: str, document_id: str, upload_id: str) -> str:
    return object_key(PARSED, tenant, document_id, upload_id)


def chunks_key(tenant: str, document_id: str, upload_id: str) -> str:
    return object_key(CHUNKS, tenant, document_id, upload_id)


def embedded_key(tenant: str, document_id: str, upload_id: str) -> str:
    """A marker the embed stage writes when every chunk of an upload has its vector."""
    return object_key(EMBEDDED, tenant, document_id, upload_id)


def ocr_key(tenant: str, document_id: str, upload_id: str) -> str:
    """The pages an OCR job read of an upload's scan, and the job's id while it runs."""
    return object_key(OCR, tenant, document_id, upload_id)


def upload_keys(tenant: str, document_id: str, upload_id: str) -> list[str]:
    """Every object one upload can leave behind, its raw bytes included."""
    return [object_key(stage, tenant, document_id, upload_id) for stage in STAGES]


def parse_key(key: str) -> ObjectKey:
    """The parts of an object key; anything not built by :func:`object_key` is InvalidInput."""
    parts = key.split("/")
    if len(parts) != 4 or parts[0] not in STAGES or not parts[3].endswith(_SUFFIX[parts[0]]):
        raise InvalidInput(f"not a citewell object key: {key!r}")
    stage, tenant, encoded, name = parts
    found = ObjectKey(stage, tenant, unquote(encoded), name.removesuffix(_SUFFIX[stage]) if _SUFFIX[stage] else name)
    if object_key(*found) != key:  # validates every part, and refuses a second spelling of one key
        raise InvalidInput(f"not a citewell object key: {key!r}")
    return found

def units_identity(embedder_identity: str, revision: str) -> str:
    """Where a revision's unit vectors are cached: a namespace per revision, so purging a
    revision drops exactly them, whatever units its passages were cut into."""
    return f"{embedder_identity}#units:{revision}"
