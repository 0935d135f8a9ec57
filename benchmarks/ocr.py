"""OCR of scanned pages: ``python -m benchmarks.ocr [--pdf PATH] [--pages N] [--dpi D]``.

A text PDF's pages are rendered to greyscale images (as a scanner at ``--dpi`` would give them),
put in a PDF of images only (no text layer), and that scan is parsed as an upload is, with the
embedded engine (RapidOCR): the one-page cut, the rendering and the recognition are all timed.
Each page's OCR text is then compared, word by word, with the original page's text layer.

The PDFs: one generated here (citewell's docs/how-it-works.md typeset by fpdf2 at 11 pt), and
``--pdf`` (default: the libtasn1 manual that Debian's libtasn1-doc package installs, a
Texinfo-typeset manual with code listings, when it is there). Nothing from ../shared/data.
Writes the block between the ``ocr`` markers of BENCHMARKS.md with ``--write``.
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import os
import re
import statistics
import time
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

from pypdf import PdfReader

from benchmarks.report import OCR_END as END
from benchmarks.report import OCR_START as START
from benchmarks.report import write_block
from citewell.ocr import CONFIDENCE_FLOOR
from citewell.ocr.rapid import RapidOcr
from citewell.parsers import parse

ROOT = Path(__file__).resolve().parents[1]
DEBIAN_PDF = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lowercase words of letters and digits: punctuation, quotes and ligatures are not judged."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def generated_pdf(pages: int) -> bytes:
    """citewell's own how-it-works page, typeset as prose: a real text, ``pages`` pages of it."""
    from fpdf import FPDF

    text = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")
    text = re.sub(r"[`*_#|\[\]]", "", text)
    text = text.encode("latin-1", "replace").decode("latin-1")  # the core fonts' character set
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=20)
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    for paragraph in text.split("\n\n"):
        if pdf.page_no() > pages:
            break
        pdf.multi_cell(0, 5.5, " ".join(paragraph.split()))
        pdf.ln(3)
    return bytes(pdf.output())


def scanned(data: bytes, pages: int, dpi: int) -> tuple[bytes, list[str]]:
    """The first ``pages`` pages rendered to greyscale images in a PDF without a text layer, and
    each page's text layer (the reference)."""
    import pypdfium2 as pdfium
    from fpdf import FPDF

    reader = PdfReader(io.BytesIO(data))
    source = pdfium.PdfDocument(data)
    out = FPDF(unit="pt")
    references = []
    for index in range(min(pages, len(reader.pages))):
        references.append(reader.pages[index].extract_text() or "")
        page = source[index]
        width, height = page.get_size()
        image = page.render(scale=dpi / 72, grayscale=True).to_pil()
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        out.add_page(format=(width, height))
        out.image(buffer, x=0, y=0, w=width, h=height)
    source.close()
    return bytes(out.output()), references


def measure(name: str, data: bytes, pages: int, dpi: int, engine: RapidOcr) -> dict:
    scan, references = scanned(data, pages, dpi)
    assert all(not (p.extract_text() or "").strip() for p in PdfReader(io.BytesIO(scan)).pages), "the scan has a text layer"
    started = time.perf_counter()
    parsed = parse(scan, "scan.pdf", ocr=engine)
    seconds = time.perf_counter() - started
    right = total = found = 0
    per_page = []
    for number, reference in enumerate(references, start=1):
        expected = words(reference)
        read = words(" ".join(parsed.text[b.start:b.end] for b in parsed.blocks if b.page == number))
        matched = sum(block.size for block in difflib.SequenceMatcher(None, expected, read, autojunk=False).get_matching_blocks())
        right, total, found = right + matched, total + len(expected), found + len(read)
        confidence = next((b.ocr_confidence for b in parsed.blocks if b.page == number), None)
        per_page.append({"page": number, "words": len(expected), "right": matched,
                         "share": round(matched / len(expected), 4) if expected else None, "confidence": confidence})
    shares = [p["share"] for p in per_page if p["share"] is not None]
    return {
        "source": name, "pages": len(references), "dpi": dpi, "seconds": round(seconds, 2),
        "pages_per_second": round(len(references) / seconds, 3), "words": total, "words_right": right,
        "share_right": round(right / total, 4), "precision": round(right / found, 4) if found else None,
        "worst_page_share": min(shares), "median_page_share": round(statistics.median(shares), 4),
        "lowest_confidence": min(p["confidence"] for p in per_page if p["confidence"] is not None),
        "per_page": per_page,
    }


def block(results: list[dict], command: str) -> str:
    load = os.getloadavg()[0]
    rows = "\n".join(
        f"| {r['source']} | {r['pages']} | {r['dpi']} | {r['seconds']:.1f} | **{r['pages_per_second']:.2f}** | "
        f"{r['words']:,} | **{r['share_right']:.3f}** | {r['precision']:.3f} | {r['median_page_share']:.3f} / "
        f"{r['worst_page_share']:.3f} | {r['lowest_confidence']:.3f} |"
        for r in results
    )
    return f"""{START}
## OCR of scanned pages (`python -m benchmarks.ocr`)

`{command}` on {datetime.now(UTC):%Y-%m-%d}, 2 cores shared (load average {load:.1f} at the end). Each text PDF's
pages were rendered to greyscale images at the dpi shown, put in a PDF of images only, and that
scan parsed as an upload is, with the embedded engine (RapidOCR 3, PP-OCRv6 small on ONNX Runtime):
cutting each page out, rendering it at up to 2,000 px and recognising it are all in the time
(the models' load, once a process, is not). Words right: the words of letters and digits of the
page's text layer found in order in its OCR text (longest matching runs), of all its words;
precision: of the words OCR gave. Confidence: the lowest page's mean, against the floor of
{CONFIDENCE_FLOOR}.

| PDF | pages | dpi | seconds | pages/s | words | words right | precision | median / worst page | lowest confidence |
|---|---|---|---|---|---|---|---|---|---|
{rows}

The generated PDF is citewell's docs/how-it-works.md typeset by fpdf2 in 11 pt Helvetica; the
manual is the libtasn1 reference that Debian's libtasn1-doc installs (Texinfo, with code
listings and function prototypes).
{END}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf", type=Path, default=DEBIAN_PDF if DEBIAN_PDF.exists() else None,
                        help="a text PDF to scan and read besides the generated one (default: Debian's libtasn1 manual)")
    parser.add_argument("--pages", type=int, default=10, help="pages of each PDF (from the first)")
    parser.add_argument("--dpi", type=int, default=150, help="the scan's resolution")
    parser.add_argument("--write", action="store_true", help="write the block into BENCHMARKS.md")
    args = parser.parse_args()
    engine = RapidOcr()
    started = time.perf_counter()
    engine.read(_blank_png())  # the models load here, not in the measured pages
    load = time.perf_counter() - started
    sources = [("generated (how-it-works.md)", generated_pdf(args.pages))]
    if args.pdf:
        sources.append((args.pdf.name, args.pdf.read_bytes()))
    results = [measure(name, data, args.pages, args.dpi, engine) for name, data in sources]
    report = {"model_load_seconds": round(load, 2), "results": results}
    print(json.dumps(report, indent=1))
    if args.write:
        command = f"python -m benchmarks.ocr --pages {args.pages} --dpi {args.dpi}" + (f" --pdf {args.pdf}" if args.pdf else "")
        write_block(ROOT / "BENCHMARKS.md", block(results, command), START, END)


def _blank_png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("L", (200, 100), 255).save(buffer, "PNG")
    return buffer.getvalue()


if __name__ == "__main__":
    main()
