"""The local twin of S3's presigned POST: a signed form for one upload's own key.

``POST /documents`` returns ``{"url", "fields"}`` exactly as on AWS; the client posts the
fields and then the file as ``multipart/form-data`` to the URL. The fields hold a policy (the
key, the size limit, the expiry) and its HMAC under a secret of this server process, so a
form cannot be changed to write another key, a larger file or after it expired; like a
presigned POST it needs no bearer token. A form is good for one file: its key names one
upload.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time
from typing import Any

from citewell.errors import CitewellError

UPLOAD_PATH = "/uploads"


class FormRefused(CitewellError):
    """The form is not one this server signed, or it expired: 403, as S3 answers."""

    code = "AccessDenied"


class UploadSigner:
    """Signs and checks upload forms; the secret lives only in this process (a restart voids open forms)."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or os.urandom(32)

    def _signature(self, policy: str) -> str:
        return hmac.new(self._secret, policy.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def form(self, key: str, max_bytes: int, expires_in: int, origin: str) -> dict[str, Any]:
        policy = base64.b64encode(json.dumps(
            {"key": key, "max_bytes": max_bytes, "expires": int(time.time()) + expires_in}, separators=(",", ":")
        ).encode()).decode("ascii")
        return {"url": origin + UPLOAD_PATH,
                "fields": {"key": key, "policy": policy, "x-citewell-signature": self._signature(policy)}}

    def check(self, fields: dict[str, str]) -> tuple[str, int]:
        """The key and size limit the form's policy grants, or :class:`FormRefused`."""
        policy, signature, key = fields.get("policy", ""), fields.get("x-citewell-signature", ""), fields.get("key", "")
        if not policy or not signature or not key:
            raise FormRefused("the form needs its key, policy and x-citewell-signature fields before the file, "
                              "as POST /documents returned them")
        # As bytes: compare_digest refuses str with non-ASCII characters (a TypeError, a 500).
        if not hmac.compare_digest(self._signature(policy).encode(), signature.encode("utf-8", "surrogatepass")):
            raise FormRefused("the form's signature does not match its policy: send the fields unchanged")
        granted = json.loads(base64.b64decode(policy))
        if granted["key"] != key:
            raise FormRefused("the key is not the one the form was signed for")
        if granted["expires"] < time.time():
            raise FormRefused("the upload form has expired: create the document again for a new one")
        return key, int(granted["max_bytes"])
