"""Parse raw bytes into extracted text with structure. The type comes from the bytes."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING

from citewell.errors import CitewellError, CorruptFile, EmptyText, TooLarge
from citewell.models.parsed import ParsedDocument
from citewell.parsers.gzipped import gunzip, is_gzip
from citewell.settings import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from citewell.ports import OcrEngine


# Hears how far a parse got, in pages: ``("parse", pages read, pages)`` while a PDF's text layer
# is read, ``("ocr", pages read, pages to read)`` while OCR reads scanned pages or an image's frames.
PageProgress = Callable[[str, int, int], None]


def parse(data: bytes, filename: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES,
          ocr: OcrEngine | None = None, progress: PageProgress | None = None) -> ParsedDocument:
    """Detect, extract, and refuse with a typed :class:`~citewell.errors.IngestError`; a gzip is
    taken off first (:mod:`citewell.parsers.gzipped`). ``ocr``
    reads images and the PDF pages without a text layer; without it they are ``empty_text``.
    ``progress`` hears the pages of a PDF or a scan as they are read (a large one takes minutes)."""
    from citewell.parsers.sniff import (
        detect,  # only what parses pays for sniffing libraries
    )

    if len(data) > max_bytes:
        raise TooLarge(f"{len(data):,} bytes is over the limit of {max_bytes:,} bytes")
    if is_gzip(data):  # a man page or a README as a system installs it: what it holds is the file
        data, filename = gunzip(data, filename, max_bytes)
    if not data.strip():  # whatever its name says (an empty "report.pdf" is no PDF, but first it is empty)
        raise EmptyText("the file is empty" if not data else "the file holds only whitespace")
    kind = detect(data, filename)
    try:
        parsed = _parse_kind(kind, data, ocr, progress)
    except CitewellError:  # typed: an IngestError for the file, or a service to retry (OcrUnavailable)
        raise
    except Exception as exc:  # a parser library choking on malformed input is the file's fault
        raise CorruptFile(f"the {kind.upper()} file could not be parsed: {type(exc).__name__}: {exc}") from exc
    if not parsed.text.strip():
        raise EmptyText("no text could be extracted")
    return parsed


# Imported per format (keys are the values of sniff.Kind), so a caller that parses text
# never loads the PDF or Office stacks.
_BINARY = {
    "docx": ("citewell.parsers.word", "parse_docx"),
    "xlsx": ("citewell.parsers.spreadsheet", "parse_xlsx"),
}
_TEXT = {
    "markdown": ("citewell.parsers.markdown", "parse_markdown"),
    "rst": ("citewell.parsers.rst", "parse_rst"),
    "manpage": ("citewell.parsers.manpage", "parse_manpage"),
    "html": ("citewell.parsers.html", "parse_html"),
    "csv": ("citewell.parsers.delimited", "parse_delimited"),
    "text": ("citewell.parsers.plain", "parse_plain"),
}


def _parse_kind(kind: str, data: bytes, ocr: OcrEngine | None, progress: PageProgress | None) -> ParsedDocument:
    from citewell.parsers.encoding import decode
    from citewell.parsers.sniff import IMAGE_KINDS, MIME, Kind

    encoding = None
    if kind in IMAGE_KINDS:
        from citewell.parsers.scan import parse_image

        parsed = parse_image(data, MIME[Kind(kind)], ocr, progress)
    elif kind == "pdf":
        from citewell.parsers.pdf import parse_pdf

        parsed = parse_pdf(data, ocr, progress)
    elif kind in _BINARY:
        module, function = _BINARY[kind]
        parsed = getattr(import_module(module), function)(data)
    else:
        module, function = _TEXT[kind]
        text, encoding = decode(data)
        parsed = getattr(import_module(module), function)(text)
    return parsed.model_copy(update={"encoding": encoding})


__all__ = ["DEFAULT_MAX_BYTES", "PageProgress", "parse"]
