"""The formats real folders hold (issue 48), in files shaped like the ones installed on a Debian
machine and in Python packages, written here so a fresh machine has them: XHTML manuals (an
XML declaration, self-closed elements), PDF text with words hyphenated at a line's end, READMEs
under rows of badges, and old manuals laid out in nested tables with their menus and bars."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader

from citewell.models.parsed import BlockKind
from citewell.parsers import parse

# -- 1. XHTML is HTML, whatever its name -----------------------------------------------------

# As libxslt's and libxml2's manuals are installed (/usr/share/doc/libxslt1-dev/html): Latin-1
# declared in the XML declaration, XHTML 1.0's DOCTYPE, and XML's self-closed elements, among
# them a script, which an HTML parser takes as opening an element that runs to the page's end.
XHTML = """<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1" />
<title>Module templates from libxslt</title><script type="text/javascript" src="toggle.js"/></head>
<body><h1>Module templates</h1><a name="description"/><p>This set of routines evaluates Attribute Value Templates.</p>
<h2>xsltEvalTemplateString</h2><p>Evaluates a template string; the result is freed by the caller.<br/>
Copyright \u00a9 2001 the libxslt authors.</p><p><![CDATA[Returns NULL if ctxt < 0 & inst is NULL.]]></p><div/>
<p>The transformation context is never changed.</p></body></html>
""".encode("latin-1")


@pytest.mark.parametrize("name", ["libxslt-templates.xhtml", "libxslt-templates", "libxslt-templates.xml",
                                  "libxslt-templates.html", None])
def test_xhtml_is_read_as_html_by_its_content_or_its_name(name):
    parsed = parse(XHTML, name)
    assert parsed.mime == "text/html"
    assert parsed.title == "Module templates from libxslt"
    assert "<?xml" not in parsed.text and "<p>" not in parsed.text and "CDATA" not in parsed.text
    assert "This set of routines evaluates Attribute Value Templates." in parsed.text
    assert "Copyright © 2001 the libxslt authors." in parsed.text
    assert "Returns NULL if ctxt < 0 & inst is NULL." in parsed.text  # a CDATA section is text
    assert parsed.text.endswith("The transformation context is never changed.")  # the <script/> swallowed nothing
    at = parsed.text.index("the result is freed")
    assert next(s.heading_path for s in parsed.sections if s.start <= at < s.end) == [
        "Module templates", "xsltEvalTemplateString"]


def test_xhtml_without_a_doctype_is_known_by_its_namespace_and_html_by_its_opening_comment():
    bare = (b'<?xml version="1.0" encoding="UTF-8"?>\n<?xml-stylesheet href="style.css" type="text/css"?>\n'
            b'<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en"><head><title>Quay rules</title></head>'
            b"<body><p>Cranes stop in winds over 20 m/s.</p></body></html>")
    assert parse(bare, "rules").text == "Cranes stop in winds over 20 m/s."
    saved = (b"<!-- saved from url=(0041)http://www.example.org/docs/rules.html -->\n<html><head><title>Quay rules"
             b"</title></head><body><p>Cranes stop in winds over 20 m/s.</p></body></html>")
    assert parse(saved, "rules").mime == "text/html"


RSS = b"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Port news</title><link>http://port.example/</link>
<item><title>East gate</title><description>&lt;p&gt;The east gate closes at ten.&lt;/p&gt;</description></item>
</channel></rss>
"""
ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Port news</title>
<entry><title>East gate</title><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">
<p>The east gate closes at <a href="gate.html">ten</a>.</p></div></content></entry></feed>
"""
FONTCONFIG = b"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<!-- /etc/fonts/local.conf: local fonts -->
<fontconfig><dir>/usr/local/share/fonts</dir><match target="pattern"><test name="family"><string>mono</string>
</test><edit name="family" mode="assign"><string>DejaVu Sans Mono</string></edit></match></fontconfig>
"""
SVG = b"""<?xml version="1.0" standalone="no"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xhtml="http://www.w3.org/1999/xhtml"><text>Quay</text></svg>
"""


