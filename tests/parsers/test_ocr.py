"""Scans read by OCR (the embedded engine, RapidOCR): images and PDF pages without a text
layer, rendered here from text so the words to find are known."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from citewell import errors
from citewell.chunking import Chunker
from citewell.embedders.minilm import MiniLMEmbedder
from citewell.models.chunks import Chunk
from citewell.models.documents import Document
from citewell.ocr import CONFIDENCE_FLOOR
from citewell.ocr.rapid import embedded_engine
from citewell.parsers import parse

MEMO = ["Harbour crane inspection memo", "", "Cranes on berth four are inspected", "every Tuesday before the night shift.",
        "", "Report faults to the duty engineer."]
ROSTER = ["Pilot boarding roster", "", "Pilots board inbound tankers", "at the outer buoy from six in the morning."]


@pytest.fixture(scope="module")
def ocr():
    engine = embedded_engine()
    assert engine is not None, "the ocr extra (rapidocr, pypdfium2, Pillow) is part of the local install"
    return engine


def page(lines: list[str], size: tuple[int, int] = (1240, 1754), blur: float = 0) -> Image.Image:
    """An A4 page at 150 dpi holding ``lines`` ("" is a paragraph gap), as a scanner gives it."""
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=34)
    y = 120
    for line in lines:
        if line:
            draw.text((100, y), line, fill=0, font=font)
        y += 50 if line else 60
    return image.filter(ImageFilter.GaussianBlur(blur)) if blur else image


def encoded(image: Image.Image, format: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format, **options)
    return buffer.getvalue()


def scanned_pdf(pages: list[Image.Image | str]) -> bytes:
    """A PDF whose pages are images (a scan: no text layer), or text (a str: a text layer)."""
    from fpdf import FPDF

    pdf = FPDF(unit="pt", format="A4")
    pdf.set_font("helvetica", size=12)
    for content in pages:
        pdf.add_page()
        if isinstance(content, str):
            pdf.multi_cell(0, 14, content)
        else:
            pdf.image(io.BytesIO(encoded(content, "PNG")), x=0, y=0, w=595, h=842)
    return bytes(pdf.output())


def test_a_png_is_read_with_its_paragraphs_page_and_confidence(ocr):
    parsed = parse(encoded(page(MEMO), "PNG"), "memo.png", ocr=ocr)
    assert parsed.mime == "image/png"
    assert parsed.text.split("\n\n") == [
        "Harbour crane inspection memo", "Cranes on berth four are inspected every Tuesday before the night shift.",
        "Report faults to the duty engineer.",
    ]
    assert {block.page for block in parsed.blocks} == {1}
    assert all(CONFIDENCE_FLOOR <= block.ocr_confidence <= 1 for block in parsed.blocks)


def test_a_jpeg_and_each_frame_of_a_tiff_are_pages(ocr):
    jpeg = parse(encoded(page(MEMO).convert("RGB"), "JPEG", quality=80), "memo.jpg", ocr=ocr)
    assert jpeg.mime == "image/jpeg" and "duty engineer" in jpeg.text
    tiff = encoded(page(MEMO).convert("1"), "TIFF", save_all=True, append_images=[page(ROSTER).convert("1")],
                   compression="group4")  # a fax-style bilevel scan, as office scanners write
    parsed = parse(tiff, None, ocr=ocr)  # known by its bytes, no name needed
    assert parsed.mime == "image/tiff"
    at = parsed.text.index("outer buoy")
    assert next(b.page for b in parsed.blocks if b.start <= at < b.end) == 2
    assert parsed.blocks[0].page == 1 and "Harbour crane" in parsed.text[: parsed.blocks[0].end]


def test_a_scanned_pdf_is_read_page_by_page(ocr):
    parsed = parse(scanned_pdf([page(MEMO), page(ROSTER)]), "scan.pdf", ocr=ocr)
    assert parsed.mime == "application/pdf"
    pages = {parsed.text[b.start:b.end]: b.page for b in parsed.blocks}
    assert pages["Report faults to the duty engineer."] == 1
    assert pages["Pilots board inbound tankers at the outer buoy from six in the morning."] == 2
    assert all(b.ocr_confidence is not None for b in parsed.blocks)


def test_a_mixed_pdf_keeps_its_text_layer_and_reads_only_the_scanned_page(ocr):
    text_layer = "Berth scheduling is confirmed by the harbour master at noon."
    parsed = parse(scanned_pdf([text_layer, page(MEMO), "Tug assignments follow the berth schedule."]), "mixed.pdf", ocr=ocr)
    by_page = {}
    for block in parsed.blocks:
        by_page.setdefault(block.page, []).append(block)
    assert parsed.text.startswith(text_layer)
    assert [b.ocr_confidence for b in by_page[1] + by_page[3]] == [None, None]  # from the text layer, not OCR
    assert "Cranes on berth four" in parsed.text[by_page[2][0].start:by_page[2][-1].end]
    assert all(b.ocr_confidence for b in by_page[2])


def test_blank_scans_are_empty_text_saying_ocr_found_nothing(ocr):
    with pytest.raises(errors.EmptyText, match=r"OCR \(rapidocr\) found no text on any of its 2 pages"):
        parse(scanned_pdf([page([]), page([])]), "blank.pdf", ocr=ocr)
    with pytest.raises(errors.EmptyText, match="OCR found no text in the image"):
        parse(encoded(page([]), "PNG"), "blank.png", ocr=ocr)
    # A blank back between read pages is left out; the pages keep their numbers.
    parsed = parse(scanned_pdf([page([]), page(ROSTER)]), "backs.pdf", ocr=ocr)
    assert {b.page for b in parsed.blocks} == {2}


def test_a_page_read_under_the_floor_fails_with_its_figure(ocr):
    blurred = page(MEMO, blur=4.1)  # read as fragments ("o  opeot") at about 0.2
    with pytest.raises(errors.OcrLowConfidence) as raised:
        parse(scanned_pdf([page(ROSTER), blurred]), "smudged.pdf", ocr=ocr)
    assert raised.value.code == "ocr_low_confidence"
    assert "page 2 was read by OCR at" in raised.value.message and f"floor of {CONFIDENCE_FLOOR:.0%}" in raised.value.message


def test_without_an_engine_a_scan_says_ocr_is_not_installed():
    with pytest.raises(errors.EmptyText, match=r"citewell\[ocr\]"):
        parse(scanned_pdf([page(MEMO)]), "scan.pdf")
    with pytest.raises(errors.EmptyText, match=r"citewell\[ocr\]"):
        parse(encoded(page(MEMO), "PNG"), "memo.png")


def test_images_are_known_by_their_bytes_and_refused_when_the_name_disagrees(ocr):
    png = encoded(page(ROSTER, size=(1000, 400)), "PNG")
    with pytest.raises(errors.TypeMismatch):
        parse(png, "roster.jpg", ocr=ocr)
    with pytest.raises(errors.TypeMismatch):
        parse(png, "roster.pdf", ocr=ocr)
    assert "outer buoy" in parse(png, "roster.txt".replace(".txt", ""), ocr=ocr).text


def test_bad_images_are_typed_failures(ocr):
    truncated = encoded(page(MEMO), "PNG")[:400]
    with pytest.raises(errors.CorruptFile):
        parse(truncated, "memo.png", ocr=ocr)
    huge = encoded(Image.new("1", (9000, 9000), 1), "PNG")  # 81 megapixels in a few kilobytes
    with pytest.raises(errors.TooLarge, match="9,000 x 9,000 pixels"):
        parse(huge, "poster.png", ocr=ocr)


def test_a_long_tiff_is_decoded_one_frame_at_a_time():
    """Blank frames compress to almost nothing: 40 pages here are under a megabyte, 360 MB as
    pixels. Only the frame being read may be held."""
    import tracemalloc

    from citewell.ocr import ScanLimits
    from citewell.ocr.rapid import _images

    blank = Image.new("L", (2000, 1500), 255)
    tiff = encoded(blank, "TIFF", save_all=True, append_images=[blank] * 39, compression="tiff_lzw")
    assert len(tiff) < 1_000_000
    tracemalloc.start()
    try:
        count, frames = _images(tiff, ScanLimits())
        first = next(frames)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 40 and first.shape == (1500, 2000, 3)
    assert peak < 3 * first.nbytes, f"{peak:,} bytes held for one frame of {first.nbytes:,}"
    assert sum(1 for _ in frames) == 39


def test_the_embedded_engine_loads_its_models_and_reads_with_no_network(tmp_path):
    """Its models are files of the installed wheel: a fresh process whose sockets all fail loads
    them and reads a page (a download, or a check against a server, would fail here)."""
    import os
    import subprocess
    import sys

    scan = tmp_path / "memo.png"
    scan.write_bytes(encoded(page(MEMO), "PNG"))
    script = (
        "import socket, sys\n"
        "def refused(*args, **kwargs):\n"
        "    raise OSError('no network in this test')\n"
        "socket.socket.connect = socket.socket.connect_ex = refused\n"
        "socket.create_connection = socket.getaddrinfo = refused\n"
        "from citewell.ocr.rapid import embedded_engine\n"
        "from citewell.parsers import parse\n"
        "print(parse(open(sys.argv[1], 'rb').read(), 'memo.png', ocr=embedded_engine()).text)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(scan)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HOME": str(tmp_path)}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "every Tuesday before the night shift" in done.stdout


def test_chunks_of_a_scan_carry_its_confidence_and_keep_it_when_stored(ocr):
    document = Document(document_id="ops/memo.pdf", tenant="northpier", allowed_roles=frozenset({"staff"}),
                        title="Memo", source="memo.pdf")
    chunker = Chunker(MiniLMEmbedder().count_tokens)
    scan = parse(scanned_pdf([page(MEMO)]), "memo.pdf", ocr=ocr)
    chunks = chunker.chunk(scan, document, "r1")
    confidence = min(b.ocr_confidence for b in scan.blocks)
    assert chunks and all(c.ocr_confidence == confidence and c.pages == [1] for c in chunks)
    stored = Chunk.model_validate_json(chunks[0].record_json())
    assert stored.ocr_confidence == confidence
    text = parse(scanned_pdf(["Tug assignments follow the berth schedule."]), "tugs.pdf", ocr=ocr)
    typed = chunker.chunk(text, document, "r2")
    assert all(c.ocr_confidence is None for c in typed) and "ocr_confidence" not in typed[0].record_json()


def test_the_demos_scanned_memo_has_no_text_layer_and_becomes_searchable_text(ocr):
    from citewell.samples import texts
    from citewell.samples.writer import blank_pdf_bytes, scanned_pdf_bytes

    memo = scanned_pdf_bytes(texts.SCANNED_MEMO)
    with pytest.raises(errors.EmptyText):
        parse(memo, "gate-hours-scan.pdf")  # no text layer: without OCR there is nothing
    parsed = parse(memo, "gate-hours-scan.pdf", ocr=ocr)
    assert "the east gate closes at ten in the evening" in parsed.text
    with pytest.raises(errors.EmptyText, match="found no text"):  # the demo's other unusable file
        parse(blank_pdf_bytes(), "blank-scan.pdf", ocr=ocr)


def test_ocr_reports_each_scanned_page_as_it_is_read(ocr):
    """A scan showed nothing moving for the minutes OCR takes: each page read is reported, of those to read."""
    events: list[tuple[str, int, int]] = []
    mixed = scanned_pdf(["Berth scheduling is confirmed by the harbour master at noon.", page(ROSTER),
                         "Tug assignments follow the berth schedule."])
    parse(mixed, "mixed.pdf", ocr=ocr, progress=lambda *event: events.append(event))
    assert events == [("parse", n, 3) for n in range(4)] + [("ocr", 0, 1), ("ocr", 1, 1)]  # only the scanned page
    events.clear()
    frames = [page(lines, size=(1000, 400)) for lines in (ROSTER, ROSTER[2:], ROSTER[:1])]
    tiff = encoded(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    parsed = parse(tiff, "roster.tiff", ocr=ocr, progress=lambda *event: events.append(event))
    assert events == [("ocr", 1, 3), ("ocr", 2, 3), ("ocr", 3, 3)]
    assert sorted({b.page for b in parsed.blocks}) == [1, 2, 3]


def test_a_multi_page_tiff_is_ingested_with_its_page_numbers_kept_on_chunks(ocr, tmp_path, embedder):
    from citewell.ingest.runner import ingest
    from citewell.ingest.stages import IngestRequest
    from tests.conftest import make_services

    services = make_services(tmp_path / "home", embedder)
    services.ocr = ocr
    frames = [page(lines, size=(1000, 400)) for lines in (MEMO[:1], ROSTER, MEMO[2:4])]
    tiff = encoded(frames[0], "TIFF", save_all=True, append_images=frames[1:], compression="tiff_lzw")
    [outcome] = ingest(services, [IngestRequest(document_id="ops/fax.tiff", tenant="northpier", data=tiff,
                                                allowed_roles=frozenset({"staff"}), filename="fax.tiff")])
    assert outcome.status == "published", outcome
    chunks = services.chunks.get_chunks("northpier", "ops/fax.tiff", outcome.revision)
    assert sorted({number for c in chunks for number in c.pages}) == [1, 2, 3]
    assert all(c.ocr_confidence is not None and c.ocr_confidence >= CONFIDENCE_FLOOR for c in chunks)
    text = "".join(c.text for c in chunks)
    assert "outer buoy" in text and "every Tuesday" in text


def many_pages(count: int, side: int = 7000) -> bytes:
    """A TIFF of ``count`` blank ``side`` x ``side`` fax pages (CCITT G4) whose page directories
    all name one strip: a few kilobytes, then 110 bytes a page (the security review's N4 file)."""
    import itertools
    import struct

    data = bytearray(encoded(Image.new("1", (side, side), 1), "TIFF", compression="group4"))
    first = struct.unpack_from("<I", data, 4)[0]
    entries = struct.unpack_from("<H", data, first)[0]
    directory = bytes(data[first:first + 2 + 12 * entries]) + bytes(4)
    starts = [first]
    for _ in range(count - 1):
        data += bytes(len(data) % 2)
        starts.append(len(data))
        data += directory
    for at, following in itertools.pairwise(starts):
        struct.pack_into("<I", data, at + 2 + 12 * entries, following)
    return bytes(data)


def test_a_tiff_of_thousands_of_pages_fails_too_large_at_once_and_the_rest_of_the_folder_is_ingested(tmp_path):
    """5,000 blank fax pages in 573 KB, each under the per-page pixel cap, kept `citewell ingest`
    decoding and reading for hours. Its pages are counted from its directories before one is
    decoded: the file fails alone, too_large, naming the limit; the batch goes on."""
    import json
    import subprocess
    import sys

    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "fax.tif").write_bytes(many_pages(5000))
    (folder / "leave.md").write_text("# Leave\n\nStaff receive 27 days of annual leave.\n")
    done = subprocess.run([sys.executable, "-m", "citewell", "--home", str(tmp_path / "home"), "ingest", str(folder),
                           "--tenant", "northpier", "--allow-roles", "staff", "--json"],
                          check=False, capture_output=True, text=True, timeout=120)  # unbounded, hours
    documents = {d["document_id"]: d for d in json.loads(done.stdout)["documents"]}
    assert done.returncode == 1, done.stderr
    assert documents["inbox/leave.md"]["status"] == "published"
    failed = documents["inbox/fax.tif"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "too_large"
    assert failed["error"]["message"] == ("a scan of more than 200 pages is over the limit of 200 pages that OCR "
                                          "reads (CITEWELL_OCR_MAX_PAGES)")


def test_a_scan_over_the_pixel_budget_is_too_large_before_a_page_is_decoded(monkeypatch):
    """Ten 49-megapixel fax pages are each under the per-image cap, and few: their sum is not."""
    monkeypatch.setenv("CITEWELL_OCR_MAX_PIXELS", "400000000")
    with pytest.raises(errors.TooLarge, match=r"^a scan of 490,000,000 pixels \(10 pages\) is over the limit of "
                                              r"400,000,000 pixels that OCR decodes \(CITEWELL_OCR_MAX_PIXELS\)$"):
        parse(many_pages(10), "fax.tif", ocr=embedded_engine())
    monkeypatch.setenv("CITEWELL_OCR_MAX_PIXELS", "20000000")
    with pytest.raises(errors.TooLarge, match=r"a scan of 25,000,000 pixels \(1 page\) is over the limit of 20,000,000"):
        parse(encoded(Image.new("1", (5000, 5000), 1), "PNG"), "poster.png", ocr=embedded_engine())


def test_a_pdf_with_more_scanned_pages_than_the_limit_is_too_large_before_one_is_read(monkeypatch):
    monkeypatch.setenv("CITEWELL_OCR_MAX_PAGES", "2")
    pdf = scanned_pdf([page(MEMO), "A text layer page about berth scheduling.", page(ROSTER), page(MEMO[2:4])])
    with pytest.raises(errors.TooLarge, match=r"^a scan of 3 pages is over the limit of 2 pages that OCR reads"):
        parse(pdf, "scans.pdf", ocr=embedded_engine())
