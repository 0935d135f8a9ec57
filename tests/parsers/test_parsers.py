"""Each parser on real generated files, and every typed refusal."""

from __future__ import annotations

import io

import pytest

from citewell import errors
from citewell.models.parsed import BlockKind
from citewell.parsers import parse
from tests import files


def section_of(parsed, needle: str) -> list[str]:
    at = parsed.text.index(needle)
    return next(s.heading_path for s in parsed.sections if s.start <= at < s.end)


def test_markdown_headings_become_sections_and_markup_is_dropped():
    source = b"# Guide\n\nIntro with **bold** and [a link](http://x).\n\n## Leave\n\n- 27 days\n- carry 5\n\n```\ncode  block\n```\n"
    parsed = parse(source, "guide.md")
    assert parsed.mime == "text/markdown"
    assert "Intro with bold and a link." in parsed.text
    assert "**" not in parsed.text and "http://x" not in parsed.text
    assert section_of(parsed, "27 days") == ["Guide", "Leave"]
    assert "code  block" in parsed.text  # code keeps its spacing
    assert parsed.title == "Guide"


def test_html_drops_boilerplate_and_keeps_structure():
    html = (
        b"<html><head><title>Runbook</title><script>track()</script><style>p{}</style></head><body>"
        b"<nav>Home | Wiki</nav><header>Site header</header>"
        b"<h1>Runbook</h1><p>Call <a href='#'>on-call</a> now.<br>Then wait.</p>"
        b"<h2>Codes</h2><table><tr><th>code</th><th>fix</th></tr><tr><td>E7</td><td>reboot</td></tr></table>"
        b"<footer>Copyright</footer></body></html>"
    )
    parsed = parse(html, "runbook.html")
    for noise in ("track()", "Home | Wiki", "Site header", "Copyright", "p{}"):
        assert noise not in parsed.text
    assert "Call on-call now. Then wait." in parsed.text
    assert "code: E7; fix: reboot" in parsed.text
    assert section_of(parsed, "code: E7") == ["Runbook", "Codes"]
    assert parsed.title == "Runbook"


def test_html_is_sniffed_without_an_extension():
    assert parse(b"<!DOCTYPE html><html><body><p>hello</p></body></html>", "page").mime == "text/html"


def test_csv_rows_are_records_with_header_names():
    parsed = parse(b"code,meaning\nE1027,twistlock sensor\nE2001,wind limit\n", "codes.csv")
    assert "code: E1027; meaning: twistlock sensor" in parsed.text
    rows = [b.row for b in parsed.blocks if b.kind is BlockKind.RECORD]
    assert rows == [2, 3]


def test_pdf_text_with_page_numbers():
    data = files.pdf_bytes([("One", ["Alpha paragraph on page one."]), ("Two", ["Beta paragraph on page two."])])
    parsed = parse(data, "doc.pdf")
    assert parsed.mime == "application/pdf"
    beta = parsed.text.index("Beta")
    assert next(b.page for b in parsed.blocks if b.start <= beta < b.end) == 2


def test_a_pdf_without_bookmarks_gets_its_headings_from_their_size_and_paragraphs_from_their_spacing():
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", style="B", size=18)
    pdf.multi_cell(0, 10, "Travel Policy")
    for heading, paragraphs in (("Rail travel", ["Rail travel is standard class. " * 4, "First class needs a director."]),
                                ("Hotels", ["Hotels are paid up to 95 pounds a night."])):
        pdf.set_font("Helvetica", style="B", size=14)
        pdf.ln(3)
        pdf.multi_cell(0, 8, heading)
        pdf.set_font("Helvetica", size=11)
        for paragraph in paragraphs:
            pdf.ln(4)
            pdf.multi_cell(0, 6, paragraph.strip())  # the first one wraps: a wrap is no paragraph break
    parsed = parse(bytes(pdf.output()), "travel.pdf")
    headings = [parsed.text[b.start : b.end] for b in parsed.blocks if b.kind is BlockKind.HEADING]
    assert headings == ["Travel Policy", "Rail travel", "Hotels"]
    assert section_of(parsed, "First class") == ["Travel Policy", "Rail travel"]
    assert section_of(parsed, "95 pounds") == ["Travel Policy", "Hotels"]
    paragraphs = [parsed.text[b.start : b.end] for b in parsed.blocks if b.kind is BlockKind.PARAGRAPH]
    assert paragraphs == [("Rail travel is standard class. " * 4).strip(), "First class needs a director.",
                          "Hotels are paid up to 95 pounds a night."]