@pytest.mark.parametrize("data", [RSS, ATOM, FONTCONFIG, SVG], ids=["rss", "atom", "fontconfig", "svg"])
def test_other_xml_is_not_read_as_html(data):
    for name in ("feed.xml", "feed"):
        parsed = parse(data, name)
        assert parsed.mime == "text/plain"  # read as it is, markup and all: it is not a page
        assert parsed.text.startswith("<?xml")


# -- 2. PDF words hyphenated at a line's end --------------------------------------------------

def justified_pdf(*paragraphs: str) -> bytes:
    """Paragraphs set justified with their words broken at line ends as a typesetter breaks
    them (a hyphen, then the rest of the word on the next line)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    for paragraph in paragraphs:
        pdf.multi_cell(120, 6, paragraph, align="J")
        pdf.ln(4)
    return bytes(pdf.output())


def test_words_broken_at_a_pdf_line_end_are_joined_and_real_hyphens_kept():
    parsed = parse(justified_pdf(
        "The crane operators traced the prob-\nlem to the twistlock sensors, a well-\nknown fault of the older spread-\n"
        "ers on the north quay. The com-\nmand-line tool reads the x86-\n64 logs, and the Jean-\nPaul report says the "
        "long-\nstanding fault is in the spreaders' firm-\nware.",
        "Every problem is logged. The well-known faults and the command-line tool are described in the long-standing "
        "manual of the quay.",
    ), "quay.pdf")
    first = parsed.text.split("\n\n")[0]
    assert first == ("The crane operators traced the problem to the twistlock sensors, a well-known fault of the older "
                     "spreaders on the north quay. The command-line tool reads the x86-64 logs, and the Jean-Paul "
                     "report says the long-standing fault is in the spreaders' firmware.")
    assert "- " not in parsed.text


def test_a_break_is_judged_by_the_document_own_spelling():
    # "e-mail" is how this document spells it; "cross-check" never appears whole, "crosscheck" does;
    # neither "non-interactive" nor "noninteractive" appears, but "interactive" is a word of its own.
    parsed = parse(justified_pdf(
        "Send the shift log by e-\nmail to the harbour master, and cross-\ncheck it with the gate log before the "
        "night shift starts its rounds, in non-\ninteractive mode.",
        "An e-mail reaches the master within the hour. A crosscheck is done by the night shift. The logger is "
        "interactive when a terminal is attached.",
    ), "log.pdf")
    assert "by e-mail to the harbour master, and crosscheck it" in parsed.text
    assert "in non-interactive mode." in parsed.text


def kerned_pdf(*lines: str) -> bytes:
    """A page of lines where "|" marks a kerning gap inside a word: the pieces are drawn apart by
    a millimetre, as a typesetter kerns, and pypdf's extraction puts a space there."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    for number, line in enumerate(lines):
        x = 20.0
        for piece in line.split("|"):
            pdf.text(x, 30 + 8 * number, piece)
            x += pdf.get_string_width(piece) + 1.0
    return bytes(pdf.output())


def test_a_space_kerning_put_inside_a_word_is_taken_out_by_the_document_own_spelling():
    parsed = parse(kerned_pdf(
        "The server checks each file and falls back to the fallback list.",
        "Specifies what checks to perform on serv|er certificates in the f|ile.",
        "When the list is empty it will fall back to the defaults.",
    ), "kerned.pdf")
    assert "serv er" in PdfReader(io.BytesIO(kerned_pdf("on serv|er certificates"))).pages[0].extract_text()
    assert "on server certificates in the file." in parsed.text
    assert "fall back to the defaults" in parsed.text  # two words of the document: "fallback" is another


# -- 3. READMEs: the title is the document's, badges are no text ------------------------------

