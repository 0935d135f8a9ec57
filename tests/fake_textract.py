"""Amazon Textract's asynchronous text detection, answering a boto3 session's textract calls as its
documentation says, where moto's is kinder: moto finishes every job as it starts, answers one
response with every block (no NextToken, MaxResults ignored), ignores ClientRequestToken and
never reads the document.

- StartDocumentTextDetection reads the S3 object named (its version when given) as the caller:
  absent, it is InvalidS3ObjectException. The same ClientRequestToken returns the same JobId
  (IdempotentParameterMismatchException with another document). A job is IN_PROGRESS until the
  test calls :meth:`FakeTextract.finish`, which judges the document as the set quotas say
  (https://docs.aws.amazon.com/textract/latest/dg/limits-document.html, and "Multipage documents
  must be in PDF or TIFF format. Single-page documents processed with asynchronous operations can
  be in JPEG, PNG, TIFF or PDF format", async.html): a PDF or a TIFF of at most 3,000 pages and
  500 MB, a PDF's pages at most 40 inches a side, a JPEG or PNG of at most 10 MB (one page), an
  image's pages at most 10,000 pixels a side, SUCCEEDED; anything else (another format, a GIF, a
  BMP, text) FAILED with a status message (this fake's words); and it publishes the completion to
  the job's SNS topic in the documented shape (JobId, Status, API, JobTag, Timestamp,
  DocumentLocation).
- GetDocumentTextDetection: an unknown JobId is InvalidJobIdException; a running job answers its
  status and no blocks; a finished one its blocks (a PAGE, then per line a LINE and its WORDs, each
  with its Page), at most MaxResults (1,000, the largest, by default and above it) a response, then a
  NextToken for the rest; DocumentMetadata.Pages in every response. The documentation gives a token
  no lifetime; here one stays good until the test calls :meth:`FakeTextract.expire_tokens`, after
  which the tokens given before are InvalidParameterException.

What a page "reads" is the test's (``lines(page number)``): the fake recognises nothing.
"""

from __future__ import annotations

import base64
import io
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from tests.strict_aws import PARAMS, StrictAws, refusal

MAX_PAGES, MAX_BYTES, MAX_RESULTS = 3000, 500 * 1024 * 1024, 1000
MAX_IMAGE_BYTES = 10 * 1024 * 1024  # a JPEG or PNG, read asynchronously
MAX_SIDE_POINTS = 40 * 72  # 40 inches
MAX_SIDE_PIXELS = 10_000


def default_lines(number: int) -> list[str]:
    return [f"Survey sheet {number}", f"Berth {number % 40 + 1} was dredged to twelve metres",
            f"and sounded again on day {number} of the survey."]


@dataclass
class Job:
    job_id: str
    token: str | None
    location: dict[str, str]
    channel: dict[str, str] | None
    tag: str | None
    status: str = "IN_PROGRESS"
    message: str | None = None
    pages: int = 0
    counts: list[int] = field(default_factory=list)  # blocks of each page


