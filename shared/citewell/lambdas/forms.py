"""One-use upload forms on S3: what parse admits of the objects under an upload's key.

S3 accepts a presigned POST as often as it is sent until it expires, and the (versioned)
bucket keeps each send as a new version of the form's key. The key names one upload, so a
form can write nothing but its own upload's key; parse, the first stage to see an object,
makes the form good for one file:

- an object whose upload has no intent left (its document was deleted or replaced, or the
  upload failed) is refused and removed;
- the intent records the first version of its key (:meth:`DynamoMetadataStore.claim_upload`),
  once; every other version is a replay, refused and removed;
- parse reads the admitted version, never the latest (a replay landing mid-parse is not read).

A redelivered notification of the admitted object finds the same claim and goes on as before
(the stages are idempotent); a replay's own notification is acknowledged, not retried.
``citewell serve`` refuses the same replays as they are posted
(:meth:`citewell.serve.app.Server.accept_upload`): there, a stored key means its form was used.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel, ConfigDict

from citewell.keys import ObjectKey
from citewell.models.documents import Upload
from citewell.objects.s3 import ObjectVersion, S3ObjectStore
from citewell.ports import ClaimingUploads
from citewell.services import Services


class Notified(BaseModel):
    """The object an S3 notification names: its key, and the version and ETag when S3 sends them."""

    model_config = ConfigDict(frozen=True)

    key: str
    version_id: str | None = None
    etag: str | None = None

    def names(self, version: ObjectVersion) -> bool:
        """Whether this notification is of ``version``; one that says neither is taken to be."""
        if self.version_id:
            return self.version_id == version.version_id
        return not self.etag or self.etag.strip('"') == version.etag


def received(version: ObjectVersion) -> str:
    """What an intent records of the object that used its form (the ETag tells sends apart in an
    unversioned bucket, where every version is ``null``)."""
    return f"{version.version_id}/{version.etag}"


def admit(services: Services, notified: Notified, found: ObjectKey, upload: Upload | None) -> Services | str:
    """The services parse runs with (reading the admitted version), or why the object was refused."""
    key = notified.key
    if upload is None:
        return _unowned(services, key, found)
    objects, uploads = services.objects, services.uploads
    if not isinstance(objects, S3ObjectStore) or not isinstance(uploads, ClaimingUploads):
        return services  # a store keeping one object per key: its writer refuses a second one
    versions = objects.versions(key)
    if not versions:
        return services  # removed before it was read: parse records upload_missing
    claimed = uploads.claim_upload(upload.tenant, upload.document_id, upload.upload_id, received(versions[0]))
    if claimed is None:  # the intent went while this ran (a delete, or a newer upload published)
        return _unowned(services, key, found)
    admitted = next((v for v in versions if received(v) == claimed), None)
    for version in versions:
        if version is not admitted:
            objects.delete_version(key, version.version_id)
    if admitted is None or not notified.names(admitted):
        return f"refused {key}: its upload form was used already; this send of it was removed"
    return replace(services, objects=objects.pinned(key, admitted.version_id))


def _unowned(services: Services, key: str, found: ObjectKey) -> str:
    """No intent holds this key, so nothing may read what is under it: every version goes. The
    served upload keeps its intent; its key is never removed here (that would delete the document)."""
    document = services.documents.get_document(found.tenant, found.document_id)
    if document is not None and document.active_upload == found.upload_id:
        return f"ignored {key}: the upload that is served has no intent"
    services.objects.delete(key)
    return f"refused {key}: no upload is open for it (its document was deleted or replaced); the object was removed"
