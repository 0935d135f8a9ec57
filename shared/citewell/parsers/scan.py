"""Scanned pages read by OCR: images (PNG, JPEG, TIFF, each frame a page), and the pages of a
PDF that have no text layer (see :mod:`citewell.parsers.pdf`).

Each page's text keeps its page number and the page's OCR confidence. A page read under the
floor (:data:`citewell.ocr.CONFIDENCE_FLOOR`) fails the file with ``ocr_low_confidence`` and
the figure: the text would be noise in the index, and a failure says to rescan. A blank page
(nothing read) is left out, as a scan's empty backs are; a file with nothing read on any page
is ``empty_text``.
"""

from __future__ import annotations

from collections.abc import Callable

from citewell.errors import EmptyText, OcrLowConfidence
from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.ocr import CONFIDENCE_FLOOR, OcrPage
from citewell.parsers.builder import TextBuilder
from citewell.ports import OcrEngine

NOT_INSTALLED = "OCR is not installed (pip install 'citewell[ocr]')"


def emit_page(builder: TextBuilder, page: OcrPage, number: int, floor: float = CONFIDENCE_FLOOR) -> bool:
    """Append one page's paragraphs; False when nothing was read on it."""
    confidence = page.confidence
    if confidence is None:
        return False
    if confidence < floor:
        raise OcrLowConfidence(f"page {number} was read by OCR at {confidence:.0%} confidence, under the floor of "
                               f"{floor:.0%}: its text would be noise; rescan it sharper or upload its text")
    for paragraph in page.paragraphs():
        builder.block(BlockKind.PARAGRAPH, paragraph, page=number, ocr_confidence=round(confidence, 4))
    return True


def parse_image(data: bytes, mime: str, ocr: OcrEngine | None,
                progress: Callable[[str, int, int], None] | None = None) -> ParsedDocument:
    """An image's text: every frame a page, read by ``ocr``; ``progress("ocr", done, pages)`` hears each."""
    if ocr is None:
        raise EmptyText(f"an image holds no text layer, and {NOT_INSTALLED}")
    builder = TextBuilder()
    pages = ocr.read(data, (lambda done, total: progress("ocr", done, total)) if progress else None)
    read = [emit_page(builder, page, number) for number, page in enumerate(pages, start=1)]
    if not any(read):
        raise EmptyText(f"OCR found no text in the image ({len(pages)} page{'s' if len(pages) != 1 else ''}, "
                        f"{ocr.name})")
    return builder.build(mime)


__all__ = ["NOT_INSTALLED", "emit_page", "parse_image"]