def test_a_docx_paragraph_of_lines_in_a_monospace_font_is_code_with_its_lines():
    from docx import Document

    document = Document()
    document.add_paragraph("When your branch is merged, clean it up:")
    commands = document.add_paragraph().add_run("git branch textual -d")
    commands.add_break()
    commands.add_text("git push yourgit :textual")
    commands.font.name = "Courier New"
    document.add_paragraph().add_run("A line of prose set in Courier.").font.name = "Courier New"
    data = io.BytesIO()
    document.save(data)
    parsed = parse(data.getvalue(), "howto.docx")
    kinds = [(block.kind, parsed.text[block.start : block.end]) for block in parsed.blocks]
    assert kinds[1] == (BlockKind.CODE, "git branch textual -d\ngit push yourgit :textual")  # not one line of both
    assert kinds[2] == (BlockKind.PARAGRAPH, "A line of prose set in Courier.")


def test_docx_heading_styles_become_sections_and_tables_records():
    data = files.docx_bytes("Onboarding", [("Equipment", ["Boots and a helmet."])], table=[("item", "size"), ("boots", "44")])
    parsed = parse(data, "onboarding.docx")
    assert section_of(parsed, "Boots and a helmet.") == ["Onboarding", "Equipment"]
    assert "item: boots; size: 44" in parsed.text


def test_xlsx_sheets_are_sections_and_rows_keep_sheet_and_row():
    data = files.xlsx_bytes({"Bands": [("level", "max"), ("L3", 54000)], "Dates": [("cycle", "due"), ("Spring", "2026-03-13")]})
    parsed = parse(data, "bands.xlsx")
    assert section_of(parsed, "level: L3") == ["Bands"]
    block = next(b for b in parsed.blocks if "Spring" in parsed.text[b.start : b.end])
    assert (block.sheet, block.row) == ("Dates", 2)


def test_type_comes_from_bytes_not_the_name():
    data = files.pdf_bytes([("Title", ["Real PDF content."])])
    assert parse(data, "no-extension").mime == "application/pdf"
    assert parse(data, "report.unknownext").mime == "application/pdf"


def test_a_bigtiff_is_known_by_its_bytes_as_a_classic_tiff_is():
    import io

    from PIL import Image

    from citewell.errors import TypeMismatch
    from citewell.parsers.sniff import Kind, detect

    buffer = io.BytesIO()
    Image.new("L", (40, 20), 255).save(buffer, "TIFF", big_tiff=True)
    big = buffer.getvalue()
    assert big[:4] == b"II+\x00"
    assert detect(big, "fax.tiff") is Kind.TIFF and detect(big, None) is Kind.TIFF
    with pytest.raises(TypeMismatch, match="image/tiff"):
        detect(big, "fax.png")


def test_prose_that_starts_like_a_binary_signature_is_still_text():
    # "BM" opens a bitmap; real abstracts start with "BMP is thought to ..." or "BMI-1 is ...".
    parsed = parse(b"BMP is thought to induce differentiation toward multiple lineages.", "abstract.txt")
    assert parsed.mime == "text/plain" and parsed.text.startswith("BMP is thought")
    assert parse(b"BMI-1 is overexpressed in a variety of cancers.", None).mime == "text/plain"


