"""A citation, and a refusal's closest passage, say where they sit in the file: the PDF pages, or a
spreadsheet's sheet and rows."""

from __future__ import annotations

from citewell.answers.service import ask, recorded_citations
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.identity import Identity
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


# ---------- the place of the quote, not of its chunk ----------

PAGE_TEXTS = [
    "The harbour office opens at seven in the morning on weekdays.",
    "Visitors collect a day badge from the gate house before they walk onto the quay.",
    "Forklift drivers renew their licence every three years at the training centre.",
]


def plain_pdf(pages: list[str]) -> bytes:
    """A PDF with one paragraph a page, all in the body's font: no headings, so its pages are one
    section and, this short, one chunk that spans them all."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


PARTS = ["ballast pump", "hatch sensor", "crane brake", "reefer plug", "gate barrier", "mooring winch", "fuel valve",
         "radar mast", "bilge alarm", "deck light", "tide gauge", "spreader lock", "twist lock"]


def records(count: int) -> list[list[object]]:
    """A header and ``count`` rows of error codes: a code, what failed and what to do about it."""
    rows: list[list[object]] = [["code", "meaning", "action"]]
    for i in range(count):
        part = PARTS[i % len(PARTS)]
        rows.append([f"E{1000 + i}", f"{part} fault {i // len(PARTS)}", f"Restart the {part} controller and log it"])
    return rows


def only_chunk(services, doc_id: str):
    document = services.documents.get_document("northpier", doc_id)
    (chunk,) = services.chunks.get_chunks("northpier", doc_id, document.active_revision)
    return chunk


def test_a_pdf_citation_names_the_page_of_its_sentence_not_its_chunks_pages(services):
    add(services, plain_pdf(PAGE_TEXTS), "office.pdf")
    assert only_chunk(services, "office.pdf").pages == [1, 2, 3]  # one chunk over the three pages
    answer = ask(services, STAFF, "Where do visitors collect a day badge?")
    (citation,) = answer.citations
    assert "gate house" in citation.quote and "seven in the morning" not in citation.quote
    assert citation.pages == [2], citation.pages
    assert recorded_citations(services, STAFF, answer.answer_id).citations[0].pages == [2]


def test_a_refusals_passage_keeps_its_chunks_pages(services):
    add(services, plain_pdf(PAGE_TEXTS), "office.pdf")
    refusal = ask(services, STAFF, "Which football team won the national cup in 1998?")
    assert refusal.refused and refusal.closest
    assert [p.pages for p in refusal.closest] == [[1, 2, 3]]  # a passage is the whole chunk, shown whole


def test_a_csv_citation_names_the_row_of_its_record(services):
    rows = records(200)
    add(services, "\n".join(",".join(map(str, r)) for r in rows).encode(), "codes.csv")
    answer = ask(services, STAFF, "What is the action for code E1137?")
    (citation,) = answer.citations
    assert "E1137" in citation.quote
    chunk = services.chunks.get_chunks_by_id("northpier", [(citation.document_id, citation.revision, citation.chunk_id)])
    assert len(next(iter(chunk.values())).rows) > 1  # the chunk holds other records too
    assert citation.rows == [139] and citation.sheet is None  # header row 1, E1000 row 2


def test_an_xlsx_citation_names_the_sheet_and_row_of_its_record(services):
    rows = records(200)
    rows.insert(60, [None, None, None])  # an empty row: the sheet's row numbers, not a count of records
    add(services, xlsx_bytes({"Notes": [["Codes are reviewed every April."]], "Codes": rows}), "codes.xlsx")
    answer = ask(services, STAFF, "What is the action for code E1137?")
    (citation,) = answer.citations
    assert "E1137" in citation.quote
    assert citation.sheet == "Codes" and citation.rows == [140] and citation.pages == []


def test_chunk_records_written_before_the_map_still_load_and_cite_their_chunks_range(services):
    from citewell.models.chunks import Chunk

    add(services, plain_pdf(PAGE_TEXTS), "office.pdf")
    chunk = only_chunk(services, "office.pdf")
    assert chunk.page_starts  # what a record of this version keeps
    old = Chunk.model_validate_json(chunk.model_dump_json(exclude={"page_starts", "row_starts"}))
    services.chunks.put_chunks([old])  # as an earlier version wrote it
    assert only_chunk(services, "office.pdf").page_starts == []
    (citation,) = ask(services, STAFF, "Where do visitors collect a day badge?").citations
    assert "gate house" in citation.quote and citation.pages == [1, 2, 3]


def test_an_elided_quote_shows_its_parts_and_names_only_their_pages(services):
    from citewell.answers.evidence import gather_evidence
    from citewell.answers.verify import verify
    from citewell.models.answers import Draft
    from citewell.search import search

    add(services, plain_pdf(PAGE_TEXTS), "office.pdf")
    (item,) = gather_evidence(services, STAFF, search(services, STAFF, "harbour office forklift licence").hits)
    draft = Draft(text="It opens at seven, and licences are renewed every three years [S1].", refused=False,
                  quotes={"S1": f"{PAGE_TEXTS[0]} … {PAGE_TEXTS[2]}"})
    (citation,) = verify(draft, [item]).citations
    assert citation.quote == f"{PAGE_TEXTS[0]} … {PAGE_TEXTS[2]}"  # not the page-2 sentence between them
    assert citation.pages == [1, 3]


def test_two_neighbouring_sentences_are_quoted_with_the_space_between_them():
    from citewell.answers.extractive.quoting import quotes_of
    from citewell.answers.extractive.units import units_of
    from citewell.models.evidence import EvidenceItem, EvidenceSpan

    text = "Rail travel is standard class. First class needs the written approval of a director. Taxis are rare."
    item = EvidenceItem(ref="S1", document_id="d", revision="r", title="Travel", section_path=[], text=text, rank=1,
                        spans=[EvidenceSpan(chunk_id="d#0#0", section_path=[], start=0, end=len(text))])
    first, second, third = units_of(item)
    # Sentence units run on to the next sentence: joined stripped, they lost the space ("class.First").
    assert quotes_of([first, second]) == {"S1": "Rail travel is standard class. First class needs the written approval of a director."}
    assert quotes_of([first, third]) == {"S1": "Rail travel is standard class. … Taxis are rare."}
