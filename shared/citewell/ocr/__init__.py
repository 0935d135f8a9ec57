"""OCR: what an engine read on one scanned page, and how its lines become paragraphs.

An engine (the :class:`~citewell.ports.OcrEngine` port) reads pages: RapidOCR on ONNX Runtime
embedded (:mod:`citewell.ocr.rapid`, the ``ocr`` extra), Amazon Textract on AWS
(:mod:`citewell.ocr.textract`). Both report a confidence per line, which the parsers keep per
page and hold against :data:`CONFIDENCE_FLOOR`: a page read worse than that is a typed failure,
not noise in the index.

Every route to an engine holds a scan to :class:`ScanLimits` before a page is decoded: its pages
and their pixels are counted from headers (a TIFF's directories, an image's header, a PDF's page
objects), so a small file that declares thousands of pages is refused in milliseconds, not read
for hours.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from citewell.errors import TooLarge
from citewell.settings import DEFAULT_OCR_MAX_PAGES, DEFAULT_OCR_MAX_PIXELS, settings

# A page whose characters were read at under this mean confidence fails ``ocr_low_confidence``.
# RapidOCR (PP-OCRv6 small) reads clean and lightly blurred scans at 0.98 and above; text blurred
# to the edge of reading comes out as fragments ("o  opeot") at about 0.2, and text blurred past it
# as nothing (``empty_text``) or, seen once, as one stray glyph at 0.96, which no floor tells
# from a short true line.
CONFIDENCE_FLOOR = 0.8
PARAGRAPH_GAP = 0.8  # a gap above a line wider than this many line heights starts a paragraph


@dataclass(frozen=True)
class ScanLimits:
    """How much of one file OCR reads: ``pages`` (``CITEWELL_OCR_MAX_PAGES``), and ``pixels``
    over all of them (``CITEWELL_OCR_MAX_PIXELS``). A file past either is ``too_large``."""

    pages: int = DEFAULT_OCR_MAX_PAGES
    pixels: int = DEFAULT_OCR_MAX_PIXELS
    setting: str = "CITEWELL_OCR_MAX_PAGES"  # the variable that sets ``pages``, named when a scan is over it

    @classmethod
    def configured(cls) -> ScanLimits:
        """The limits this environment's settings name."""
        found = settings()
        return cls(pages=found.ocr_max_pages, pixels=found.ocr_max_pixels)

    def check_pages(self, pages: int, *, at_least: bool = False) -> None:
        """:class:`TooLarge` for more pages than the limit; ``at_least``: counting stopped past it."""
        if pages > self.pages:
            raise TooLarge(f"a scan of {'more than ' + _pages(self.pages) if at_least else _pages(pages)} is over "
                           f"the limit of {_pages(self.pages)} that OCR reads ({self.setting})")

    def check_pixels(self, pixels: int, pages: int) -> None:
        """:class:`TooLarge` for ``pages`` whose pixels add up to more than the limit."""
        if pixels > self.pixels:
            raise TooLarge(f"a scan of {pixels:,} pixels ({_pages(pages)}) is over the "
                           f"limit of {self.pixels:,} pixels that OCR decodes (CITEWELL_OCR_MAX_PIXELS)")


def _pages(count: int) -> str:
    return f"{count:,} page{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class OcrLine:
    """One line of text as read, its confidence (0 to 1), and where it stands on the page
    (top and height as fractions of the page's height)."""

    text: str
    confidence: float
    top: float
    height: float


@dataclass(frozen=True)
class OcrPage:
    """What an engine read on one page: its lines in reading order (none on a blank page)."""

    lines: list[OcrLine] = field(default_factory=list)

    @property
    def confidence(self) -> float | None:
        """The mean confidence of the page's characters; None when nothing was read."""
        weights = [(len(line.text.strip()), line.confidence) for line in self.lines if line.text.strip()]
        total = sum(n for n, _ in weights)
        return sum(n * c for n, c in weights) / total if total else None

    def paragraphs(self) -> list[str]:
        """The lines joined into paragraphs, split where the gap above a line is wider than
        :data:`PARAGRAPH_GAP` line heights (a scan has no blank lines, only space)."""
        lines = [line for line in self.lines if line.text.strip()]
        if not lines:
            return []
        height = statistics.median(line.height for line in lines) or 1.0
        paragraphs, current = [], [lines[0].text.strip()]
        for above, line in zip(lines, lines[1:]):
            if line.top - (above.top + above.height) > PARAGRAPH_GAP * height:
                paragraphs.append(" ".join(current))
                current = []
            current.append(line.text.strip())
        paragraphs.append(" ".join(current))
        return paragraphs


__all__ = ["CONFIDENCE_FLOOR", "OcrLine", "OcrPage", "ScanLimits"]
