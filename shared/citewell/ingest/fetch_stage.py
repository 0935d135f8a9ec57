"""The fetch stage of a URL registered through the API: its bytes become the upload's raw object.

``POST /documents`` with ``{"url": ...}`` registers an upload whose source is the URL, as a file's
upload is registered before its bytes arrive; this step stands where the upload form stands.
It fetches through the guard (the operator's allow-list, never the caller's), as the site's
robots.txt allows (a page it disallows fails with code ``robots``, not fetched), sending the served
page's validators; a 304 hands on the served bytes. The validators the fetch answered are written
onto the upload intent before its bytes are stored: nobody follows the intent until then (the
bytes' arrival starts parse), so publish copies them to the record. A refused or failed fetch
fails the upload with its typed reason, the served revision staying served.
"""

from __future__ import annotations

from citewell.errors import CitewellError, NotFound, UploadMissing
from citewell.fetch.client import Fetcher
from citewell.fetch.robots import fetch_page
from citewell.ingest.stages import record_failure
from citewell.keys import raw_key
from citewell.models.documents import Upload
from citewell.services import Services


def fetch_upload(services: Services, fetcher: Fetcher, upload: Upload) -> Upload | None:
    """Store the page's bytes for ``upload``: the intent with its validators, whose stages run next;
    None when the fetch failed (recorded on the document) and no stage follows."""
    document = services.documents.get_document(upload.tenant, upload.document_id)
    served = document if document is not None and document.active_revision and document.active_upload else None
    try:
        page = fetch_page(fetcher, upload.source, served.fetched if served is not None else None)
        data = page.data
        if page.status == "not_modified":
            assert served is not None and served.active_upload is not None
            try:
                data = services.objects.get(raw_key(served.tenant, served.document_id, served.active_upload))
            except NotFound:
                raise UploadMissing("the server answered 304 and the served copy is gone; fetch the page again") from None
    except CitewellError as error:
        record_failure(services, upload, error)
        return None
    fetched = upload.model_copy(update={"fetched": page.fetched})
    services.uploads.put_upload(fetched)
    services.objects.put(raw_key(upload.tenant, upload.document_id, upload.upload_id), data)
    return fetched
