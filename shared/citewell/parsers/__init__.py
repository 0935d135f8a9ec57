"""Parse raw bytes into extracted text with structure. The type comes from the bytes."""

from __future__ import annotations

from citewell.errors import CorruptFile, EmptyText, IngestError, TooLarge
from citewell.models import ParsedDocument
from citewell.parsers.sniff import Kind, decode_text, detect

DEFAULT_MAX_BYTES = 50 * 1024 * 1024


def parse(data: bytes, filename: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ParsedDocument:
    """Detect, extract, and refuse with a typed :class:`~citewell.errors.IngestError`."""
    if len(data) > max_bytes:
        raise TooLarge(f"{len(data):,} bytes is over the limit of {max_bytes:,} bytes")
    kind = detect(data, filename)
    try:
        parsed = _parse_kind(kind, data)
    except IngestError:
        raise
    except Exception as exc:  # a parser library choking on malformed input is the file's fault
        raise CorruptFile(f"the {kind.value.upper()} file could not be parsed: {type(exc).__name__}: {exc}") from exc
    if not parsed.text.strip():
        raise EmptyText("no text could be extracted")
    return parsed


def _parse_kind(kind: Kind, data: bytes) -> ParsedDocument:
    # Imports are per format so a caller that parses text never loads the PDF or Office stacks.
    if kind is Kind.PDF:
        from citewell.parsers.pdf import parse_pdf

        return parse_pdf(data)
    if kind is Kind.DOCX:
        from citewell.parsers.word import parse_docx

        return parse_docx(data)
    if kind is Kind.XLSX:
        from citewell.parsers.spreadsheet import parse_xlsx

        return parse_xlsx(data)
    text = decode_text(data)
    if kind is Kind.MARKDOWN:
        from citewell.parsers.markdown import parse_markdown

        return parse_markdown(text)
    if kind is Kind.HTML:
        from citewell.parsers.html import parse_html

        return parse_html(text)
    if kind is Kind.CSV:
        from citewell.parsers.delimited import parse_delimited

        return parse_delimited(text)
    from citewell.parsers.plain import parse_plain

    return parse_plain(text)


__all__ = ["DEFAULT_MAX_BYTES", "parse"]
