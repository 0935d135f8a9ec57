"""The formats real folders hold (issue 48), in files shaped like the ones installed on a Debian
machine and in Python packages, written here so a fresh machine has them: XHTML manuals (an
XML declaration, self-closed elements), PDF text with words hyphenated at a line's end, READMEs
under rows of badges, and old manuals laid out in nested tables with their menus and bars."""

from __future__ import annotations

from citewell.parsers import parse

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
    # "e-mail" is how this document spells it; "cross-check" never appears whole, "crosscheck" does.
    parsed = parse(justified_pdf(
        "Send the shift log by e-\nmail to the harbour master, and cross-\ncheck it with the gate log before the "
        "night shift starts its rounds.",
        "An e-mail reaches the master within the hour. A crosscheck is done by the night shift.",
    ), "log.pdf")
    assert "by e-mail to the harbour master, and crosscheck it" in parsed.text


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
