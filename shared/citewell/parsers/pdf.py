"""PDF through pypdf: text per page with its page number; bookmarks become sections; contents
and index pages (dot leaders to page numbers) are left out, since they would outrank the
entries they point to."""

from __future__ import annotations

import io
import logging
import re
import warnings
from collections import defaultdict
from typing import Any

from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError, PdfReadError

from citewell.errors import CorruptFile, EmptyText, EncryptedPdf
from citewell.models import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder, split_paragraphs
from citewell.parsers.sniff import MIME, Kind

log = logging.getLogger(__name__)


class _DemoteToDebug(logging.Handler):
    """pypdf reports what it repaired ("EOF marker not found") as warnings on its own logger;
    with no logging configured Python prints them to stderr, into a CLI's --json output.
    They describe the file, not a problem to act on: re-log them here at debug."""

    def emit(self, record: logging.LogRecord) -> None:
        log.debug("pypdf: %s", record.getMessage())


_pypdf_log = logging.getLogger("pypdf")
if not any(isinstance(h, _DemoteToDebug) for h in _pypdf_log.handlers):
    _pypdf_log.addHandler(_DemoteToDebug())
    _pypdf_log.propagate = False

# "1 Introduction . . . . . 2", "asn1_read_value .......... 15", ". . . . 15 asn1_read_value"
_LEADER = re.compile(r"(?:\.\s?){4,}\s*(?:\d+|[ivxlcdm]+)\b", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


def is_contents_page(lines: list[str]) -> bool:
    """A table of contents or index page: most of its lines lead dots to a page number."""
    lines = [line for line in lines if line.strip()]
    leaders = sum(1 for line in lines if _LEADER.search(line))
    return leaders >= 3 and leaders * 2 >= len(lines)


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def _bookmarks(reader: PdfReader) -> dict[int, list[tuple[int, str]]]:
    """``page index -> [(depth, title)]`` in outline order; a broken outline is no outline."""
    by_page: dict[int, list[tuple[int, str]]] = defaultdict(list)

    def walk(items: list[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            title = _SPACES.sub(" ", str(getattr(item, "title", "") or "")).strip()
            page = reader.get_destination_page_number(item)
            if title and page is not None and page >= 0:
                by_page[page].append((depth, title))

    try:
        walk(reader.outline, 0)
    except Exception as exc:  # noqa: BLE001 - an outline is a convenience; the text is what matters
        log.debug("PDF outline ignored: %s", exc)
        return {}
    return by_page


def _page(builder: TextBuilder, text: str, number: int, marks: list[tuple[int, str]], path: list[str]) -> None:
    """Emit one page, opening each bookmark's section at the line that carries its title
    (or at the top of the page when no line does)."""
    lines = text.splitlines()
    cursor = 0
    for depth, title in marks:
        del path[depth:]
        path.append(title)
        wanted = _norm(title)
        found = next((i for i in range(cursor, len(lines)) if _norm(lines[i]) == wanted), None)
        if found is None:
            builder.section(list(path))
            continue
        _paragraphs(builder, lines[cursor:found], number)
        builder.heading(depth + 1, lines[found], page=number)
        cursor = found + 1
    _paragraphs(builder, lines[cursor:], number)


def _paragraphs(builder: TextBuilder, lines: list[str], number: int) -> None:
    for paragraph in split_paragraphs("\n".join(lines)):
        builder.block(BlockKind.PARAGRAPH, paragraph, page=number)


def parse_pdf(data: bytes) -> ParsedDocument:
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise EncryptedPdf("the PDF is encrypted with a password")
            marks = _bookmarks(reader)
            builder = TextBuilder()
            path: list[str] = []
            skipped = 0
            for index, page in enumerate(reader.pages):
                text = page.extract_text() or ""
                if is_contents_page(text.splitlines()):
                    for depth, title in marks.get(index, []):
                        del path[depth:]
                        path.append(title)
                        builder.section(list(path))
                    skipped += 1
                    continue
                _page(builder, text, index + 1, marks.get(index, []), path)
            title = (reader.metadata.title if reader.metadata else None) or None
        for warning in caught:
            log.debug("pypdf: %s", warning.message)
    except (FileNotDecryptedError, NotImplementedError) as exc:
        raise EncryptedPdf(f"the PDF cannot be decrypted: {exc}") from exc
    except PdfReadError as exc:
        raise CorruptFile(f"the PDF cannot be read: {exc}") from exc
    parsed = builder.build(MIME[Kind.PDF], title=title)
    if not parsed.text.strip() and skipped:
        raise EmptyText("the PDF holds only contents or index pages (dot leaders to page numbers)")
    if not parsed.text.strip():
        raise EmptyText("the PDF has no text layer (a scan needs OCR before upload)")
    return parsed
