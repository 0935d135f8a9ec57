"""The ingestion chain on AWS: each object the previous stage writes triggers the next one.

``raw/`` -> parse (writes ``parsed/``) -> chunk (writes ``chunks/``) -> embed (writes the
``embedded/`` marker) -> publish. Every key names its upload; each stage loads that upload's
intent and works from it; parse first admits the object (:mod:`citewell.lambdas.forms`): one per
upload form, none for an upload without an intent. A message for an upload that is no longer
current (a newer upload of the document, or its delete, came first) is acknowledged as a
no-op, never retried; so is a refused object, and a scan whose OCR job is still running (the
job's completion, through the OCR queue, runs parse again: :func:`resume_ocr`). Bad input is recorded on the document and not
retried; anything else raises so the queue retries and, in the end, dead-letters it. Embed and
publish refuse to work for an index built for another model than theirs (the window between a
migration's switch and the redeploy: EmbedderSwitched), so the queue retries the message until a
redeployed container takes it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

from citewell.errors import IngestError, InvalidInput, NotFound, OcrPending, TooLarge
from citewell.ingest.artifacts import read_chunks
from citewell.ingest.stages import (
    EMBED_PAGE,
    abandon,
    chunk_stage,
    embed_stage,
    parse_stage,
    publish_stage,
    record_failure,
    release_embeddings,
)
from citewell.keys import CHUNKS, EMBEDDED, PARSED, RAW, ObjectKey, chunks_key, embedded_key, ocr_key, parse_key
from citewell.lambdas.forms import Notified, admit
from citewell.models.documents import Upload
from citewell.objects.s3 import S3ObjectStore
from citewell.ocr.textract_jobs import TextractWithJobs, completion
from citewell.ports import EmbedderCheckedIndex, SizedObjects
from citewell.records import is_current
from citewell.services import Services

STAGE_OF_PREFIX = {RAW: "parse", PARSED: "chunk", CHUNKS: "embed", EMBEDDED: "publish"}


def delete_removed(services: Services, key: str) -> str:
    """The served upload's raw object was removed from the bucket: run the deletion cascade.

    Our own clean-up removes raw objects of replaced or abandoned uploads; those are ignored."""
    from citewell.deletion import delete_document

    try:
        found = parse_key(key)
    except InvalidInput:
        return f"ignored {key}: not a citewell object key"
    if found.stage != RAW:
        return f"ignored {key}: not an upload"
    if services.objects.exists(key):
        return f"ignored {key}: it is still there"
    document = services.documents.get_document(found.tenant, found.document_id)
    if document is None or document.active_upload != found.upload_id:
        return f"ignored {key}: not the upload that is served"
    try:
        report = delete_document(services, found.tenant, found.document_id)
    except NotFound:
        return f"ignored {key}: already deleted"
    return f"deleted {found.document_id}: {report.removed}"


def run_stage(services: Services, stage: str, key: str, notified: Notified | None = None) -> str:
    """Run ``stage`` for the object ``key`` (``notified``: what the notification said of it);
    returns what happened, for the log."""
    if stage == "delete":
        return delete_removed(services, key)
    try:
        found = parse_key(key)
    except InvalidInput:
        return f"ignored {key}: not a citewell object key"
    if STAGE_OF_PREFIX.get(found.stage) != stage:
        return f"ignored {key}: not an input of {stage}"
    upload = services.uploads.get_upload(found.tenant, found.document_id, found.upload_id)
    if stage == "parse":
        admitted = admit(services, notified or Notified(key=key), found, upload)
        if isinstance(admitted, str):
            return admitted
        services = admitted
    if upload is None:
        return f"ignored {key}: its upload is no longer current (a newer upload or a delete came first)"
    name = f"{found.document_id}@{found.upload_id[:12]}"
    if stage == "parse":
        try:
            _check_size(services, key)
            outcome = parse_stage(_stored_ocr(services, key, found), upload)
        except OcrPending as pending:  # the job's completion runs parse again (resume_ocr)
            return f"waiting {name}: {pending.message}"
        except IngestError as error:
            record_failure(services, upload, error)
            return f"failed {name}: {error.code}"
        return f"{outcome.status} {name}"
    if stage == "chunk":
        chunked = chunk_stage(services, upload)
        return f"superseded {name}" if chunked is None else f"chunked {name}: {len(chunked.chunks)}"
    if stage == "embed":
        return _embed(services, upload, found)
    marker = _read(services, key)
    if marker is None:
        return f"ignored {key}: gone (its upload was superseded or deleted)"
    body = json.loads(marker)
    count = publish_stage(services, upload, body["revision"], body["content_sha256"], body.get("encoding"))
    return f"superseded {name}" if count is None else f"published {name}: {count} chunks"


def resume_ocr(services: Services, body: str) -> str:
    """A Textract job's completion (SNS, through the OCR queue): parse its upload again, which now
    reads the job's pages. Only a notification of this bucket's uploads is acted on; the stage
    itself finds the upload's job and its status, and trusts nothing else the message says."""
    done = completion(body)
    if done is None:
        return "ignored a message that is no Textract completion"
    if not isinstance(services.objects, S3ObjectStore) or done.bucket != services.objects.bucket:
        return f"ignored the completion of job {done.JobId}: not of this bucket"
    return run_stage(services, "parse", done.key, Notified(key=done.key))