def test_a_zip_renamed_as_an_office_file_is_said_not_valid():
    with pytest.raises(errors.CorruptFile, match="not a valid Word document"):
        parse(files.bare_zip_bytes(), "minutes.docx")
    with pytest.raises(errors.CorruptFile, match="not a valid Excel workbook"):
        parse(files.bare_zip_bytes(), "budget.xlsx")


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_detected(codec):
    text = "Menu: café au lait and croissants for the team.\nThe canteen opens at eight.\n"
    parsed = parse(text.encode(codec), "menu.txt")
    assert parsed.encoding == codec and "café au lait" in parsed.text and "\x00" not in parsed.text
    assert parse(text.encode(codec), None).mime == "text/plain"  # no name to hint at text either


def test_text_in_other_encodings_is_decoded():
    assert "café" in parse("Menu: café au lait and croissants for the team.".encode("utf-16"), "menu.txt").text
    assert "Grüße" in parse("Grüße aus dem Hafen, schöne Grüße an alle.".encode("cp1252"), "note.txt").text


@pytest.mark.parametrize(
    ("data", "name", "error"),
    [
        (b"just text", "report.pdf", errors.TypeMismatch),
        (files.pdf_bytes([("T", ["x"])]), "report.docx", errors.TypeMismatch),
        (files.pdf_bytes([("T", ["x"])]), "notes.md", errors.TypeMismatch),
        (files.png_bytes(), "diagram.png", errors.EmptyText),  # an image, and no OCR engine given
        (b"GIF89a" + b"\x00" * 64, "diagram.gif", errors.UnsupportedType),
        (files.bare_zip_bytes(), "bundle.zip", errors.UnsupportedType),
        (b"\x00\x01\x02binary\x00\xff" * 20, "blob.bin", errors.UnsupportedType),
        (b"%!PS-Adobe-3.0\n%%Title: man-db manual\n/F 12 selectfont (This allo) show\n", "manual.ps", errors.UnsupportedType),
        (b"# Deploy notes\n\nThe key:\n\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n"
         b"-----END OPENSSH PRIVATE KEY-----\n", "notes.md", errors.UnsupportedType),  # key material is never indexed
        (b"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n", "server_key.pem",
         errors.UnsupportedType),
        (files.legacy_doc_bytes(), "contract.doc", errors.LegacyDoc),
        (files.legacy_doc_bytes(), "contract", errors.LegacyDoc),
        (files.encrypted_pdf_bytes(), "secret.pdf", errors.EncryptedPdf),
        (files.blank_pdf_bytes(), "scan.pdf", errors.EmptyText),
        (b"   \n\n  \t", "empty.txt", errors.EmptyText),
        (b"", "zero.txt", errors.EmptyText),
        (b"", "zero.pdf", errors.EmptyText),  # empty before it is anything its name says
        (b"\n \n", "blank.docx", errors.EmptyText),
        (bytes(range(128, 256)) * 40, "garbage.txt", errors.UndecodableText),
        (files.corrupt_docx_bytes(), "broken.docx", errors.CorruptFile),
        (files.bare_zip_bytes(), "renamed.docx", errors.CorruptFile),
        (files.bare_zip_bytes(), "renamed.xlsx", errors.CorruptFile),
    ],
)
def test_typed_errors(data, name, error):
    with pytest.raises(error) as raised:
        parse(data, name)
    assert raised.value.code == error.code and raised.value.message


def test_size_limit_is_checked_before_parsing():
    with pytest.raises(errors.TooLarge):
        parse(b"a" * 2048, "big.txt", max_bytes=1024)
    assert parse(b"a" * 1024, "fits.txt", max_bytes=1024).text == "a" * 1024


def test_a_pdfs_ligatures_are_spelled_out_so_its_words_are_the_words_people_type():
    """A text layer drawn with a font's ligatures holds "conﬁguration" (U+FB01): read as it is, the
    lexical lane never matches "configuration" and an answer quotes a word nobody can search for."""
    from pathlib import Path

    from fpdf import FPDF

    font = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    if not font.exists():
        pytest.skip("needs a Unicode font (Debian's fonts-dejavu-core)")
    pdf = FPDF()
    pdf.add_page()
    pdf.add_font("DejaVu", fname=str(font))
    pdf.set_font("DejaVu", size=11)
    pdf.multi_cell(0, 6, "FONTCONFIG_FILE is used to override the default conﬁguration ﬁle. The ﬂag is oﬀ.")
    parsed = parse(bytes(pdf.output()), "fonts.pdf")
    assert "override the default configuration file. The flag is off." in parsed.text
    assert not any("\ufb00" <= ch <= "\ufb06" for ch in parsed.text)


