"""ObjectStore on an S3 bucket. Deleting a key removes every version of it, not just the latest.

A multipart upload that was never completed or aborted keeps its parts (billed, holding raw
bytes) without any object showing in ``list``; ``temporaries`` names them so they can be aborted.

Clients sign with SigV4 against the bucket's regional endpoint: buckets refuse SigV2, and a
SigV4 URL for the global endpoint breaks on the redirect to the region.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple

from citewell.errors import NotFound
from citewell.objects import STREAM_BLOCK

UPLOAD = "?uploadId="  # joins a key and the id of an unfinished multipart upload in a temporary's key
DELETE_ATTEMPTS = 3  # DeleteObjects calls for the versions S3 reports it kept, before the delete raises
GONE = ("NoSuchKey", "NoSuchVersion")  # a version S3 cannot find is not there: deleted


class ObjectsNotDeleted(RuntimeError):
    """S3 kept versions of a key it was asked to delete (DeleteObjects answers 200 and lists each
    one in ``Errors``). The delete is not done: whoever asked retries it (a stage's message is
    redelivered, the API answers 500, the audit finds the object again)."""


class ObjectVersion(NamedTuple):
    """One version of a key: each send of a presigned POST is one (an unversioned bucket says ``null``)."""

    version_id: str
    etag: str
    size: int


def regional_client(region: str | None) -> Any:
    """An S3 client signing SigV4 for the regional endpoint (also in us-east-1)."""
    import boto3
    from botocore.config import Config

    config = Config(signature_version="s3v4", s3={"addressing_style": "virtual", "us_east_1_regional_endpoint": "regional"})
    return boto3.client("s3", region_name=region, config=config)


class S3ObjectStore:
    def __init__(self, bucket: str, client: Any = None, pins: dict[str, str] | None = None) -> None:
        self.client = client if client is not None else regional_client(None)
        self.bucket = bucket
        self._pins = dict(pins or {})  # key -> the version that ``get`` and ``size`` read

    def pinned(self, key: str, version_id: str) -> S3ObjectStore:
        """This store, reading ``version_id`` of ``key`` whatever is written over it later (a
        replayed upload form): parse reads the version it admitted, never the latest."""
        return S3ObjectStore(self.bucket, self.client, {**self._pins, key: version_id})

    def pin(self, key: str) -> str | None:
        """The version of ``key`` this store reads; None: the latest (an unversioned bucket's too)."""
        return self._version(key).get("VersionId")

    def _version(self, key: str) -> dict[str, str]:
        return {"VersionId": self._pins[key]} if key in self._pins and self._pins[key] != "null" else {}

    def upload_form(self, key: str, max_bytes: int, expires_in: int) -> dict[str, Any]:
        """A presigned POST for ``key``: S3 itself refuses a body outside 1..``max_bytes``
        (``content-length-range``), so an oversized upload never reaches the bucket."""
        form = self.client.generate_presigned_post(
            Bucket=self.bucket, Key=key, Conditions=[["content-length-range", 1, max_bytes]], ExpiresIn=expires_in)
        return {"url": form["url"], "fields": form["fields"]}

    def size(self, key: str) -> int | None:
        """The current object's length from HeadObject, so nothing is read to learn it; None if absent."""
        try:
            return int(self.client.head_object(Bucket=self.bucket, Key=key, **self._version(key))["ContentLength"])
        except self.client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def copy(self, source: str, key: str) -> None:
        """A server-side copy (CopyObject, up to 5 GB: every upload is held far below it), which
        S3 notifies as any other write: under ``raw/`` it starts the chain."""
        try:
            self.client.copy_object(Bucket=self.bucket, Key=key, CopySource={"Bucket": self.bucket, "Key": source})
        except self.client.exceptions.NoSuchKey:
            raise NotFound(f"no object {source!r}") from None
        except self.client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                raise NotFound(f"no object {source!r}") from None
            raise

    def get(self, key: str) -> bytes:
        return bytes(self._body(key).read())

    def stream(self, key: str) -> Iterator[bytes]:
        """The object in ranged GetObjects of ``STREAM_BLOCK`` bytes, each read whole when it is
        asked for: no connection waits on a reader that takes minutes over a block (the embed
        stage calls a model between them), and each range after the first is asked ``IfMatch``
        the first one's ETag, so a stream never joins two writes of a key (S3 answers 412)."""
        try:
            first = self._get(key, Range=f"bytes=0-{STREAM_BLOCK - 1}")
        except self.client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") == "InvalidRange":  # there, and empty
                return iter(())
            raise
        return self._ranges(key, first)

    def _ranges(self, key: str, first: dict[str, Any]) -> Iterator[bytes]:
        block = first["Body"].read()
        total = int(str(first.get("ContentRange") or f"/{len(block)}").rsplit("/", 1)[1])
        etag, offset = first["ETag"], len(block)
        if block:
            yield block
        while offset < total:
            reply = self._get(key, Range=f"bytes={offset}-{offset + STREAM_BLOCK - 1}", IfMatch=etag)
            block = reply["Body"].read()
            if not block:
                raise NotFound(f"object {key!r} ended at byte {offset:,} of {total:,}")
            offset += len(block)
            yield block

    def _body(self, key: str) -> Any:
        """The object's StreamingBody, nothing of it read yet; NotFound if there is none."""
        return self._get(key)["Body"]

    def _get(self, key: str, **ranged: str) -> dict[str, Any]:
        """GetObject of the version this store reads; NotFound if there is none."""
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key, **self._version(key), **ranged)
        except self.client.exceptions.NoSuchKey:
            raise NotFound(f"no object {key!r}") from None
        except self.client.exceptions.ClientError as error:  # a pinned version that was removed
            if error.response.get("Error", {}).get("Code") in ("NoSuchVersion", "404"):
                raise NotFound(f"no object {key!r}") from None
            raise

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except self.client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def delete(self, key: str) -> int:
        """Every version and delete marker of ``key``; returns 1 if there was a current object.

        A key from ``temporaries`` aborts that multipart upload (1 if it was still open).
        """
        if UPLOAD in key and self._abort(*key.rsplit(UPLOAD, 1)):
            return 1
        existed = self.exists(key)
        versions: list[dict[str, str]] = []
        for page in self.client.get_paginator("list_object_versions").paginate(Bucket=self.bucket, Prefix=key):
            for item in page.get("Versions", []) + page.get("DeleteMarkers", []):
                if item["Key"] == key:
                    versions.append({"Key": key, "VersionId": item["VersionId"]})
        for offset in range(0, len(versions), 1000):
            self._delete_versions(key, versions[offset : offset + 1000])
        if not versions and existed:  # an unversioned bucket
            self.client.delete_object(Bucket=self.bucket, Key=key)
        return 1 if existed else 0

    def _delete_versions(self, key: str, versions: list[dict[str, str]]) -> None:
        """Up to 1,000 versions in one DeleteObjects, then again those S3 reports it kept (a
        throttle or an internal error is often gone a moment later); raises if some stay."""
        for attempt in range(DELETE_ATTEMPTS):
            if attempt:
                time.sleep(0.1 * 2**attempt)
            reply = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": versions, "Quiet": True})
            errors = [e for e in reply.get("Errors", []) if e.get("Code") not in GONE]
            kept = {(e.get("Key"), e.get("VersionId")) for e in errors}
            versions = [v for v in versions if (v["Key"], v["VersionId"]) in kept or (v["Key"], None) in kept]
            if not versions:
                return
        first = errors[0]
        raise ObjectsNotDeleted(f"S3 kept {len(versions)} version(s) of {key!r} after {DELETE_ATTEMPTS} attempts; "
                                f"first: {first.get('Code')}: {first.get('Message')}")

    def versions(self, key: str) -> list[ObjectVersion]:
        """Every version of ``key`` (not delete markers), oldest first: S3 lists a key's versions newest first."""
        found: list[ObjectVersion] = []
        for page in self.client.get_paginator("list_object_versions").paginate(Bucket=self.bucket, Prefix=key):
            found += [ObjectVersion(str(item["VersionId"]), str(item["ETag"]).strip('"'), int(item["Size"]))
                      for item in page.get("Versions", []) if item["Key"] == key]
        return found[::-1]

    def delete_version(self, key: str, version_id: str) -> None:
        """One version of ``key``, leaving the others (the current one among them, unless it is this)."""
        if version_id == "null":  # an unversioned bucket: the object is its only version
            self.client.delete_object(Bucket=self.bucket, Key=key)
        else:
            self.client.delete_object(Bucket=self.bucket, Key=key, VersionId=version_id)

    def list(self, prefix: str) -> Iterator[str]:
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                yield item["Key"]

    def temporaries(self, prefix: str = "") -> builtins.list[tuple[str, float]]:
        """``(key?uploadId=id, age in seconds)`` of each multipart upload under ``prefix`` that was
        never completed or aborted: a young one may belong to a live writer."""
        now = datetime.now(UTC)
        found: list[tuple[str, float]] = []
        for page in self.client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket, Prefix=prefix):
            for upload in page.get("Uploads", []):
                age = max(0.0, (now - upload["Initiated"]).total_seconds())
                found.append((f"{upload['Key']}{UPLOAD}{upload['UploadId']}", age))
        return sorted(found)

    def _abort(self, key: str, upload_id: str) -> bool:
        """Abort one multipart upload; False if there is none (finished, aborted, or not an upload)."""
        try:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except self.client.exceptions.NoSuchUpload:
            return False
        return True
