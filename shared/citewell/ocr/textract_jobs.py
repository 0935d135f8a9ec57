"""A scanned PDF or a multi-page TIFF read by one asynchronous Amazon Textract job, off the parse
function's clock.

Synchronous DetectDocumentText reads one page a call: a scan of hundreds of pages outlasts the
parse function, and each retry of the message pays for every page again. Textract's documented
route for a multi-page file is asynchronous (docs/aws.md, "Scans"): StartDocumentTextDetection on
the S3 object (a PDF or TIFF of up to 3,000 pages and 500 MB), a completion published to an SNS
topic, and the result read with GetDocumentTextDetection, at most 1,000 blocks a call, page after
page by NextToken. So parse starts the job and stops (:class:`~citewell.errors.OcrPending`,
acknowledged); the completion, through SNS and a queue, runs parse again for the upload, which
reads the pages. A single image (one-frame TIFF, PNG, JPEG) is one synchronous call, as before.

What a job read is kept per upload under ``ocr/`` (:func:`citewell.keys.ocr_key`), with the job's
id from the moment it starts: a retry, a redelivery or the completion reuses the job, and once
read its pages, never paying twice. The start request's ClientRequestToken is the upload's id, so
two deliveries racing to start get the same job. A job id Textract no longer knows (ids live 7
days) is replaced by a new job, counted in the record's ``attempt`` (part of the token).

Reading the results is itself hundreds of calls for a long scan, so every ``checkpoint_every``
responses the lines read so far and the NextToken that follows them are kept in the same record:
a function that dies midway (its timeout) is delivered again and goes on from that token, not from
the first response. Textract documents no lifetime for a NextToken (only the job id's 7 days), so
a kept token it refuses (InvalidParameterException) is dropped with the lines read before it, and
the results are read again from the first response: slower, never wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ValidationError

from citewell.errors import (
    CitewellError,
    CorruptFile,
    IngestError,
    NotFound,
    OcrPending,
    OcrUnavailable,
    TooLarge,
    UnsupportedType,
)
from citewell.ocr import OcrLine, OcrPage, ScanLimits
from citewell.ocr.textract import TextractOcr, add_lines
from citewell.ocr.tiff import is_tiff, single_pages
from citewell.settings import settings

if TYPE_CHECKING:
    from citewell.objects.s3 import S3ObjectStore

MAX_RESULTS = 1000  # blocks a GetDocumentTextDetection call returns at most (its documented largest)
# Responses read between two checkpoints of the record: at 0.1 to 0.5 s a round trip, a timeout
# loses at most 5 to 25 s of reading; a 3,000-page scan of dense pages (1,323 responses) writes its
# growing record 26 times (BENCHMARKS.md, "textract-scale").
CHECKPOINT_EVERY = 50
# What Textract says of the file when a start is refused: the upload fails with a typed reason.
# Anything else (throttling, LimitExceededException for too many jobs at once, an S3 object it may
# not read, an error of ours in the request) is OcrUnavailable, and the message is retried.
_REFUSALS: dict[str, type[IngestError]] = {
    "UnsupportedDocumentException": UnsupportedType,
    "BadDocumentException": CorruptFile,
    "DocumentTooLargeException": TooLarge,
}


@dataclass(frozen=True)
class Channel:
    """Where Textract publishes a job's completion: the SNS topic, and the role it publishes with."""

    topic_arn: str
    role_arn: str


Lines = list[list[tuple[str, float, float, float]]]  # each page's lines, each ``(text, confidence, top, height)``


class OcrRecord(BaseModel):
    """What is kept of an upload's OCR: the job reading it, the how-manieth job that is, and once it
    has finished every page's lines. While its results are read, a checkpoint: the lines of the
    first ``responses`` responses (``read``) and the NextToken of the response after them."""

    engine: str
    job_id: str
    attempt: int = 1
    pages: Lines | None = None
    read: Lines | None = None
    next_token: str | None = None
    responses: int = 0


class TextractJobs:
    """The container's asynchronous Textract: ``for_upload`` binds it to one upload's stored PDF.
    ``limits.pages`` is ``CITEWELL_TEXTRACT_MAX_PAGES`` (at most Textract's 3,000); pixels are
    Textract's to decode, not this function's, so they are not capped here."""

    name = "amazon-textract"

    def __init__(self, client: Any, channel: Channel, limits: ScanLimits | None = None,
                 checkpoint_every: int = CHECKPOINT_EVERY) -> None:
        self.client = client
        self.channel = channel
        self.limits = limits or ScanLimits(pages=settings().textract_max_pages, pixels=2**63 - 1,
                                            setting="CITEWELL_TEXTRACT_MAX_PAGES")
        self.checkpoint_every = checkpoint_every

    def for_upload(self, pages: TextractOcr, objects: S3ObjectStore, key: str, record_key: str, token: str) -> TextractScan:
        """The engine parse reads upload ``key`` with: its PDF or multi-page TIFF read by a job on the
        version of ``key`` that ``objects`` reads, the job's record at ``record_key``; a single image
        read by ``pages``."""
        return TextractScan(self, pages, objects, key, record_key, token)


