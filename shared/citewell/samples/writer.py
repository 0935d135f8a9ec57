"""Writes the sample corpus files, including real PDF, DOCX and XLSX files."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from citewell.samples import texts

# Every sample file's date. The libraries stamp files with the time of writing, and a sample whose
# bytes changed each time the corpus is written would be a new revision on every `make demo`.
SAMPLE_DATE = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
_CORE_DATE = re.compile(rb"(<dcterms:(?:created|modified)\b[^>]*>)[^<]*(</dcterms:)")


def _dated(data: bytes) -> bytes:
    """An Office file (a zip) with its entries' times and its created and modified dates set to
    ``SAMPLE_DATE``: python-docx and openpyxl write the time of writing there, nothing else varies."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            if item.filename == "docProps/core.xml":
                body = _CORE_DATE.sub(rb"\g<1>" + SAMPLE_DATE.strftime("%Y-%m-%dT%H:%M:%SZ").encode() + rb"\g<2>", body)
            entry = zipfile.ZipInfo(item.filename, date_time=SAMPLE_DATE.timetuple()[:6])
            entry.compress_type, entry.external_attr = item.compress_type, item.external_attr
            target.writestr(entry, body)
    return out.getvalue()


def pdf_bytes(pages: list[tuple[str, list[str]]], title: str | None = None) -> bytes:
    """A PDF with a real text layer: one page per (heading, paragraphs)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(SAMPLE_DATE)
    if title:
        pdf.set_title(title)
    for heading, paragraphs in pages:
        pdf.add_page()
        pdf.set_font("Helvetica", style="B", size=16)
        pdf.multi_cell(0, 10, heading)
        pdf.set_font("Helvetica", size=11)
        for paragraph in paragraphs:
            pdf.ln(4)
            pdf.multi_cell(0, 6, paragraph)
    return bytes(pdf.output())


def docx_bytes(title: str, sections: list[tuple[str, list[str]]], table: list[tuple[str, ...]] | None = None) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(title, level=0)
    for heading, paragraphs in sections:
        document.add_heading(heading, level=1)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=0, cols=len(table[0]))
        for row in table:
            cells = grid.add_row().cells
            for cell, value in zip(cells, row):
                cell.text = str(value)
    buffer = io.BytesIO()
    document.save(buffer)
    return _dated(buffer.getvalue())


def xlsx_bytes(sheets: dict[str, Sequence[Sequence[object]]]) -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return _dated(buffer.getvalue())


def write_samples(root: Path) -> list[Path]:
    """The corpus under ``root``, the same bytes on every call (so re-ingesting it changes nothing)."""
    files = {
        "northpier/staff/handbook.md": texts.NORTHPIER_HANDBOOK.encode(),
        "northpier/staff/travel-policy.pdf": pdf_bytes(texts.TRAVEL_POLICY_PAGES, title="Travel and Expenses Policy"),
        "northpier/staff/onboarding.docx": docx_bytes("Onboarding at Northpier", texts.ONBOARDING_SECTIONS),
        "northpier/engineering/crane-runbook.html": texts.RUNBOOK_HTML.encode(),
        "northpier/engineering/error-codes.csv": texts.ERROR_CODES_CSV.encode(),
        "northpier/hr/salary-bands.xlsx": xlsx_bytes({"Bands": texts.SALARY_BANDS, "Reviews": texts.REVIEW_CALENDAR}),
        "northpier/staff/gate-hours-scan.pdf": scanned_pdf_bytes(texts.SCANNED_MEMO),  # read by OCR
        "bluefen/staff/employee-guide.md": texts.BLUEFEN_HANDBOOK.encode(),
        # Files that must fail with a typed reason while the rest of their batch goes on.
        "northpier/unreadable/blank-scan.pdf": blank_pdf_bytes(),
        "northpier/unreadable/quarterly-report.pdf": texts.NORTHPIER_HANDBOOK.encode(),
    }
    written = []
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


def scanned_pdf_bytes(lines: Sequence[str]) -> bytes:
    """A one-page PDF holding only an image of ``lines`` (an empty line is a paragraph gap), as a
    scanner without OCR produces: no text layer, so only OCR reads it."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("L", (1240, 1754), 255)  # A4 at 150 dpi
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=32)
    y = 150
    for line in lines:
        if line:
            draw.text((120, y), line, fill=0, font=font)
        y += 48 if line else 60
    image = io.BytesIO()
    page.save(image, "PNG")
    pdf = FPDF(unit="pt", format="A4")
    pdf.set_creation_date(SAMPLE_DATE)
    pdf.add_page()
    pdf.image(image, x=0, y=0, w=595, h=842)
    return bytes(pdf.output())


def blank_pdf_bytes() -> bytes:
    """A page with no text layer and nothing on it: a blank scan, in which OCR finds no text."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
