"""A citation, and a refusal's closest passage, say where they sit in the file: the PDF pages, or a
spreadsheet's sheet and rows."""

from __future__ import annotations

from citewell.answers.service import ask, recorded_citations
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models import Identity
from citewell.samples.writer import pdf_bytes, xlsx_bytes

STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))


def add(services, data: bytes, doc_id: str) -> None:
    (outcome,) = ingest(services, [IngestRequest(document_id=doc_id, tenant="northpier", allowed_roles=frozenset({"staff"}),
                                                 data=data, filename=doc_id)])
    assert outcome.status == "published", outcome


def filler(topic: str, count: int) -> list[str]:
    """Paragraphs of plain prose about ``topic``, enough to fill a page with several chunks."""
    return [f"Paragraph {i} about the {topic} explains one more routine of the harbour office in plain words, "
            f"so that the {topic} section runs long enough to need more than one passage." for i in range(count)]


def test_a_pdf_citation_names_the_pages_of_its_passage(services):
    add(services, pdf_bytes([
        ("Meals", filler("canteen", 12)),
        ("Parking", filler("car park", 12)),
        ("Hotels", ["The hotel allowance in port cities is 145 euros per night, breakfast included."]),
    ], title="Travel policy"), "travel.pdf")
    answer = ask(services, STAFF, "How much is the hotel allowance per night in port cities?")
    (citation,) = answer.citations
    assert "145 euros" in citation.quote
    assert 3 in citation.pages and 1 not in citation.pages, citation.pages  # the cited passage's pages, not the file's
    assert citation.sheet is None and citation.rows == []
    assert recorded_citations(services, STAFF, answer.answer_id).citations[0].pages == citation.pages  # kept with the record


def test_a_spreadsheet_citation_names_its_sheet_and_rows(services):
    add(services, xlsx_bytes({
        "Notes": [["Salary bands are reviewed every April."]],
        "Bands": [["level", "title", "minimum (EUR)", "maximum (EUR)"], ["L1", "Terminal operative", 32000, 38000],
                  ["L3", "Shift lead", 44000, 54000]],
    }), "bands.xlsx")
    answer = ask(services, STAFF, "What is the maximum salary of a shift lead?")
    (citation,) = answer.citations
    assert "Shift lead" in citation.quote
    assert citation.sheet == "Bands" and 3 in citation.rows and citation.pages == []


def test_a_refusals_closest_passages_name_their_place(services):
    add(services, xlsx_bytes({"Bands": [["level", "title", "minimum (EUR)", "maximum (EUR)"],
                                        ["L3", "Shift lead", 44000, 54000]]}), "bands.xlsx")
    refusal = ask(services, STAFF, "Which football team won the national cup in 1998?")
    assert refusal.refused and refusal.closest
    assert all(p.sheet == "Bands" and 2 in p.rows for p in refusal.closest)
