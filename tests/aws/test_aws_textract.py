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
from citewell.ocr.textract import MAX_BYTES, TextractOcr
from citewell.parsers import parse
from tests.parsers.test_ocr import MEMO, encoded, page, scanned_pdf


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


def test_a_multi_page_tiff_goes_to_textract_one_frame_a_call_with_its_page_numbers_kept(textract):
    """DetectDocumentText reads single-page documents only: each frame goes alone, as a TIFF
    holding that frame, and its lines keep the frame's number as their page."""
    from PIL import Image

    from tests.parsers.test_ocr import ROSTER

    sent = []
    textract.meta.events.register("before-parameter-build.textract.DetectDocumentText",
                                  lambda params, **_: sent.append(params["Document"]["Bytes"]))
    frames = [page(lines, size=(600, 300)) for lines in (MEMO[:1], ROSTER, MEMO[2:4])]
    intel = encoded(frames[0], "TIFF", save_all=True, append_images=frames[1:], compression="tiff_lzw")
    big = encoded(frames[0], "TIFF", save_all=True, append_images=frames[1:], big_tiff=True)
    assert big[:4] == b"II+\x00"
    for tiff in (intel, _big_endian(frames), big):  # both byte orders, and a BigTIFF
        sent.clear()
        progress = []
        parsed = parse(tiff, "fax.tiff", ocr=TextractOcr(textract), progress=lambda *event, seen=progress: seen.append(event))
        assert len(sent) == 3
        for number, one in enumerate(sent):
            with Image.open(io.BytesIO(one)) as image:
                assert image.n_frames == 1
                assert image.convert("L").tobytes() == frames[number].tobytes()
        assert sorted({b.page for b in parsed.blocks}) == [1, 2, 3] and parsed.mime == "image/tiff"
        assert progress == [("ocr", 1, 3), ("ocr", 2, 3), ("ocr", 3, 3)]


def test_a_tiff_whose_pages_loop_or_point_outside_it_is_corrupt(textract):
    from citewell.ocr import ScanLimits
    from citewell.ocr.tiff import single_pages

    one = encoded(page(MEMO[:1], size=(200, 100)), "TIFF")
    looped = bytearray(one)
    first = int.from_bytes(looped[4:8], "little")
    entries = int.from_bytes(looped[first:first + 2], "little")
    looped[first + 2 + 12 * entries:first + 6 + 12 * entries] = first.to_bytes(4, "little")  # its next page is itself
    outside = one[:4] + (len(one) + 50).to_bytes(4, "little") + one[8:]
    for broken in (bytes(looped), outside):
        with pytest.raises(errors.CorruptFile, match="loop|outside"):
            parse(broken, "fax.tiff", ocr=TextractOcr(textract))
    with pytest.raises(errors.CorruptFile, match="outside"):
        single_pages(one[:6], ScanLimits())
    assert list(single_pages(one, ScanLimits())) == [one]  # one page: sent as uploaded


def _big_endian(frames) -> bytes:
    """The frames as a Motorola-order (big-endian) TIFF, uncompressed 8-bit grey, written here
    since Pillow writes Intel order."""
    width, height = frames[0].size
    out = bytearray(b"MM\x00*\x00\x00\x00\x00")
    ifd_offsets = []
    for frame in frames:
        data_at = len(out)
        out += frame.tobytes()
        entries = [(256, 3, 1, width), (257, 3, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
                   (273, 4, 1, data_at), (277, 3, 1, 1), (278, 3, 1, height), (279, 4, 1, width * height)]
        if len(out) % 2:
            out += b"\x00"
        ifd_offsets.append(len(out))
        out += len(entries).to_bytes(2, "big")
        for tag, kind, count, value in entries:
            packed = value.to_bytes(2, "big") + b"\x00\x00" if kind == 3 else value.to_bytes(4, "big")
            out += tag.to_bytes(2, "big") + kind.to_bytes(2, "big") + count.to_bytes(4, "big") + packed
        out += b"\x00\x00\x00\x00"
    out[4:8] = ifd_offsets[0].to_bytes(4, "big")
    for at, following in zip(ifd_offsets, ifd_offsets[1:]):
        count = int.from_bytes(out[at:at + 2], "big")
        out[at + 2 + 12 * count:at + 6 + 12 * count] = following.to_bytes(4, "big")
    return bytes(out)


def test_a_scan_over_the_page_or_pixel_limit_is_refused_before_a_page_is_sent(monkeypatch):
    """Textract is paid by the page: a TIFF of 5,000 blank fax pages (573 KB), or a PDF with more
    scanned pages or image pixels than the limits, is too_large before the first call."""
    from tests.parsers.test_ocr import ROSTER, many_pages

    client = boto3.client("textract", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    two_scans = scanned_pdf([page(MEMO), "A text layer page about berth scheduling.", page(ROSTER)])
    with Stubber(client):  # no response queued: nothing may be sent
        with pytest.raises(errors.TooLarge, match=r"^a scan of more than 200 pages is over the limit of 200 pages"):
            parse(many_pages(5000), "fax.tif", ocr=TextractOcr(client))
        monkeypatch.setenv("CITEWELL_OCR_MAX_PAGES", "1")
        with pytest.raises(errors.TooLarge, match=r"^a scan of 2 pages is over the limit of 1 page that OCR reads"):
            parse(two_scans, "scans.pdf", ocr=TextractOcr(client))
        monkeypatch.delenv("CITEWELL_OCR_MAX_PAGES")
        monkeypatch.setenv("CITEWELL_OCR_MAX_PIXELS", "400000000")
        with pytest.raises(errors.TooLarge, match=r"^a scan of 490,000,000 pixels \(10 pages\) is over the limit"):
            parse(many_pages(10), "fax.tif", ocr=TextractOcr(client))
        monkeypatch.setenv("CITEWELL_OCR_MAX_PIXELS", "4000000")  # each scanned page's image is 1240 x 1754
        with pytest.raises(errors.TooLarge, match=r"^a scan of 4,349,920 pixels \(2 pages\) is over the limit of 4,000,000"):
            parse(two_scans, "scans.pdf", ocr=TextractOcr(client))
