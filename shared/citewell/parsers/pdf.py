"""PDF through pypdf: text per page, paragraphs kept with their page numbers."""

from __future__ import annotations

import io

from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError, PdfReadError

from citewell.errors import CorruptFile, EmptyText, EncryptedPdf
from citewell.models import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder, split_paragraphs
from citewell.parsers.sniff import MIME, Kind


def parse_pdf(data: bytes) -> ParsedDocument:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise EncryptedPdf("the PDF is encrypted with a password")
        builder = TextBuilder()
        for number, page in enumerate(reader.pages, start=1):
            for paragraph in split_paragraphs(page.extract_text() or ""):
                builder.block(BlockKind.PARAGRAPH, paragraph, page=number)
        title = (reader.metadata.title if reader.metadata else None) or None
    except (FileNotDecryptedError, NotImplementedError) as exc:
        raise EncryptedPdf(f"the PDF cannot be decrypted: {exc}") from exc
    except PdfReadError as exc:
        raise CorruptFile(f"the PDF cannot be read: {exc}") from exc
    parsed = builder.build(MIME[Kind.PDF], title=title)
    if not parsed.text.strip():
        raise EmptyText("the PDF has no text layer (a scan needs OCR before upload)")
    return parsed