def test_a_commented_configuration_file_reads_its_comments_as_prose_and_each_setting_alone():
    """The documentation of a configuration file is its comments: without their marks a sentence
    is a sentence ("# for system users ... # can be allocated." was one run of marks), and a
    commented-out default never runs on into the sentence above it."""
    conf = (
        b"# /etc/mirrord.conf: mirrord configuration.\n"
        b"#\n"
        b"# A commented out setting shows the default in the code.\n\n"
        b"# The directory in which mirrored trees are kept.\n"
        b"# Default: MIRROR_ROOT=/srv/mirror\n"
        b"#MIRROR_ROOT=/srv/mirror\n\n"
        b"# How many transfers may run at once. Keep it low on\n"
        b"# small links.\n"
        b"#\n"
        b"MAX_TRANSFERS   4\n"
        b"#retry_delay = 30\n"
        b"##########################\n"
        b"#<host>        <weight>\n"
        b"#        - a host name\n"
    )
    parsed = parse(conf, "mirrord.conf")
    assert "#" not in parsed.text.replace("#MIRROR_ROOT", "").replace("#retry_delay", "").replace("#<host>", "")
    paragraphs = parsed.text.split("\n\n")
    # a comment with the settings it documents, as the file lays them out
    assert "The directory in which mirrored trees are kept.\nDefault: MIRROR_ROOT=/srv/mirror\n#MIRROR_ROOT=/srv/mirror" in paragraphs
    assert "How many transfers may run at once. Keep it low on\nsmall links.\nMAX_TRANSFERS   4\n#retry_delay = 30" in paragraphs
    assert "#<host>        <weight>" in paragraphs  # after a rule: a table's header alone
    assert "       - a host name" in paragraphs  # prose after a setting opens a paragraph; its indentation is kept


def test_plain_text_with_a_few_hash_lines_is_not_read_as_a_configuration_file():
    text = b"Release notes\n\nThe build now runs on #general's bots.\n# not a comment block\nMore prose here.\nAnd here.\n"
    assert "# not a comment block" in parse(text, "notes.txt").text


def test_an_html_definition_list_makes_each_term_and_its_description_one_record():
    """Manuals define functions, types and options in ``<dl>``: read as separate list items, "You
    should use this for all pointers" was quoted without the name it describes."""
    html = (
        b"<html><head><title>Types</title></head><body><h1>Types</h1><p>Descriptors:</p><dl>"
        b"<dt id='a'><code>tf_type_pointer</code><a class='copiable-anchor' href='#a'> &para;</a></dt>"
        b"<dd><p>A generic <code>void *</code> pointer.  You should use this for all pointers.</p></dd>"
        b"<dt>-q</dt><dt>--quiet</dt><dd>Print nothing.</dd>"
        b"<dt>tf_call</dt><dd><p>Calls a function:</p><pre>tf_call(cif, fn, &amp;rc, args);</pre></dd>"
        b"</dl></body></html>"
    )
    parsed = parse(html, "types.html")
    blocks = [(b.kind, parsed.text[b.start:b.end]) for b in parsed.blocks]
    assert (BlockKind.RECORD, "term: tf_type_pointer; description: A generic void * pointer. You should use this for all pointers.") in blocks
    assert (BlockKind.RECORD, "term: -q, --quiet; description: Print nothing.") in blocks
    # a description with an example keeps its blocks: the term, its text, the example as code
    assert (BlockKind.LIST_ITEM, "tf_call") in blocks
    assert any(kind is BlockKind.CODE and "tf_call(cif, fn, &rc, args);" in text for kind, text in blocks)