MARKDOWN_README = b"""[![Build Status](https://github.com/northpier/cranelog/actions/workflows/ci.yml/badge.svg)](https://github.com/northpier/cranelog/actions)
[![PyPI version](https://img.shields.io/pypi/v/cranelog.svg)](https://pypi.org/project/cranelog/)
[![codecov](https://codecov.io/gh/northpier/cranelog/branch/main/graph/badge.svg)](https://codecov.io/gh/northpier/cranelog)

# cranelog [![Downloads](https://static.pepy.tech/badge/cranelog)](https://pepy.tech/project/cranelog)

cranelog reads the twistlock sensors of a quay's cranes and logs every fault.

![The sensor box sends readings to the logger over the quay's network](docs/flow.png)

## Installing

    pip install cranelog
"""


def test_a_markdown_readme_is_titled_by_its_heading_and_its_badges_are_not_text():
    parsed = parse(MARKDOWN_README, "README.md")
    assert parsed.title == "cranelog"
    for badge in ("Build Status", "PyPI version", "codecov", "Downloads"):
        assert badge not in parsed.text
    assert parsed.text.startswith("cranelog\n\ncranelog reads the twistlock sensors")
    assert "The sensor box sends readings to the logger over the quay's network" in parsed.text  # a figure says something


def test_a_markdown_heading_that_is_a_logo_is_named_by_it():
    parsed = parse(b"# ![cranelog](./logo/cranelog-128.png)\n\nLogs crane faults.\n", "README.md")
    assert parsed.title == "cranelog"


RST_README = b""".. image:: https://github.com/northpier/cranelog/actions/workflows/test.yml/badge.svg
  :target: https://github.com/northpier/cranelog/actions/workflows/test.yml
  :alt: Build Status

|Logo|

cranelog |PyPI|
===============

|Py-Versions| |Coverage-Status|

cranelog reads the twistlock sensors of a quay's cranes and logs every fault.

Installing
----------

Run ``pip install cranelog``.

.. |Logo| image:: https://northpier.example/img/logo.gif
.. |PyPI| image:: https://img.shields.io/pypi/v/cranelog.svg
   :target: https://pypi.org/project/cranelog
.. |Py-Versions| image:: https://img.shields.io/pypi/pyversions/cranelog.svg
   :target: https://pypi.org/project/cranelog
.. |Coverage-Status| image:: https://img.shields.io/coveralls/github/northpier/cranelog/main.svg
   :target: https://coveralls.io/github/northpier/cranelog
"""


def test_an_rst_readme_is_titled_by_its_first_section_title_after_its_badges():
    parsed = parse(RST_README, "README.rst")
    assert parsed.title == "cranelog"
    for badge in ("Build Status", "Logo", "PyPI", "Py-Versions", "Coverage-Status"):
        assert badge not in parsed.text
    assert parsed.text.startswith("cranelog\n\ncranelog reads the twistlock sensors")
    at = parsed.text.index("pip install cranelog")
    assert next(s.heading_path for s in parsed.sections if s.start <= at < s.end) == ["cranelog", "Installing"]


def test_an_html_readme_keeps_no_badge_text_and_takes_its_title_from_its_first_heading():
    parsed = parse(b'<p align="center"><a href="https://github.com/northpier/cranelog/actions">'
                   b'<img alt="Build Status" src="https://github.com/northpier/cranelog/workflows/CI/badge.svg"></a>'
                   b' <a href="https://pypi.org/project/cranelog"><img alt="PyPI version" '
                   b'src="https://img.shields.io/pypi/v/cranelog.svg"></a></p>'
                   b"<h1>cranelog</h1><p>cranelog logs every fault of a quay's cranes.</p>", "README.html")
    assert parsed.title == "cranelog"
    assert parsed.text == "cranelog\n\ncranelog logs every fault of a quay's cranes."


# -- 4. Manuals laid out in tables, their navigation repeated ---------------------------------