class TextractWithJobs(TextractOcr):
    """The synchronous engine with the asynchronous route beside it: what the stack's parse holds
    when Textract has a completion channel (``jobs``)."""

    def __init__(self, client: Any, jobs: TextractJobs, limits: ScanLimits | None = None) -> None:
        super().__init__(client, limits)
        self.jobs = jobs


class TextractScan:
    """One upload's OCR (:class:`~citewell.ports.DocumentOcr`): a PDF or a TIFF of several pages by
    the job, a single image (a one-frame TIFF, a PNG, a JPEG) by one synchronous call as before."""

    name = "amazon-textract"

    def __init__(self, jobs: TextractJobs, pages: TextractOcr, objects: S3ObjectStore, key: str, record_key: str,
                 token: str) -> None:
        self.jobs, self.pages, self.objects = jobs, pages, objects
        self.key, self.record_key, self.token = key, record_key, token

    @property
    def limits(self) -> ScanLimits:
        return self.jobs.limits

    def read(self, document: bytes, on_page: Callable[[int, int], None] | None = None) -> list[OcrPage]:
        """An image's pages. ``document`` is the stored upload's bytes (parse reads the version the
        job would): a TIFF of several frames is read where it is stored, by the job, its frames
        counted from their directories and held to ``limits.pages`` before it starts (a chain that
        loops or points outside the file is ``corrupt_file``, as on the synchronous route)."""
        if is_tiff(document):
            frames = len(single_pages(document, self.limits))
            if frames > 1:
                read = self.read_document(frames)
                if on_page:
                    on_page(frames, frames)
                return read
        return self.pages.read(document, on_page)

    def read_document(self, pages: int) -> list[OcrPage]:
        """Every page of the stored file (``pages`` of them, as the parser counted), from the record
        when a job read them before; else from the finished job, kept first. A job not started is
        started, and one still running raises OcrPending. The store or a client failing otherwise is
        OcrUnavailable, retried: the parser takes any other error for the file's fault."""
        try:
            return self._read_document(pages)
        except CitewellError:
            raise
        except Exception as error:  # noqa: BLE001 - S3 or botocore failing is no fault of the file
            raise OcrUnavailable(f"the scan's OCR could not go on: {type(error).__name__}: {error}") from error

    def _read_document(self, pages: int) -> list[OcrPage]:
        record = self._load()
        if record is not None and record.pages is not None:
            return _pages(record.pages, pages)
        if record is None:
            record = self._start(1)
        try:
            lines, response = self._opening(record, pages)
        except _UnknownJob:  # its 7 days are over, unread: a new job, the only way to the text now
            record = self._start(record.attempt + 1)
            lines, response = self._opening(record, pages)
        self._collect(record, lines, response)
        kept = _kept(lines)
        self.objects.put(self.record_key, record.model_copy(
            update={"pages": kept, "read": None, "next_token": None, "responses": 0}).model_dump_json().encode())
        return _pages(kept, pages)

    def _opening(self, record: OcrRecord, pages: int) -> tuple[dict[int, list[OcrLine]], dict[str, Any]]:
        """Where reading the results starts: at the record's checkpoint (its lines, and the response
        its NextToken names), or at the first response, which says how the job ended."""
        if record.next_token is not None and record.read is not None:
            try:
                response = self._get(record.job_id, record.next_token)
            except _TokenRefused:  # no lifetime is documented for a token: read them all again
                record.read, record.next_token, record.responses = None, None, 0
            else:
                lines: dict[int, list[OcrLine]] = {number: [] for number in range(1, max(pages, len(record.read)) + 1)}
                for number, page in enumerate(record.read, start=1):
                    lines[number] = [OcrLine(text, confidence, top, height) for text, confidence, top, height in page]
                return lines, response
        first = self._get(record.job_id)
        status = first.get("JobStatus")
        if status == "IN_PROGRESS":
            raise OcrPending(f"Textract job {record.job_id} is reading {pages:,} pages; its completion resumes the parse")
        if status not in ("SUCCEEDED", "PARTIAL_SUCCESS"):  # FAILED: the file, by Textract's reading
            raise _failure(str(first.get("StatusMessage") or status))
        declared = int(first.get("DocumentMetadata", {}).get("Pages") or pages)
        return {number: [] for number in range(1, max(pages, declared) + 1)}, first

    def _load(self) -> OcrRecord | None:
        try:
            return OcrRecord.model_validate_json(self.objects.get(self.record_key))
        except NotFound:
            return None
        except ValidationError:  # not ours to trust: start over (the token keeps it one job)
            return None

    def _start(self, attempt: int) -> OcrRecord:
        """Start the job (or, for the same token, learn the one already started) and record it
        before anything else can fail."""
        version = self.objects.pin(self.key)
        location = {"Bucket": self.objects.bucket, "Name": self.key} | ({"Version": version} if version else {})
        try:
            started = self.jobs.client.start_document_text_detection(
                DocumentLocation={"S3Object": location}, ClientRequestToken=f"{self.token}-{attempt}", JobTag=self.token,
                NotificationChannel={"SNSTopicArn": self.jobs.channel.topic_arn, "RoleArn": self.jobs.channel.role_arn})
        except ClientError as error:
            code, message = _said(error)
            if code in _REFUSALS:
                raise _REFUSALS[code](f"Textract cannot read the scan: {message}") from error
            raise OcrUnavailable(f"Textract could not start reading the scan ({code}): {message}") from error
        except BotoCoreError as error:
            raise OcrUnavailable(f"Textract could not be reached: {error}") from error
        record = OcrRecord(engine=self.name, job_id=str(started["JobId"]), attempt=attempt)
        self.objects.put(self.record_key, record.model_dump_json().encode())
        return record

    def _get(self, job_id: str, token: str | None = None) -> dict[str, Any]:
        try:
            return dict(self.jobs.client.get_document_text_detection(
                JobId=job_id, MaxResults=MAX_RESULTS, **({"NextToken": token} if token else {})))
        except ClientError as error:
            code, message = _said(error)
            if code == "InvalidJobIdException":
                raise _UnknownJob(message) from error
            if code == "InvalidParameterException" and token is not None:
                raise _TokenRefused(message) from error
            raise OcrUnavailable(f"Textract could not give the scan's text ({code}): {message}") from error
        except BotoCoreError as error:
            raise OcrUnavailable(f"Textract could not be reached: {error}") from error

    def _collect(self, record: OcrRecord, lines: dict[int, list[OcrLine]], response: dict[str, Any]) -> None:
        """The lines of every page into ``lines``, response after response, each dropped once its
        lines are taken (a thousand pages are hundreds of responses of a thousand blocks); every
        ``checkpoint_every`` responses, the lines so far and the next token are kept."""
        read = record.responses
        while True:
            add_lines(lines, response.get("Blocks", []))
            read += 1
            token = response.get("NextToken")
            if not token:
                return
            if read % self.jobs.checkpoint_every == 0:
                checkpoint = record.model_copy(update={"read": _kept(lines), "next_token": token, "responses": read})
                self.objects.put(self.record_key, checkpoint.model_dump_json().encode())
            response = self._get(record.job_id, token)


