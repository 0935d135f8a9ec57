"""Amazon Textract behind the OCR port, against moto's Textract (which answers
DetectDocumentText with the blocks it is given, in Textract's JSON) and botocore's stubber for
the service's refusals."""

from __future__ import annotations

import io

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from moto.textract.models import TextractBackend
from pypdf import PdfReader

from citewell import errors
from citewell.aws.textract import MAX_BYTES, TextractOcr
from citewell.parsers import parse
from tests.test_ocr import MEMO, encoded, page, scanned_pdf


def line(text: str, confidence: float, top: float, page_number: int | None = None) -> dict:
    block = {"BlockType": "LINE", "Id": text[:8], "Text": text, "Confidence": confidence,
             "Geometry": {"BoundingBox": {"Width": 0.5, "Height": 0.02, "Left": 0.1, "Top": top}}}
    return block | ({"Page": page_number} if page_number else {})


READ = [
    {"BlockType": "PAGE", "Id": "p1", "Geometry": {"BoundingBox": {"Width": 1.0, "Height": 1.0, "Left": 0.0, "Top": 0.0}}},
    line("Harbour crane inspection memo", 99.5, 0.07),
    line("Cranes on berth four are inspected", 99.1, 0.12),
    line("every Tuesday before the night shift.", 98.7, 0.145),
    {"BlockType": "WORD", "Id": "w1", "Text": "Cranes", "Confidence": 99.0},
]


@pytest.fixture
def textract(monkeypatch):
    with mock_aws():
        monkeypatch.setattr(TextractBackend, "BLOCKS", READ)
        monkeypatch.setattr(TextractBackend, "PAGES", 1)
        yield boto3.client("textract", region_name="eu-west-1")


def test_a_scanned_pdf_page_goes_to_textract_as_a_one_page_pdf_and_its_lines_become_paragraphs(textract):
    sent = []
    textract.meta.events.register("before-parameter-build.textract.DetectDocumentText",
                                  lambda params, **_: sent.append(params["Document"]["Bytes"]))
    parsed = parse(scanned_pdf(["A text layer page about berth scheduling.", page(MEMO)]), "mixed.pdf",
                   ocr=TextractOcr(textract))
    assert len(sent) == 1 and sent[0].startswith(b"%PDF")  # only the page without a text layer
    assert len(PdfReader(io.BytesIO(sent[0])).pages) == 1
    assert parsed.text.split("\n\n") == [
        "A text layer page about berth scheduling.",
        "Harbour crane inspection memo",  # the gap below the title is wider than a line: a new paragraph
        "Cranes on berth four are inspected every Tuesday before the night shift.",
    ]
    scanned = [b for b in parsed.blocks if b.page == 2]
    assert scanned and all(b.ocr_confidence == pytest.approx(0.9908, abs=1e-3) for b in scanned)


def test_an_image_is_sent_as_uploaded(textract):
    sent = []
    textract.meta.events.register("before-parameter-build.textract.DetectDocumentText",
                                  lambda params, **_: sent.append(params["Document"]["Bytes"]))
    png = encoded(page(MEMO), "PNG")
    parsed = parse(png, "memo.png", ocr=TextractOcr(textract))
    assert sent == [png] and parsed.mime == "image/png" and "night shift" in parsed.text


def test_a_page_textract_read_poorly_fails_with_its_figure(textract, monkeypatch):
    monkeypatch.setattr(TextractBackend, "BLOCKS", [line("mterofouenm", 41.0, 0.1), line("y", 30.0, 0.2)])
    with pytest.raises(errors.OcrLowConfidence, match="page 1 was read by OCR at 40% confidence"):
        parse(encoded(page(MEMO), "PNG"), "smudged.png", ocr=TextractOcr(textract))
    monkeypatch.setattr(TextractBackend, "BLOCKS", [])
    with pytest.raises(errors.EmptyText, match="amazon-textract"):
        parse(scanned_pdf([page([])]), "blank.pdf", ocr=TextractOcr(textract))


@pytest.mark.parametrize(("code", "error"), [
    ("UnsupportedDocumentException", errors.UnsupportedType),
    ("BadDocumentException", errors.CorruptFile),
    ("DocumentTooLargeException", errors.TooLarge),
    ("ProvisionedThroughputExceededException", errors.OcrUnavailable),  # retried, not recorded as the file's fault
    ("InternalServerError", errors.OcrUnavailable),
])
def test_textract_refusals_are_typed(code, error):
    client = boto3.client("textract", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_client_error("detect_document_text", service_error_code=code, service_message=f"{code} said no")
        with pytest.raises(error, match=f"{code} said no"):
            parse(encoded(page(MEMO), "PNG"), "memo.png", ocr=TextractOcr(client))


def test_a_page_over_textracts_limit_is_refused_before_it_is_sent():
    client = boto3.client("textract", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client), pytest.raises(errors.TooLarge, match="at most 10,485,760"):  # no response queued: nothing may be sent
        TextractOcr(client).read(b"\x89PNG" + b"\x00" * MAX_BYTES)
