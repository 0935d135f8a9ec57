"""CSV and TSV: each row becomes one record that names its columns, so a code finds its row."""

from __future__ import annotations

import csv
import io

from citewell.errors import EmptyText
from citewell.models.parsed import BlockKind, ParsedDocument
from citewell.parsers.builder import TextBuilder
from citewell.parsers.records import record_text
from citewell.parsers.sniff import MIME, Kind


def parse_delimited(text: str) -> ParsedDocument:
    sample = text[:8192]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(io.StringIO(text), dialect))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise EmptyText("the CSV file has no rows")
    header, body = rows[0], rows[1:]
    builder = TextBuilder()
    if not body:
        builder.block(BlockKind.RECORD, record_text([], header), row=1)
    for number, values in enumerate(body, start=2):
        builder.block(BlockKind.RECORD, record_text(header, values), row=number)
    return builder.build(MIME[Kind.CSV])