def xmlsoft_page(title: str, body: str) -> bytes:
    """A page as the xmlsoft.org manuals are built (libxslt's, installed under /usr/share/doc):
    a banner table, then a table whose first column is the site's menu and whose second holds
    the page in boxes of nested tables."""
    menu = "".join(f'<li><a href="{href}">{text}</a></li>' for href, text in [
        ("index.html", "Home"), ("intro.html", "Introduction"), ("docs.html", "Documentation"),
        ("bugs.html", "Reporting bugs and getting help"), ("help.html", "How to help"),
        ("downloads.html", "Downloads"), ("FAQ.html", "FAQ"), ("news.html", "News")])
    return f"""<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head><body bgcolor="#8b7765">
<table border="0" width="100%" cellpadding="5" cellspacing="0" align="center"><tr>
<td width="180"><a href="http://www.gnome.org/"><img src="gnome2.png" alt="GNOME2 Logo" /></a></td>
<td><table border="0" width="90%" cellpadding="2" cellspacing="0" align="center" bgcolor="#000000"><tr><td>
<table width="100%" border="0" cellspacing="1" cellpadding="3" bgcolor="#fffacd"><tr><td align="center">
<h1>The XSLT C library for GNOME</h1><h2>{title}</h2></td></tr></table></td></tr></table></td></tr></table>
<table border="0" cellpadding="4" cellspacing="0" width="100%" align="center"><tr><td bgcolor="#8b7765">
<table border="0" cellspacing="0" cellpadding="2" width="100%"><tr>
<td valign="top" width="200" bgcolor="#8b7765"><table border="0" cellspacing="0" cellpadding="1" width="100%">
<tr><td><table width="100%" border="0" cellspacing="1" cellpadding="3"><tr><td align="center"><center><b>Main Menu</b>
</center></td></tr><tr><td bgcolor="#fffacd"><form action="search.php" method="get"><input name="query" type="text" />
</form><ul>{menu}</ul></td></tr></table></td></tr></table></td>
<td valign="top" bgcolor="#8b7765"><table border="0" cellspacing="0" cellpadding="1" width="100%"><tr><td>
<table border="0" cellspacing="0" cellpadding="1" width="100%" bgcolor="#000000"><tr><td>
<table border="0" cellpadding="3" cellspacing="1" width="100%"><tr><td bgcolor="#fffacd">{body}
<p><a href="bugs.html">Daniel Veillard</a></p></td></tr></table></td></tr></table></td></tr></table></td></tr></table>
</td></tr></table></body></html>""".encode("latin-1")


def test_a_page_laid_out_in_nested_tables_is_read_once_without_its_menu_column():
    parsed = parse(xmlsoft_page("How to help", "<p>You can help the project in various ways:</p><ul>"
                                "<li>provide patches when you find problems</li>"
                                "<li>provide new documentation pieces (translations, examples)</li></ul>"), "help.html")
    assert parsed.title == "How to help"
    assert parsed.text == ("The XSLT C library for GNOME\n\nHow to help\n\nYou can help the project in various ways:\n\n"
                           "provide patches when you find problems\n\n"
                           "provide new documentation pieces (translations, examples)\n\nDaniel Veillard")
    items = [parsed.text[b.start:b.end] for b in parsed.blocks if b.kind is BlockKind.LIST_ITEM]
    assert items == ["provide patches when you find problems", "provide new documentation pieces (translations, examples)"]


# As debiandoc-sgml wrote the Debian FAQ and Reference: the same bar of chapter links over and
# under each chapter.
def debiandoc_bar() -> str:
    chapters = "".join(f' [ <a href="ch-{n}.html">{n}</a> ]' for n in range(1, 13))
    return (f'<p>[ <a href="ch-basics.html">previous</a> ] [ <a href="index.html#contents">Contents</a> ]{chapters}'
            ' [ <a href="ch-software.html">next</a> ]</p>')


