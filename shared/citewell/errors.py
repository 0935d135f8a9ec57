"""Typed errors. Each carries a stable machine-readable ``code`` and a human message."""

from __future__ import annotations

from pydantic import ValidationError


def readable(error: ValidationError) -> str:
    """A validation error in words for people: each problem's message, without pydantic's framing."""
    return "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in error.errors())


class CitewellError(Exception):
    """Base class: every error the core raises on purpose."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class InvalidInput(CitewellError):
    code = "invalid_input"


class NotFound(CitewellError):
    code = "not_found"


class EmbedderMismatch(CitewellError):
    """The index was built with one embedding model and is queried or fed with another."""

    code = "embedder_mismatch"


class EmbedderSwitched(EmbedderMismatch):
    """The index behind the alias holds another model's vectors than this service embeds with:
    a migration switched the alias and this container predates the redeploy. Its writes are
    refused (the queue retries them until a redeployed container takes them) and its searches
    use the lexical lane alone."""

    code = "embedder_switched"


class RetrievalUnavailable(CitewellError):
    code = "retrieval_unavailable"


class RetrievalTimedOut(RetrievalUnavailable):
    """The index gave no reply within what the request had left (or there was too little left to
    ask it): a 503 like any retrieval outage, never "nothing found"; a probe's lane is left out."""

    code = "retrieval_timed_out"


class OutOfTime(CitewellError):
    """A store the request needs gave no reply within its deadline: a 503 in time, never API
    Gateway's bare reply at 30 s or a 500."""

    code = "out_of_time"


class IndexOverloaded(RetrievalUnavailable):
    """The search domain kept refusing rows as too many requests (429) after the bulk writer's
    backoff: the write is not done, and the stage's message goes back to its queue to be
    delivered again later; the document keeps serving what it served."""

    code = "index_overloaded"


class EmbedderUnavailable(CitewellError):
    """The embedding service failed; search degrades to the lexical lane."""

    code = "embedder_unavailable"


class OcrUnavailable(CitewellError):
    """The OCR service throttled or failed: the page was not judged, so the upload is retried,
    not recorded as failed."""

    code = "ocr_unavailable"


class OcrPending(CitewellError):
    """OCR of the upload runs elsewhere (a Textract job) and has not finished: the stage stops
    here, acknowledged, and the job's completion runs it again. Not a failure of the file."""

    code = "ocr_pending"


class GeneratorUnavailable(CitewellError):
    """The model service timed out, throttled, failed or replied with something unusable."""

    code = "generator_unavailable"


class Busy(CitewellError):
    """Another process holds the store's write lock for longer than we wait."""

    code = "busy"


class HomeNotWritable(CitewellError):
    """The home's folder or files cannot be written by this user: SQLite needs that even to read."""

    code = "home_not_writable"


class Conflict(CitewellError):
    """The document changed under us in a way that forbids this operation (it is being deleted)."""

    code = "conflict"


class DocumentIdTaken(Conflict):
    """The id already names a document from another source or readable by other roles, and
    this upload was not asked to replace it (the CLI, whose ids come from paths)."""

    code = "id_taken"


class PublishConflict(CitewellError):
    """Another publisher moved the active revision between our read and our write."""

    code = "publish_conflict"


# --- ingestion: recorded on the document with status ``failed`` -----------------------


class IngestError(CitewellError):
    code = "ingest_error"


class TypeMismatch(IngestError):
    code = "type_mismatch"


class UnsupportedType(IngestError):
    code = "unsupported_type"


class LegacyDoc(IngestError):
    code = "legacy_doc"


class EncryptedPdf(IngestError):
    code = "encrypted_pdf"


class EmptyText(IngestError):
    code = "empty_text"


class OcrLowConfidence(IngestError):
    """A scanned page was read, but too poorly to index: its words would be noise."""

    code = "ocr_low_confidence"


class TooLarge(IngestError):
    code = "too_large"


class UndecodableText(IngestError):
    code = "undecodable_text"


class CorruptFile(IngestError):
    code = "corrupt_file"


class Interrupted(IngestError):
    """The operator stopped the ingest (Ctrl-C) before this upload was published."""

    code = "interrupted"


class ServerStopped(IngestError):
    """``citewell serve`` was stopped (SIGTERM) before this upload was published."""

    code = "server_stopped"


class UploadMissing(IngestError):
    """The upload's bytes are gone (removed from the bucket before it was parsed)."""

    code = "upload_missing"


class RerankerUnavailable(CitewellError):
    """The rerank service timed out, failed or replied with something unusable: the fused order stands."""

    code = "reranker_unavailable"


class ExpansionUnavailable(CitewellError):
    """The model could not expand the question, or its reply was unusable: the question alone is searched."""

    code = "expansion_unavailable"


class OverBudget(CitewellError):
    """A read (a whole document or one section) is longer than the budget: refused, never truncated."""

    code = "over_budget"

    def __init__(self, message: str, chars: int, budget: int) -> None:
        super().__init__(message)
        self.chars = chars
        self.budget = budget


# --- web sources: a URL's fetch, recorded on the page's document like a file's failure ---


class UrlRefused(IngestError):
    """Not a URL citewell fetches: not http(s), credentials in it, or an address it may not reach
    (loopback, private, link-local, ...) that the operator's allow-list does not name."""

    code = "url_refused"


class OutOfScope(UrlRefused):
    """A crawl's link, or where a page redirects, is outside the crawl's site and path prefix (as a
    server resolves the path: escapes decoded, dot segments removed): never fetched nor stored."""

    code = "out_of_scope"


class RobotsDisallowed(IngestError):
    """The site's robots.txt asks crawlers not to fetch the page: it was not fetched (a crawl skips
    such a page with the same code)."""

    code = "robots"


class FetchFailed(IngestError):
    """The page could not be fetched: no answer, a timeout, a broken connection, too many redirects."""

    code = "fetch_failed"


class CertificateRefused(FetchFailed):
    """The https server's certificate is not valid for the host named in the URL (another name,
    expired, or from an authority not trusted: ``CITEWELL_FETCH_CA`` adds one)."""

    code = "certificate_refused"


class HttpStatus(IngestError):
    """The server answered with an error status (404, 500, ...)."""

    code = "http_status"

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status
