"""XLSX through openpyxl: each sheet a section, each row a record with its sheet and row number."""

from __future__ import annotations

import io

from openpyxl import load_workbook

from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder
from citewell.parsers.records import record_text
from citewell.parsers.sniff import MIME, Kind


def _cell(value: object) -> str:
    return "" if value is None else str(value)


def parse_xlsx(data: bytes) -> ParsedDocument:
    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    builder = TextBuilder()
    try:
        for sheet in workbook.worksheets:
            builder.section([sheet.title])
            header: list[str] | None = None
            emitted = False
            for number, row in enumerate(sheet.iter_rows(values_only=True), start=1):
                values = [_cell(v) for v in row]
                if not any(v.strip() for v in values):
                    continue
                if header is None:
                    header = values
                    continue
                builder.block(BlockKind.RECORD, record_text(header, values), sheet=sheet.title, row=number)
                emitted = True
            if header is not None and not emitted:
                builder.block(BlockKind.RECORD, record_text([], header), sheet=sheet.title, row=1)
    finally:
        workbook.close()
    return builder.build(MIME[Kind.XLSX])