DEBIANDOC = f"""<!doctype html public "-//W3C//DTD HTML 3.2 Final//EN"><html><head>
<title>The Debian GNU/Linux FAQ - Compatibility issues</title></head><body>
<p><a name="ch-compat"></a></p><hr>{debiandoc_bar()}<hr>
<h1>The Debian GNU/Linux FAQ<br>Chapter 4 - Compatibility issues</h1>
<h2><a name="s-arches"></a>4.1 On what hardware architectures/systems does Debian GNU/Linux run?</h2>
<p>Debian GNU/Linux includes complete source-code for all of the included programs. See the
<a href="ch-software.html">software chapter</a> and the <a href="ch-software.html">software chapter</a> again.</p>
<ul><li><a href="https://www.debian.org/ports/">ports</a></li><li><a href="https://www.debian.org/releases/">releases</a></li></ul>
<table border="1"><tr><th>Architecture</th><th>Port</th></tr>
<tr><td><a href="ports/amd64.html">amd64</a></td><td><a href="ports/amd64.html">amd64</a></td></tr>
<tr><td><a href="ports/arm64.html">arm64</a></td><td><a href="ports/arm64.html">arm64</a></td></tr></table>
<hr>{debiandoc_bar()}<hr><p>The Debian GNU/Linux FAQ<address>version 12.1, 1 March 2024</address></p>
</body></html>""".encode()


def test_a_bar_of_links_repeated_over_and_under_a_chapter_is_navigation():
    parsed = parse(DEBIANDOC, "ch-compat.html")
    assert "previous" not in parsed.text and "[" not in parsed.text and "Contents" not in parsed.text
    assert "See the software chapter and the software chapter again." in parsed.text  # a link repeated in prose stays
    assert "ports\n\nreleases" in parsed.text  # a list of links said once stays
    rows = [parsed.text[b.start:b.end] for b in parsed.blocks if b.kind is BlockKind.TABLE_ROW]
    assert rows == ["Architecture: amd64; Port: amd64", "Architecture: arm64; Port: arm64"]  # cells stay in their rows


def test_type_links_repeated_under_each_parameter_are_not_navigation():
    # As the Node.js API manual lists a property's types, the same links under many properties.
    types = ('<ul><li><a href="https://developer.mozilla.org/Number" class="type">&lt;number&gt;</a> | '
             '<a href="https://developer.mozilla.org/BigInt" class="type">&lt;bigint&gt;</a></li></ul>')
    html = (f"<html><body><h1>fs.Stats</h1><h2>stats.dev</h2>{types}<p>The device identifier.</p>"
            f"<h2>stats.ino</h2>{types}<p>The inode number.</p></body></html>")
    assert parse(html.encode(), "fs.html").text.count("<number> | <bigint>") == 2


def test_a_docbook_faq_laid_out_in_a_table_keeps_its_sections_and_each_question_on_one_line():
    # As DocBook writes a qandaset (valgrind's FAQ under /usr/share/doc/valgrind/html): a table
    # holding the section's heading, then a row per question (its number, its words) and answer.
    html = (b'<html><head><title>Valgrind FAQ</title></head><body><table width="100%" summary="Q and A Div">'
            b'<tr class="qandadiv"><td colspan="2"><a name="faq.background"></a><h3 class="title">1. Background</h3>'
            b'</td></tr><tr class="question"><td align="left" valign="top"><a name="faq.pronounce"></a><b>1.1.</b></td>'
            b'<td align="left" valign="top"><b>How do you pronounce "Valgrind"?</b></td></tr>'
            b'<tr class="answer"><td>&nbsp;</td><td><p>The "Val" as in the word "value".</p></td></tr></table>'
            b"</body></html>")
    parsed = parse(html, "faq.html")
    assert parsed.text == ('1. Background\n\n1.1. How do you pronounce "Valgrind"?\n\n'
                           'The "Val" as in the word "value".')
    at = parsed.text.index("The ")
    assert next(s.heading_path for s in parsed.sections if s.start <= at < s.end) == ["1. Background"]