def _stored_ocr(services: Services, key: str, found: ObjectKey) -> Services:
    """Where the engine has an asynchronous route (the stack's Textract with its completion
    channel), parse reads this upload's scanned PDF or multi-page TIFF where it is stored, the
    version admitted, by one job whose record is kept under the upload's ``ocr/`` key."""
    ocr = services.ocr
    if not isinstance(ocr, TextractWithJobs) or not isinstance(services.objects, S3ObjectStore):
        return services
    record = ocr_key(found.tenant, found.document_id, found.upload_id)
    return replace(services, ocr=ocr.jobs.for_upload(ocr, services.objects, key, record, found.upload_id))


def _embed(services: Services, upload: Upload, found: ObjectKey) -> str:
    """Embed what the cache lacks of the upload's chunks, read from its artifact a page at a time
    (:func:`citewell.ingest.artifacts.read_chunks`), so the function holds one page whatever the
    revision's length; then write the marker that starts publish."""
    name = f"{found.document_id}@{found.upload_id[:12]}"
    if not is_current(services.documents.get_document(upload.tenant, upload.document_id), upload):
        abandon(services, upload)
        return f"superseded {name}"
    key = chunks_key(upload.tenant, upload.document_id, upload.upload_id)
    try:
        header, pages = read_chunks(services.objects, key, EMBED_PAGE)
    except NotFound:
        return f"ignored {name}: its chunks are gone (superseded or deleted)"
    # After a migration, a container from before the redeploy embeds for an index that is gone.
    if isinstance(services.index, EmbedderCheckedIndex):
        services.index.require_embedder(services.embedder.identity)
    embedded = count = 0
    for page in pages:
        embedded += embed_stage(services, page)
        count += len(page)
    if not is_current(services.documents.get_document(upload.tenant, upload.document_id), upload):
        _drop_superseded(services, upload, key, header.revision)  # what it cached goes too
        return f"superseded {name}"
    marker = {"revision": header.revision, "content_sha256": header.content_sha256, "encoding": header.encoding,
              "chunks": count}
    services.objects.put(embedded_key(upload.tenant, upload.document_id, upload.upload_id), json.dumps(marker).encode())
    return f"embedded {name}: {embedded} new of {count}"


def _drop_superseded(services: Services, upload: Upload, key: str, revision: str) -> None:
    """An upload superseded while it embedded: its revision's records and rows go, then the vectors
    it cached that no record uses (a newer upload's purge may have run before they were written),
    named by its artifact read again a page at a time, then the rest of what it wrote."""
    from citewell.deletion import purge_revision

    document = services.documents.get_document(upload.tenant, upload.document_id)
    if document is not None and document.active_upload == upload.upload_id:
        return  # served (a late redelivery): nothing of it goes
    purge_revision(services, upload.tenant, upload.document_id, revision, Counter())
    try:
        for page in read_chunks(services.objects, key, EMBED_PAGE)[1]:
            release_embeddings(services, page)
    except NotFound:  # another delivery's abandon took the artifact: it released them
        pass
    abandon(services, upload, revision)


def _check_size(services: Services, key: str) -> None:
    """An object over the limit is refused from its HeadObject length (of the admitted version),
    before a byte is read into the function's memory (the presigned POST already stops such
    uploads at S3)."""
    found = services.objects.size(key) if isinstance(services.objects, SizedObjects) else None
    if found is not None and found > services.max_bytes:
        raise TooLarge(f"{found:,} bytes is over the limit of {services.max_bytes:,} bytes")


def _read(services: Services, key: str) -> bytes | None:
    try:
        return services.objects.get(key)
    except NotFound:
        return None