class FakeTextract:
    """``s3`` and ``sns``: clients nobody records (what the service itself sees and does)."""

    def __init__(self, s3: Any, sns: Any, lines: Callable[[int], list[str]] = default_lines) -> None:
        self.s3, self.sns, self.lines = s3, sns, lines
        self.jobs: dict[str, Job] = {}
        self.tokens: dict[str, str] = {}
        self.started: list[str] = []  # job ids, each once, in the order the jobs began
        self.responses: list[int] = []  # blocks in each GetDocumentTextDetection response
        self.refuse_next: list[tuple[str, str]] = []  # (key, error code): the next start on that key is refused so
        self.epoch = 0  # the tokens of an earlier epoch are refused (expire_tokens)

    def install(self, events: Any) -> None:
        events.register("before-parameter-build.textract", StrictAws._keep_params)  # each call's parameters, for its before-call
        events.register("before-call.textract.StartDocumentTextDetection", self._start)
        events.register("before-call.textract.GetDocumentTextDetection", self._get)

    # -- the API ------------------------------------------------------------------------

    def _start(self, context: dict[str, Any], **_: object) -> tuple[Any, dict[str, Any]]:
        params = context[PARAMS]
        location = params["DocumentLocation"]["S3Object"]
        for n, (key, code) in enumerate(self.refuse_next):
            if key == location["Name"]:
                del self.refuse_next[n]
                return refusal(400, code, f"{code}: refused by the test")
        token = params.get("ClientRequestToken")
        if token in self.tokens:
            job = self.jobs[self.tokens[token]]
            if job.location != location:
                return refusal(400, "IdempotentParameterMismatchException", "the token was used with other parameters")
            return self._ok({"JobId": job.job_id})
        try:
            self._object(location)
        except ClientError:
            return refusal(400, "InvalidS3ObjectException", "Unable to get object metadata from S3. Check object key, region and/or access permissions.")
        job = Job(job_id=uuid.uuid4().hex + uuid.uuid4().hex, token=token, location=location,
                  channel=params.get("NotificationChannel"), tag=params.get("JobTag"))
        self.jobs[job.job_id] = job
        self.started.append(job.job_id)
        if token:
            self.tokens[token] = job.job_id
        return self._ok({"JobId": job.job_id})

    def _get(self, context: dict[str, Any], **_: object) -> tuple[Any, dict[str, Any]]:
        params = context[PARAMS]
        job = self.jobs.get(params["JobId"])
        if job is None:
            return refusal(400, "InvalidJobIdException", "An invalid job identifier was passed.")
        if job.status == "IN_PROGRESS":
            return self._ok({"JobStatus": "IN_PROGRESS"})
        if job.status == "FAILED":
            return self._ok({"JobStatus": "FAILED", "StatusMessage": job.message})
        limit = min(int(params.get("MaxResults") or MAX_RESULTS), MAX_RESULTS)
        start = 0
        if params.get("NextToken"):
            try:
                named, offset, epoch = base64.b64decode(params["NextToken"]).decode().split(":")
                assert named == job.job_id and int(epoch) == self.epoch
                start = int(offset)
            except (ValueError, AssertionError):
                return refusal(400, "InvalidParameterException", "the pagination token is not this job's, or no longer good")
        blocks = self._blocks(job, start, limit)
        self.responses.append(len(blocks))
        reply: dict[str, Any] = {"JobStatus": "SUCCEEDED", "DocumentMetadata": {"Pages": job.pages}, "Blocks": blocks,
                                 "DetectDocumentTextModelVersion": "1.0"}
        if start + len(blocks) < sum(job.counts):
            reply["NextToken"] = base64.b64encode(f"{job.job_id}:{start + len(blocks)}:{self.epoch}".encode()).decode()
        return self._ok(reply)

    # -- the test's hand on the service ----------------------------------------------------

    def finish(self, job_id: str | None = None) -> list[Job]:
        """End the running jobs (or the one named): each document judged as Textract would, and each
        completion published to the job's topic. Returns the jobs ended."""
        ended = [j for j in self.jobs.values() if j.status == "IN_PROGRESS" and job_id in (None, j.job_id)]
        for job in ended:
            problem = self._judge(job)
            job.status, job.message = ("FAILED", problem) if problem else ("SUCCEEDED", None)
            if problem is None:
                job.counts = [1 + sum(1 + len(line.split()) for line in self.lines(n)) for n in range(1, job.pages + 1)]
            if job.channel:
                self.sns.publish(TopicArn=job.channel["SNSTopicArn"], Message=json.dumps({
                    "JobId": job.job_id, "Status": job.status, "API": "StartDocumentTextDetection", "JobTag": job.tag or "",
                    "Timestamp": int(time.time() * 1000),
                    "DocumentLocation": {"S3ObjectName": job.location["Name"], "S3Bucket": job.location["Bucket"]}}))
        return ended

    def expire_tokens(self) -> None:
        """Every NextToken given so far is refused from now on (what the documentation leaves open)."""
        self.epoch += 1

    def forget(self, job_id: str) -> None:
        """What Textract does to a job id after 7 days: it no longer knows it."""
        del self.jobs[job_id]

    # -- inside the service ------------------------------------------------------------

    @staticmethod
    def _ok(body: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        from botocore.awsrequest import AWSResponse

        from tests.strict_aws import _NoBody

        return AWSResponse("https://textract.invalid/", 200, {}, _NoBody()), {
            **body, "ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}}}

    def _object(self, location: dict[str, str]) -> bytes:
        version = {"VersionId": location["Version"]} if location.get("Version") else {}
        return bytes(self.s3.get_object(Bucket=location["Bucket"], Key=location["Name"], **version)["Body"].read())

    def _judge(self, job: Job) -> str | None:
        """Why Textract fails this job's document, or None (and its page count is set)."""
        try:
            data = self._object(job.location)
        except ClientError:  # removed while the job waited to read it
            return "INVALID_S3_OBJECT: Unable to get object metadata from S3."
        if len(data) > MAX_BYTES:
            return "DOCUMENT_TOO_LARGE: the document is over 500 MB"
        if data.startswith(b"%PDF"):
            return self._judge_pdf(job, data)
        if data[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
            return self._judge_image(job, data, "TIFF")
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            return self._judge_image(job, data, "PNG")
        if data.startswith(b"\xff\xd8\xff"):
            return self._judge_image(job, data, "JPEG")
        return "UNSUPPORTED_DOCUMENT: not a PDF, TIFF, PNG or JPEG"

    @staticmethod
    def _judge_pdf(job: Job, data: bytes) -> str | None:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError

        try:
            reader = PdfReader(io.BytesIO(data))
            pages = len(reader.pages)
            sides = [max(float(p.mediabox.width), float(p.mediabox.height)) for p in reader.pages]
        except PdfReadError as error:
            return f"BAD_DOCUMENT: {error}"
        if pages > MAX_PAGES:
            return f"The document has {pages} pages, over the limit of {MAX_PAGES} pages"
        if any(side > MAX_SIDE_POINTS for side in sides):
            return "UNSUPPORTED_DOCUMENT: a page is larger than 40 inches"
        job.pages = pages
        return None

    @staticmethod
    def _judge_image(job: Job, data: bytes, kind: str) -> str | None:
        """A TIFF's frames, or a PNG's or JPEG's one page, as Pillow reads them (a decoder of its own,
        not the code under test)."""
        from PIL import Image, UnidentifiedImageError

        if kind != "TIFF" and len(data) > MAX_IMAGE_BYTES:
            return f"DOCUMENT_TOO_LARGE: a {kind} is over 10 MB"
        try:
            with Image.open(io.BytesIO(data)) as image:
                pages = getattr(image, "n_frames", 1) if kind == "TIFF" else 1
                if pages > MAX_PAGES:
                    return f"The document has {pages} pages, over the limit of {MAX_PAGES} pages"
                sides = []
                for frame in range(pages):
                    image.seek(frame)
                    sides.append(max(image.size))
        except (UnidentifiedImageError, OSError, EOFError) as error:
            return f"BAD_DOCUMENT: {error}"
        if any(side > MAX_SIDE_PIXELS for side in sides):
            return "UNSUPPORTED_DOCUMENT: a page is larger than 10,000 pixels a side"
        job.pages = pages
        return None

    def _blocks(self, job: Job, start: int, limit: int) -> list[dict[str, Any]]:
        """Blocks ``start`` to ``start + limit`` of the job's, built as they are asked for."""
        blocks: list[dict[str, Any]] = []
        before = 0
        for number, count in enumerate(job.counts, start=1):
            if before + count <= start:
                before += count
                continue
            page = _page_blocks(number, self.lines(number))
            blocks.extend(page[max(start - before, 0):])
            before += count
            if len(blocks) >= limit:
                break
        return blocks[:limit]


def _page_blocks(number: int, lines: list[str]) -> list[dict[str, Any]]:
    """A page's PAGE block, then each LINE followed by its WORDs, as Textract lists them: ids of 36
    characters, a bounding box and a four-point polygon each, a parent naming its children."""
    def geometry(top: float, height: float, left: float = 0.1, width: float = 0.6) -> dict[str, Any]:
        return {"BoundingBox": {"Width": width, "Height": height, "Left": left, "Top": top},
                "Polygon": [{"X": left, "Y": top}, {"X": left + width, "Y": top}, {"X": left + width, "Y": top + height},
                            {"X": left, "Y": top + height}]}

    def ident(*parts: int) -> str:
        return "-".join(f"{part:08x}" for part in (number, *parts)).ljust(36, "0")[:36]

    page: dict[str, Any] = {"BlockType": "PAGE", "Id": ident(0), "Page": number, "Geometry": geometry(0.0, 1.0, 0.0, 1.0),
                            "Relationships": [{"Type": "CHILD", "Ids": []}]}
    blocks = [page]
    for n, text in enumerate(lines, start=1):
        top = 0.05 + 0.9 * (n - 1) / max(len(lines), 30)
        words = text.split()
        line = {"BlockType": "LINE", "Id": ident(n), "Page": number, "Text": text, "Confidence": 99.2,
                "Geometry": geometry(top, 0.02), "Relationships": [{"Type": "CHILD", "Ids": [ident(n, m) for m in range(1, len(words) + 1)]}]}
        page["Relationships"][0]["Ids"].append(line["Id"])
        blocks.append(line)
        blocks.extend({"BlockType": "WORD", "Id": ident(n, m), "Page": number, "Text": word, "Confidence": 99.2,
                       "TextType": "PRINTED", "Geometry": geometry(top, 0.02, 0.1 + 0.06 * (m - 1), 0.05)}
                      for m, word in enumerate(words, start=1))
    return blocks


def scanned(pages: int, side_points: float = 595.0) -> bytes:
    """A PDF of ``pages`` scanned pages (one small image drawn on each, no text layer), A4 unless
    ``side_points`` says how long a side is."""
    from PIL import Image
    from pypdf import PdfWriter
    from pypdf.generic import NameObject

    image = Image.new("L", (40, 56), 255)
    buffer = io.BytesIO()
    image.save(buffer, "PDF")
    source = PdfWriter(clone_from=io.BytesIO(buffer.getvalue()))
    template = source.pages[0]
    writer = PdfWriter()
    for _ in range(pages):
        added = writer.add_page(template)
        added.mediabox.upper_right = (side_points, side_points * 842 / 595)
    writer.add_metadata({NameObject("/Producer"): "a scanner"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def scanned_tiff(pages: int, size: tuple[int, int] = (40, 56)) -> bytes:
    """A TIFF of ``pages`` blank frames (a fax or a scanner's multi-page output), each ``size`` pixels."""
    from PIL import Image

    frames = [Image.new("L", size, 255) for _ in range(pages)]
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:])
    return out.getvalue()
