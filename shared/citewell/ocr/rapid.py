"""The embedded OCR engine: RapidOCR (PaddleOCR's PP-OCRv6 small detection and recognition
models, as ONNX, shipped inside the ``rapidocr`` wheel) on the ONNX Runtime the embedder uses,
with OpenCV's headless build (no GUI, no libGL). Nothing is downloaded: the models load from the
installed package, whose files RapidOCR checks by their hashes before it loads them.

A one-page PDF is rendered with PDFium (pypdfium2); images are decoded with Pillow, each frame
of a TIFF a page. Pages are rendered at :data:`DPI`, capped at :data:`MAX_SIDE` pixels, the
largest the detector takes without shrinking the page again. An image's pages and pixels are
held to the engine's :class:`~citewell.ocr.ScanLimits` from its headers before one is decoded
(a TIFF's by :mod:`citewell.ocr.tiff`'s walk, which stops past the limit: Pillow's frame count
reads every directory of the file).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from typing import Any

import numpy as np

from citewell.errors import CorruptFile, TooLarge
from citewell.ocr import OcrLine, OcrPage, ScanLimits
from citewell.ocr.tiff import is_tiff, single_pages

DPI = 200
MAX_SIDE = 2000  # RapidOCR's max_side_len: a larger page is scaled down to it before detection
MAX_PIXELS = 60_000_000  # an image declaring more is refused before it is decoded (a decompression bomb)
# Lines RapidOCR would drop (its default text_score is 0.5) are kept, so a badly read page
# shows as badly read (its confidence under the floor) instead of as a page with a few words.
TEXT_SCORE = 0.2
# The line classifier turns lines it takes for upside down; on small print it turned upright
# lines too, and read them as garbage: 47% of two dense pages' words right with it, 75% of
# five without (BENCHMARKS.md, "OCR"). Scans come upright; one that does not is read as it lies.
USE_CLASSIFIER = False


# RapidOCR logs each model it loads at "info", and a page with nothing read at "warning", on
# stderr: a CLI's output (--json included) gets none of it; failures are raised, not logged.
LOG_LEVEL = "error"


class RapidOcr:
    """RapidOCR behind :class:`~citewell.ports.OcrEngine`; the models load on the first page.
    ``limits`` default to the settings' (``CITEWELL_OCR_MAX_PAGES``, ``CITEWELL_OCR_MAX_PIXELS``)."""

    name = "rapidocr"

    def __init__(self, limits: ScanLimits | None = None) -> None:
        self.limits = limits or ScanLimits.configured()
        self._engine: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._engine is None:
                from rapidocr import RapidOCR

                self._engine = RapidOCR(params={
                    "Global.text_score": TEXT_SCORE, "Global.use_cls": USE_CLASSIFIER,
                    "Global.max_side_len": MAX_SIDE, "Global.log_level": LOG_LEVEL,
                })
            return self._engine

    def read(self, document: bytes, on_page: Callable[[int, int], None] | None = None) -> list[OcrPage]:
        count, images = _images(document, self.limits)
        pages = []
        for image in images:
            pages.append(self._read_image(image))
            if on_page:
                on_page(len(pages), count)
        return pages

    def _read_image(self, image: np.ndarray) -> OcrPage:
        result = self._loaded()(image)
        height = float(image.shape[0]) or 1.0
        lines: list[OcrLine] = []
        if result.boxes is None or result.txts is None or result.scores is None:  # nothing read: a blank page
            return OcrPage(lines=lines)
        for box, text, score in zip(result.boxes, result.txts, result.scores):
            ys = [point[1] for point in box]
            lines.append(OcrLine(text=str(text), confidence=float(score), top=min(ys) / height,
                                 height=(max(ys) - min(ys)) / height))
        return OcrPage(lines=lines)


def embedded_engine(limits: ScanLimits | None = None) -> RapidOcr | None:
    """The embedded default when the ``ocr`` extra is installed (the models load on the first
    scanned page, not here); None without it, and scans are then ``empty_text`` saying so."""
    if not all(find_spec(name) for name in ("rapidocr", "pypdfium2", "PIL")):
        return None
    return RapidOcr(limits)


def _images(document: bytes, limits: ScanLimits) -> tuple[int, Iterator[np.ndarray]]:
    """How many pages ``document`` has, and the pages as RGB arrays, each decoded as it is taken
    (a TIFF's frames held at once would take their pixels times their count: thousands of blank
    frames compress to a few megabytes): a PDF's first page rendered, an image's frames. The
    pages and their pixels are held to ``limits`` first (a PDF's by the parser, for all its
    scanned pages together)."""
    if document.startswith(b"%PDF"):
        return 1, iter([_render_pdf_page(document)])
    from PIL import Image, UnidentifiedImageError

    decoding = (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError, ValueError, EOFError)
    if is_tiff(document):
        count = len(single_pages(document, limits))  # walks the directories, past the limit not at all
    else:
        try:
            with Image.open(io.BytesIO(document)) as image:  # reads the header only
                count = int(getattr(image, "n_frames", 1))  # declared in the header (an APNG's, an MPO's)
                width, height = image.size
        except decoding as exc:
            raise CorruptFile(f"the image cannot be decoded: {exc}") from exc
        limits.check_pages(count)
        limits.check_pixels(count * width * height, count)  # a PNG's frames are drawn on its canvas

    def frames() -> Iterator[np.ndarray]:
        try:
            with Image.open(io.BytesIO(document)) as image:
                for index in range(count):
                    image.seek(index)
                    if image.width * image.height > MAX_PIXELS:
                        raise TooLarge(f"the image is {image.width:,} x {image.height:,} pixels, over the "
                                       f"{MAX_PIXELS:,} that OCR decodes")
                    yield np.asarray(_fit(image.convert("RGB")))
        except decoding as exc:
            raise CorruptFile(f"the image cannot be decoded: {exc}") from exc

    return count, frames()


def _fit(image: Any) -> Any:
    """An image no larger than :data:`MAX_SIDE` on its longer side."""
    side = max(image.size)
    if side <= MAX_SIDE:
        return image
    scale = MAX_SIDE / side
    return image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))


def _render_pdf_page(document: bytes) -> np.ndarray:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(document)
    except pdfium.PdfiumError as exc:
        raise CorruptFile(f"the PDF page cannot be rendered: {exc}") from exc
    try:
        page = pdf[0]
        width, height = page.get_size()
        scale = min(DPI / 72, MAX_SIDE / max(width, height, 1.0))
        bitmap = page.render(scale=scale)
        return np.array(bitmap.to_pil().convert("RGB"))
    finally:
        pdf.close()


__all__ = ["RapidOcr", "embedded_engine"]
