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
