"""Amazon Textract behind :class:`~citewell.ports.OcrEngine`: the parse function's OCR.

The embedded engine (RapidOCR needs OpenCV's headless build, about 173 MB installed) does not fit in a Lambda
layer beside the rest (250 MB unzipped in all), so on AWS a scanned page goes to Textract's
synchronous DetectDocumentText, one page per call: a PDF page as a one-page PDF (cut by pypdf,
nothing rendered in the function), a TIFF's frames each as a one-page TIFF (the call reads
single-page documents only; :mod:`citewell.ocr.tiff` cuts them without decoding), or an image as
uploaded. A TIFF's pages and pixels are held to the engine's :class:`~citewell.ocr.ScanLimits`
before its first page is sent (Textract is paid by the page); an image or a PDF page is one
page, whose pixels Textract decodes (its own limits refuse a page too large). Textract reports confidence in
percent per line; it is kept here as 0 to 1, like RapidOCR's. Textract takes no resource in its
IAM policy, so the parse function's grant names the action alone.

Where the stack gives it a completion channel (``jobs``), a scanned PDF or a multi-page TIFF is not
read here page by page: parse reads it where it is stored, by one asynchronous job
(:mod:`citewell.ocr.textract_jobs`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from citewell.errors import CorruptFile, OcrUnavailable, TooLarge, UnsupportedType
from citewell.ocr import OcrLine, OcrPage, ScanLimits
from citewell.ocr.tiff import is_tiff, single_pages

MAX_BYTES = 10 * 1024 * 1024  # DetectDocumentText's limit for a document passed as bytes
# What Textract says about the page itself: the upload fails with a typed reason. Anything
# else (throttling, a service error) is OcrUnavailable, and the message is retried.
_REFUSALS = {
    "UnsupportedDocumentException": UnsupportedType,
    "BadDocumentException": CorruptFile,
    "DocumentTooLargeException": TooLarge,
    "InvalidParameterException": CorruptFile,
}


class TextractOcr:
    """``limits`` default to the settings' (``CITEWELL_OCR_MAX_PAGES``, ``CITEWELL_OCR_MAX_PIXELS``).
    With a completion channel, a stored scanned PDF takes the asynchronous route instead
    (:class:`~citewell.ocr.textract_jobs.TextractWithJobs`)."""

    name = "amazon-textract"

    def __init__(self, client: Any, limits: ScanLimits | None = None) -> None:
        self.client = client
        self.limits = limits or ScanLimits.configured()

    def read(self, document: bytes, on_page: Callable[[int, int], None] | None = None) -> list[OcrPage]:
        if len(document) > MAX_BYTES:
            raise TooLarge(f"the page is {len(document):,} bytes; Textract reads at most {MAX_BYTES:,} per page")
        if not is_tiff(document):
            pages = self._detect(document)
            if on_page:  # one call reads the document whole
                on_page(len(pages), len(pages))
            return pages
        frames = single_pages(document, self.limits)
        read: list[OcrPage] = []
        for done, frame in enumerate(frames, start=1):  # a frame's TIFF is no larger than the file
            read.extend(self._detect(frame))
            if on_page:
                on_page(done, len(frames))
        return read

    def _detect(self, document: bytes) -> list[OcrPage]:
        try:
            response = self.client.detect_document_text(Document={"Bytes": document})
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            message = error.response.get("Error", {}).get("Message", "") or code
            if code in _REFUSALS:
                raise _REFUSALS[code](f"Textract cannot read the page: {message}") from error
            raise OcrUnavailable(f"Textract failed ({code}): {message}") from error
        except BotoCoreError as error:
            raise OcrUnavailable(f"Textract could not be reached: {error}") from error
        return pages_of(response)


def pages_of(response: dict[str, Any]) -> list[OcrPage]:
    """The pages of a DetectDocumentText response: its LINE blocks, in the order given (Textract's
    reading order), by their ``Page`` (1 when absent, as for one page)."""
    count = int(response.get("DocumentMetadata", {}).get("Pages") or 1)
    lines: dict[int, list[OcrLine]] = {number: [] for number in range(1, count + 1)}
    add_lines(lines, response.get("Blocks", []))
    return [OcrPage(lines=lines[number]) for number in sorted(lines)]


def add_lines(lines: dict[int, list[OcrLine]], blocks: list[dict[str, Any]]) -> None:
    """The LINE blocks of ``blocks`` added to ``lines`` by their page, in the order given (Textract's
    reading order); their WORD and PAGE blocks are left out."""
    for block in blocks:
        if block.get("BlockType") != "LINE" or not block.get("Text"):
            continue
        box = block.get("Geometry", {}).get("BoundingBox", {})
        lines.setdefault(int(block.get("Page") or 1), []).append(OcrLine(
            text=block["Text"], confidence=float(block.get("Confidence", 0.0)) / 100,
            top=float(box.get("Top", 0.0)), height=float(box.get("Height", 0.0))))


__all__ = ["TextractOcr", "add_lines", "pages_of"]
