"""Files shaped like the real documents that broke ingestion (issue 13), written here so a
fresh machine has them: legacy code pages, manuals as HTML and PDF, hard-wrapped licences,
a single-line dump and pathological nesting."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from citewell import errors
from citewell.chunking import SENTENCE_WINDOW, Chunker, ChunkingConfig, sentence_spans
from citewell.models.documents import Document
from citewell.parsers import parse

DOC = Document(document_id="manual", tenant="t", allowed_roles=frozenset({"r"}), title="Manual", source="test")


def section_of(parsed, needle: str) -> list[str]:
    at = parsed.text.index(needle)
    return next(s.heading_path for s in parsed.sections if s.start <= at < s.end)


# -- 1. legacy encodings -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("crème", "cp1252"),
        ("€5", "cp1252"),
        ("“quoted”", "cp1252"),
        ("Price: €5 – “fair”.", "cp1252"),
        ("Une crème brûlée coûte €5 ici, “vraiment”.", "cp1252"),
        ("Le café est à côté de la gare; très bon marché.", "latin-1"),
        ("Grüße aus dem Hafen, schöne Grüße an alle.", "latin-1"),
    ],
)
def test_western_legacy_text_is_decoded_as_windows_1252(text, codec):
    parsed = parse(text.encode(codec), "note.txt")
    assert parsed.text == text
    assert parsed.encoding == "cp1252"  # Latin-1 is a subset of it for every printable byte


def test_a_4kb_english_file_with_one_french_line_is_read_right():
    english = (
        "The harbour master keeps the berth schedule up to date and posts changes every morning. "
        "Crane operators check the twistlock sensors before each shift and log any fault. "
    )
    body = "\n".join([english] * 24)
    text = body[:2000] + "\nLa crème brûlée du café coûte €5, dit-il: “très bon”.\n" + body[2000:4000]
    parsed = parse(text.encode("cp1252"), "notes.txt")
    assert "La crème brûlée du café coûte €5, dit-il: “très bon”." in parsed.text
    assert parsed.encoding == "cp1252"


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("Привет, как дела? Это пример русского текста для проверки кодировки.", "cp1251"),
        ("Καλημέρα, τι κάνετε; Αυτό είναι ένα ελληνικό κείμενο για δοκιμή.", "cp1253"),
        ("Zażółć gęślą jaźń. Dzień dobry, jak się masz? Żółw łowi ryby.", "cp1250"),
        ("これは日本語のテキストです。東京は大きな都市です。", "shift_jis"),
    ],
)
def test_other_scripts_are_not_forced_into_windows_1252(text, codec):
    assert parse(text.encode(codec), "note.txt").text == text


def test_the_encoding_used_is_recorded():
    assert parse("plain ascii and café".encode(), "a.txt").encoding == "utf-8"
    assert parse("Menu: café au lait and croissants.".encode("utf-16"), "a.txt").encoding == "utf-16"
    assert parse(b"<html><body><p>caf\xe9</p></body></html>", "a.html").encoding == "cp1252"


# -- 2. a single-line dump: bounded work per character ---------------------------------------


def test_sentence_splitting_of_one_long_line_works_on_bounded_windows(monkeypatch):
    from citewell import chunking

    seen: list[int] = []
    real = chunking._pysbd_starts

    def spy(text: str, start: int, end: int) -> list[int]:
        seen.append(end - start)
        return real(text, start, end)

    monkeypatch.setattr(chunking, "_pysbd_starts", spy)
    sentence = "The crane on the north quay stopped after the wind alarm. "
    text = sentence * 2000  # ~118 KB on one line
    spans = sentence_spans(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert len(spans) == 2000
    assert max(seen) <= SENTENCE_WINDOW
    assert sum(seen) <= 1.2 * len(text)  # each character is segmented about once, not once per window


def test_a_long_line_without_sentence_ends_is_segmented_once_per_character(monkeypatch):
    from citewell import chunking

    seen: list[int] = []
    real = chunking._pysbd_starts
    monkeypatch.setattr(chunking, "_pysbd_starts", lambda t, s, e: seen.append(e - s) or real(t, s, e))
    text = "word, " * 40000  # a CSV-like dump: no sentence ends at all
    spans = sentence_spans(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert sum(seen) <= 1.2 * len(text)


class CountingText(str):
    """The extracted text, tallying every character copied out of it by slicing."""

    copied = 0

    def __getitem__(self, key):  # type: ignore[override]
        piece = str.__getitem__(self, key)
        CountingText.copied += len(piece)
        return piece


def test_chunking_one_long_line_copies_each_character_a_bounded_number_of_times(embedder):
    from citewell.models.parsed import BlockKind, ParsedDocument
    from citewell.parsers.builder import TextBuilder

    sentence = "Crane {} on the north quay stopped after the wind alarm and the operator logged it. "
    builder = TextBuilder()
    builder.block(BlockKind.CODE, "".join(sentence.format(i) for i in range(2500)))  # ~210 KB, one line
    built = builder.build("text/plain")
    parsed = ParsedDocument.model_construct(**{**dict(built), "text": CountingText(built.text)})
    CountingText.copied = 0
    chunks = Chunker(embedder.count_tokens).chunk(parsed, DOC, "r1")
    assert len(chunks) > 100
    assert CountingText.copied <= 12 * len(built.text)  # linear: not a prefix copy per chunk


# -- 3. HTML navigation and permalinks ----------------------------------------------------


TEXINFO = """<!DOCTYPE html>
<html><head><title>Thread Safety (libffi)</title></head><body>
<div class="section-level-extent" id="Thread-Safety">
<div class="nav-panel">
<p>
Next: <a href="Memory-Usage.html" accesskey="n" rel="next">Memory Usage</a>, Previous: <a href="Closure-Example.html" accesskey="p" rel="prev">Closure Example</a>, Up: <a href="Using-libffi.html" accesskey="u" rel="up">Using libffi</a> &nbsp; [<a href="index.html#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a href="Index.html" title="Index" rel="index">Index</a>]</p>
</div>
<hr>
<h3 class="section" id="Thread-Safety-1">2.6 Thread Safety</h3>
<p>libffi is not completely thread-safe. However, many parts are, and if you follow
some simple rules, you can use it safely in a multi-threaded program.</p>
<hr>
<div class="nav-panel">
<p>
Next: <a href="Memory-Usage.html">Memory Usage</a>, Previous: <a href="Closure-Example.html">Closure Example</a>, Up: <a href="Using-libffi.html">Using libffi</a> &nbsp; [<a href="index.html#SEC_Contents">Contents</a>][<a href="Index.html">Index</a>]</p>
</div>
</div>
</body></html>"""

OLD_TEXINFO = """<html><head><title>Closures</title></head><body>
<div class="header"><p>
Previous: <a href="Closure-Example.html#Closure-Example" accesskey="p" rel="prev">Closure Example</a>, Up: <a href="Using-libffi.html#Using-libffi" accesskey="u" rel="up">Using libffi</a> &nbsp; [<a href="Index.html#Index" title="Index" rel="index">Index</a>]</p>
</div>
<h3 class="section">2.5 Closures</h3>
<p>The closure API lets a C function be called through a generated trampoline.</p>
</body></html>"""

SPHINX = """<!DOCTYPE html><html><head><title>Installing &#8212; CDK docs</title></head><body>
<div class="related" role="navigation" aria-label="Related"><ul><li><a href="genindex.html">index</a></li></ul></div>
<div class="document"><div class="body" role="main">
<section id="installing">
<h1>Installing<a class="headerlink" href="#installing" title="Link to this heading">¶</a></h1>
<p>Install the toolkit with pip before you bootstrap an account.</p>
<section id="requirements">
<h2>Requirements<a class="headerlink" href="#requirements" title="Link to this heading">¶</a></h2>
<p>Python 3.9 or later is required.</p>
<dl class="py function"><dt class="sig sig-object py" id="cdk.synth">
<span class="sig-name descname">synth</span>()<a class="headerlink" href="#cdk.synth" title="Link to this definition">¶</a></dt>
<dd><p>Synthesises the app into a cloud assembly.</p></dd></dl>
</section></section>
<div class="rst-footer-buttons"><a href="usage.html" class="btn" rel="next">Next <span>&#8594;</span></a>
<a href="index.html" class="btn" rel="prev"><span>&#8592;</span> Previous</a></div>
</div></div></body></html>"""


def test_texinfo_navigation_bars_are_dropped_and_content_kept():
    parsed = parse(TEXINFO.encode(), "Thread-Safety.html")
    assert "Previous:" not in parsed.text and "Up:" not in parsed.text and "[Index]" not in parsed.text
    assert "libffi is not completely thread-safe." in parsed.text
    assert section_of(parsed, "libffi is not") == ["2.6 Thread Safety"]
    old = parse(OLD_TEXINFO.encode(), "Closures.html")
    assert old.text.startswith("2.5 Closures")
    assert "Closure Example, Up" not in old.text


def test_sphinx_permalinks_stay_out_of_text_and_section_paths():
    parsed = parse(SPHINX.encode(), "installing.html")
    assert "¶" not in parsed.text
    assert all("¶" not in h for s in parsed.sections for h in s.heading_path)
    assert section_of(parsed, "Python 3.9") == ["Installing", "Requirements"]
    assert "Synthesises the app" in parsed.text and "synth()" in parsed.text
    assert "Previous" not in parsed.text and "Next" not in parsed.text


def test_a_previous_next_bar_is_navigation_but_prose_about_next_steps_is_not():
    html = (
        b"<html><body><p><a href='a.html'>&laquo; Previous</a> | <a href='index.html'>Up</a> | "
        b"<a href='c.html'>Next &raquo;</a></p><h1>Steps</h1><p>Next: run the migration, then restart.</p></body></html>"
    )
    parsed = parse(html, "steps.html")
    assert parsed.text == "Steps\n\nNext: run the migration, then restart."


# -- 4. PDF tables of contents, index pages, outline and pages ------------------------------


def manual_pdf() -> bytes:
    """A GNU-manual-shaped PDF: a contents page with dot leaders, chapters with bookmarks, and
    an index page of ``name . . . . 15`` entries."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)

    def line(text: str) -> None:
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")

    pdf.add_page()
    line("Table of Contents")
    for name, page in [("1 Introduction", 2), ("2 Using the library", 3), ("2.1 Reading values", 3), ("Index", 4)]:
        line(f"{name} " + ". " * 30 + str(page))
    pdf.add_page()
    pdf.start_section("1 Introduction", level=0)
    line("1 Introduction")
    line("This library reads and writes ASN.1 structures in DER encoding.")
    pdf.add_page()
    pdf.start_section("2 Using the library", level=0)
    line("2 Using the library")
    line("Create a structure before you read values from it.")
    pdf.start_section("2.1 Reading values", level=1)
    line("2.1 Reading values")
    line("The function asn1_read_value returns the value of an element in the structure.")
    pdf.add_page()
    pdf.start_section("Index", level=0)
    line("Index")
    for name, page in [("asn1_create_element", 3), ("asn1_delete_structure", 3), ("asn1_read_value", 3),
                       ("asn1_write_value", 2), ("DER", 2), ("structure", 3)]:
        line(f"{name} " + ". " * 25 + str(page))
    line(". . . . . . . . 12 asn1_der_decoding . . . . . . . . . . 11 asn1_der_coding")  # two columns run together
    return bytes(pdf.output())


def test_pdf_contents_and_index_pages_stay_out_of_the_text():
    parsed = parse(manual_pdf(), "libtasn1.pdf")
    assert ". . . ." not in parsed.text and "asn1_der_coding" not in parsed.text
    assert parsed.text.count("asn1_read_value") == 1  # the entry in the body, not the index
    assert "returns the value of an element" in parsed.text


def test_pdf_bookmarks_become_section_paths_and_pages_reach_chunks(embedder):
    parsed = parse(manual_pdf(), "libtasn1.pdf")
    assert section_of(parsed, "reads and writes ASN.1") == ["1 Introduction"]
    assert section_of(parsed, "Create a structure") == ["2 Using the library"]
    assert section_of(parsed, "returns the value") == ["2 Using the library", "2.1 Reading values"]
    chunks = Chunker(embedder.count_tokens).chunk(parsed, DOC, "r1")
    by_text = {c.text: c for c in chunks}
    reading = next(c for t, c in by_text.items() if "returns the value" in t)
    assert reading.pages == [3]
    assert reading.heading_path == ["2 Using the library", "2.1 Reading values"]
    assert next(c for t, c in by_text.items() if "ASN.1 structures" in t).pages == [2]


# -- 5. hard-wrapped plain text ----------------------------------------------------------


GPL = b"""                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>
 Everyone is permitted to copy and distribute verbatim copies
 of this license document, but changing it is not allowed.

                            Preamble

  The GNU General Public License is a free, copyleft license for
software and other kinds of works.

  The licenses for most software and other practical works are designed
to take away your freedom to share and change the works.  By contrast,
the GNU General Public License is intended to guarantee your freedom to
share and change all versions of a program--to make sure it remains free
software for all its users.
"""


def test_a_line_break_inside_a_paragraph_is_not_a_sentence_end():
    parsed = parse(GPL, "COPYING")
    text = parsed.text
    starts = {text[a:b].strip()[:40] for block in parsed.blocks for a, b in sentence_spans(text, block.start, block.end)}
    for wrapped in ("of this license document", "software and other kinds", "to take away your freedom",
                    "the GNU General Public License is intended", "share and change all versions"):
        assert not any(s.startswith(wrapped) for s in starts), wrapped
    sentences = [" ".join(text[a:b].split()) for a, b in sentence_spans(text)]
    whole = "Everyone is permitted to copy and distribute verbatim copies of this license document, but changing it is not allowed."
    assert any(whole in s for s in sentences)
    assert any(s.startswith("By contrast,") and s.endswith("for all its users.") for s in sentences)


def test_wrapped_text_chunks_start_at_sentences(embedder):
    paragraph = (
        "The licenses for most software and other practical works are designed to take away your freedom "
        "to share and change the works. By contrast, the license is intended to guarantee your freedom to "
        "share and change all versions of a program. "
    ) * 12
    words, lines, line = paragraph.split(), [], ""
    for word in words:  # wrap at 70 columns, as licence texts are
        if len(line) + len(word) + 1 > 70:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    parsed = parse("\n".join(lines).encode(), "LICENSE")
    chunks = Chunker(embedder.count_tokens, ChunkingConfig(max_tokens=60, overlap_tokens=15)).chunk(parsed, DOC, "r1")
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.lstrip()[:1].isupper(), chunk.text[:60]


def test_list_lines_still_end_their_items():
    text = "Steps to follow\n- stop the crane\n- lock the spreader\n- call the harbour master\n"
    parsed = parse(text.encode(), "steps.txt")
    sentences = [parsed.text[a:b].strip() for a, b in sentence_spans(parsed.text)]
    assert "- lock the spreader" in sentences


# -- 6. pathological nesting ----------------------------------------------------------------


def test_html_nested_a_thousand_divs_deep_is_parsed():
    html = "<html><body>" + "<div>" * 1000 + "<p>Deep content survives.</p>" + "</div>" * 1000 + "<p>After.</p></body></html>"
    parsed = parse(html.encode(), "deep.html")
    assert parsed.text == "Deep content survives.\n\nAfter."


def test_html_nested_beyond_any_sane_depth_is_a_typed_error_or_parsed():
    html = "<html><body>" + "<div><section>" * 20000 + "text" + "</section></div>" * 20000 + "</body></html>"
    try:
        parsed = parse(html.encode(), "deeper.html")
    except errors.IngestError as exc:
        assert "deep" in exc.message
    else:
        assert parsed.text == "text"


# -- 7. library chatter ---------------------------------------------------------------------


def truncated_pdf() -> bytes:
    """A download cut short: no %%EOF. pypdf warns "EOF marker not found", then gives up."""
    from citewell.samples.writer import pdf_bytes

    data = pdf_bytes([("Title", ["Body text of a truncated PDF."])])
    return data[: data.rindex(b"%%EOF")]


def test_pdf_library_warnings_do_not_reach_stderr():
    script = (
        "import sys\n"
        "from citewell.errors import IngestError\n"
        "from citewell.parsers import parse\n"
        "try:\n"
        "    parse(sys.stdin.buffer.read(), 'truncated.pdf')\n"
        "except IngestError as exc:\n"
        "    print(exc.code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], check=False, input=truncated_pdf(), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == b"corrupt_file"
    assert done.stderr == b""


def test_pdf_library_warnings_are_logged_at_debug(caplog):
    with caplog.at_level(logging.DEBUG), pytest.raises(errors.CorruptFile):
        parse(truncated_pdf(), "truncated.pdf")
    ours = [r for r in caplog.records if r.name.startswith("citewell")]
    assert any("EOF marker not found" in r.getMessage() and r.levelno == logging.DEBUG for r in ours)
