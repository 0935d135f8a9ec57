"""A scanned PDF read by one asynchronous Amazon Textract job, off the parse function's clock.

Synchronous DetectDocumentText reads one page a call: a scan of hundreds of pages outlasts the
parse function, and each retry of the message pays for every page again. Textract's documented
route for a multi-page file is asynchronous (docs/aws.md, "Scans"): StartDocumentTextDetection on
the S3 object (a PDF of up to 3,000 pages and 500 MB), a completion published to an SNS topic, and
the result read with GetDocumentTextDetection, at most 1,000 blocks a call, page after page by
NextToken. So parse starts the job and stops (:class:`~citewell.errors.OcrPending`, acknowledged);
the completion, through SNS and a queue, runs parse again for the upload, which reads the pages.

What a job read is kept per upload under ``ocr/`` (:func:`citewell.keys.ocr_key`), with the job's
id from the moment it starts: a retry, a redelivery or the completion reuses the job, and once
read its pages, never paying twice. The start request's ClientRequestToken is the upload's id, so
two deliveries racing to start get the same job. A job id Textract no longer knows (ids live 7
days) is replaced by a new job, counted in the record's ``attempt`` (part of the token).
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
from citewell.settings import settings

if TYPE_CHECKING:
    from citewell.objects.s3 import S3ObjectStore

MAX_RESULTS = 1000  # blocks a GetDocumentTextDetection call returns at most (its documented largest)
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


class OcrRecord(BaseModel):
    """What is kept of an upload's OCR: the job reading it, the how-manieth job that is, and once it
    has finished every page's lines, each ``(text, confidence, top, height)``."""

    engine: str
    job_id: str
    attempt: int = 1
    pages: list[list[tuple[str, float, float, float]]] | None = None


class TextractJobs:
    """The container's asynchronous Textract: ``for_upload`` binds it to one upload's stored PDF.
    ``limits.pages`` is ``CITEWELL_TEXTRACT_MAX_PAGES`` (at most Textract's 3,000); pixels are
    Textract's to decode, not this function's, so they are not capped here."""

    name = "amazon-textract"

    def __init__(self, client: Any, channel: Channel, limits: ScanLimits | None = None) -> None:
        self.client = client
        self.channel = channel
        self.limits = limits or ScanLimits(pages=settings().textract_max_pages, pixels=2**63 - 1,
                                            setting="CITEWELL_TEXTRACT_MAX_PAGES")

    def for_upload(self, pages: TextractOcr, objects: S3ObjectStore, key: str, record_key: str, token: str) -> TextractScan:
        """The engine parse reads upload ``key`` with: its PDF read by a job on the version of ``key``
        that ``objects`` reads, the job's record at ``record_key``; an image or a TIFF read by ``pages``."""
        return TextractScan(self, pages, objects, key, record_key, token)


class TextractWithJobs(TextractOcr):
    """The synchronous engine with the asynchronous route beside it: what the stack's parse holds
    when Textract has a completion channel (``jobs``)."""

    def __init__(self, client: Any, jobs: TextractJobs, limits: ScanLimits | None = None) -> None:
        super().__init__(client, limits)
        self.jobs = jobs


class TextractScan:
    """One upload's OCR (:class:`~citewell.ports.DocumentOcr`): a PDF by the job, images and TIFFs
    page by page by the synchronous engine as before."""

    name = "amazon-textract"

    def __init__(self, jobs: TextractJobs, pages: TextractOcr, objects: S3ObjectStore, key: str, record_key: str,
                 token: str) -> None:
        self.jobs, self.pages, self.objects = jobs, pages, objects
        self.key, self.record_key, self.token = key, record_key, token

    @property
    def limits(self) -> ScanLimits:
        return self.jobs.limits

    def read(self, document: bytes, on_page: Callable[[int, int], None] | None = None) -> list[OcrPage]:
        return self.pages.read(document, on_page)

    def read_document(self, pages: int) -> list[OcrPage]:
        """Every page of the stored PDF (``pages`` of them, as the parser counted), from the record
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
            first = self._get(record.job_id)
        except _UnknownJob:  # its 7 days are over, unread: a new job, the only way to the text now
            record = self._start(record.attempt + 1)
            first = self._get(record.job_id)
        status = first.get("JobStatus")
        if status == "IN_PROGRESS":
            raise OcrPending(f"Textract job {record.job_id} is reading {pages:,} pages; its completion resumes the parse")
        if status not in ("SUCCEEDED", "PARTIAL_SUCCESS"):  # FAILED: the file, by Textract's reading
            raise _failure(str(first.get("StatusMessage") or status))
        lines = self._collect(record.job_id, first, pages)
        kept = [[(line.text, line.confidence, line.top, line.height) for line in lines[number]] for number in sorted(lines)]
        self.objects.put(self.record_key, record.model_copy(update={"pages": kept}).model_dump_json().encode())
        return _pages(kept, pages)

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
            if code == "InvalidJobIdException" and token is None:
                raise _UnknownJob(message) from error
            raise OcrUnavailable(f"Textract could not give the scan's text ({code}): {message}") from error
        except BotoCoreError as error:
            raise OcrUnavailable(f"Textract could not be reached: {error}") from error

    def _collect(self, job_id: str, first: dict[str, Any], pages: int) -> dict[int, list[OcrLine]]:
        """The lines of every page, response after response (each dropped once its lines are
        taken: a thousand pages are hundreds of responses of a thousand blocks)."""
        declared = int(first.get("DocumentMetadata", {}).get("Pages") or pages)
        lines: dict[int, list[OcrLine]] = {number: [] for number in range(1, max(pages, declared) + 1)}
        response = first
        while True:
            add_lines(lines, response.get("Blocks", []))
            token = response.get("NextToken")
            if not token:
                return lines
            response = self._get(job_id, token)


class _UnknownJob(OcrUnavailable):
    """Textract knows no job of the recorded id (InvalidJobIdException); of a job just started, the
    message is retried."""


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


def _pages(kept: list[list[tuple[str, float, float, float]]], count: int) -> list[OcrPage]:
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