class _UnknownJob(OcrUnavailable):
    """Textract knows no job of the recorded id (InvalidJobIdException); of a job just started, or
    in the middle of its results, the message is retried."""


class _TokenRefused(OcrUnavailable):
    """Textract refused a NextToken (InvalidParameterException); in the middle of the results, the
    message is retried, and the retry reads from its checkpoint."""


def _said(error: ClientError) -> tuple[str, str]:
    code = error.response.get("Error", {}).get("Code", "")
    return code, error.response.get("Error", {}).get("Message", "") or code


def _failure(message: str) -> IngestError:
    """A FAILED job's status message as the file's typed failure."""
    said = message.lower()
    if "unsupported" in said:
        return UnsupportedType(f"Textract cannot read the scan: {message}")
    if "too large" in said or "pages" in said and "limit" in said:
        return TooLarge(f"Textract cannot read the scan: {message}")
    return CorruptFile(f"Textract cannot read the scan: {message}")


def _kept(lines: dict[int, list[OcrLine]]) -> Lines:
    """``lines`` as the record keeps them: a list per page, in page order."""
    return [[(line.text, line.confidence, line.top, line.height) for line in lines[number]] for number in sorted(lines)]


def _pages(kept: Lines, count: int) -> list[OcrPage]:
    read = [OcrPage(lines=[OcrLine(text, confidence, top, height) for text, confidence, top, height in page])
            for page in kept]
    return read + [OcrPage() for _ in range(count - len(read))]


class Completion(BaseModel):
    """Textract's completion notification, as SNS delivers it to the queue: which job, how it
    ended, and the object it read."""

    JobId: str
    Status: str
    API: str
    DocumentLocation: dict[str, str]

    @property
    def bucket(self) -> str:
        return self.DocumentLocation.get("S3Bucket", "")

    @property
    def key(self) -> str:
        return self.DocumentLocation.get("S3ObjectName", "")


def completion(body: str) -> Completion | None:
    """The completion in an SQS message's body (SNS's raw delivery, or its envelope around it);
    None for anything else (SNS's subscription confirmation, a stranger's message)."""
    try:
        found = json.loads(body)
        if isinstance(found, dict) and found.get("Type") == "Notification" and isinstance(found.get("Message"), str):
            found = json.loads(found["Message"])
        return Completion.model_validate(found)
    except (ValueError, ValidationError):
        return None


__all__ = ["Channel", "Completion", "OcrRecord", "TextractJobs", "TextractScan", "TextractWithJobs", "completion"]
