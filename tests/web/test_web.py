"""The web page in a real browser against a real ``citewell serve``: signing in, asking and
opening sources, refusals, search, uploads that publish or fail with their reason, deletion,
and that no identity ever sees another's documents anywhere on the page.

One server per module over a home this module ingests; one headless Chromium for all of it.
Each test signs in afresh, so none depends on another's order. The ask, source, refusal,
unconfirmed, documents and phone-width views are photographed into this run's temporary
folder, or into docs/screenshots/ when ``make screenshots`` asks for them (``CITEWELL_SCREENSHOTS``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.web_browser import (
    PHONE,
    ask,
    assert_clean,
    browser_paths,
    choose_roles,
    citewell,
    delete_button,
    documents,
    everything,
    go,
    ingest,
    layout_shift,
    mint,
    screenshot,
    search,
    serving,
    settled,
    sign_in,
    sign_out,
    signed_out,
    start_browser,
    upload,
    wait_for,
)

if isinstance(browser_paths(), str):
    pytest.skip(str(browser_paths()), allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

WRITE = "citewell:write"

HANDBOOK = """# Northpier Staff Handbook

## Annual leave

Full-time staff receive 27 days of paid annual leave per calendar year, plus public holidays.
Part-time staff receive leave in proportion to their contracted hours.

Up to five unused days may be carried into the next year. Carried days expire on 31 March.

## Working hours

The standard working week is 37.5 hours, Monday to Friday. Core hours are 10:00 to 15:00.

## Expenses

Expense claims are submitted through the finance portal within 30 days of the expense.
"""

ERROR_CODES = """code,meaning,action
E1027,Ballast pump pressure low,Restart the ballast pump controller and log the event in the bridge journal.
E2040,Hatch sensor offline,Check the hatch sensor cable and reseat the connector.
"""

BLUEFEN_GUIDE = """# Bluefen Employee Guide

## Holidays

Every Bluefen employee receives 31 days of holiday each year, booked through the Kestrel rota.

## Bicycles

Bluefen lends folding bicycles to staff who commute by train.
"""

# Attacker-controlled text: a document is whatever its uploader wrote.
HOSTILE_TITLE = '<img src=x onerror="window.__pwned=\'title\'"> Tide notes'
HOSTILE_TEXT = """Tide notes for the harbour office.

The tide table is posted at <img src=x onerror="window.__pwned='img'"> the harbour gate every Monday morning.
<script>window.__pwned = 'script'</script> Pilots collect the tide table from the harbour gate.
"""

# A tenant of its own, so its documents change no other test's answers: a real multi-page PDF
# (fpdf2) and a hard-wrapped text file.
TRAVEL_PAGES = [
    ("Travel and Expenses Policy", [
        "Business travel must be approved by your line manager before booking. Book trains for "
        "journeys under four hours; flights need the approval of a director.",
        "Rail travel is standard class for every journey. First class needs the written approval of a director."]),
    ("Hotels", ["Hotel costs are reimbursed up to 140 euros per night in port cities and 110 euros elsewhere."]),
    ("Meals", ["The daily meal allowance is 45 euros for a full travel day and 20 euros for a half day."]),
]
PILOTS = """Pilot boat notes for the east quay.

The pilot boat leaves the north pier at six every morning, weather
permitting, and returns before noon. Harbour pilots board it from the
stone steps beside the crane.
"""

# Text only support may read: staff of the same tenant and everyone of bluefen must never see it.
SUPPORT_ONLY = ("Ballast pump", "bridge journal", "error-codes.csv")
NORTHPIER_ONLY = ("Northpier Staff Handbook", "27 days", "Tide notes", *SUPPORT_ONLY)
BLUEFEN_ONLY = ("Bluefen Employee Guide", "Kestrel rota", "folding bicycles")


@dataclass
class Site:
    base: str
    home: Path
    files: Path
    tokens: dict[str, str]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("web")
    home, files = root / "home", root / "files"
    for path, text in {
        "northpier/staff/handbook.md": HANDBOOK,
        "northpier/support/error-codes.csv": ERROR_CODES,
        "bluefen/staff/guide.md": BLUEFEN_GUIDE,
        "northpier/hostile/tide.txt": HOSTILE_TEXT,
    }.items():
        (files / path).parent.mkdir(parents=True, exist_ok=True)
        (files / path).write_text(text, encoding="utf-8")
    ingest(home, files / "northpier/staff/handbook.md", "northpier", "staff")
    ingest(home, files / "northpier/support/error-codes.csv", "northpier", "support")
    ingest(home, files / "bluefen/staff/guide.md", "bluefen", "staff")
    ingest(home, files / "northpier/hostile/tide.txt", "northpier", "staff", "--title", HOSTILE_TITLE)
    from citewell.samples.writer import pdf_bytes

    (files / "eastquay").mkdir()
    (files / "eastquay/travel.pdf").write_bytes(pdf_bytes(TRAVEL_PAGES, title="Travel and Expenses Policy"))
    (files / "eastquay/pilots.txt").write_text(PILOTS, encoding="utf-8")
    ingest(home, files / "eastquay", "eastquay", "staff")
    tokens = {
        "staff": mint(home, "northpier", "staff"),
        "support": mint(home, "northpier", "support"),
        "writer": mint(home, "northpier", f"staff,{WRITE}"),
        "bluefen": mint(home, "bluefen", "staff"),
        "eastquay": mint(home, "eastquay", "staff"),
    }
    with serving(home, "--demo") as base:
        yield Site(base, home, files, tokens)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = start_browser()
    yield driver
    driver.quit()


@pytest.fixture
def page(browser: Any, site: Site) -> Iterator[Any]:
    """A signed-out page at desktop size; afterwards, the page must have logged no error."""
    yield signed_out(browser, site.base)
    assert_clean(browser)


# ---------- signing in ----------


def test_sign_in_with_a_token_shows_who_you_are_and_survives_a_reload(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["support"])
    who = page.find_element(By.ID, "who").text
    assert "northpier" in who and "support" in who and "can edit" not in who
    assert page.execute_script("return sessionStorage.getItem('citewell.token')") == site.tokens["support"]
    page.refresh()
    wait_for(page, lambda b: b.find_element(By.ID, "whoami").is_displayed(), 20, "still signed in after a reload")
    sign_out(page)
    assert page.execute_script("return sessionStorage.getItem('citewell.token')") is None
    assert "northpier" not in page.find_element(By.ID, "who").text


def test_a_bad_token_is_refused_with_the_servers_reason(page: Any, site: Site) -> None:
    forged = site.tokens["staff"][:-6] + ("AAAAAA" if not site.tokens["staff"].endswith("AAAAAA") else "BBBBBB")
    page.find_element(By.ID, "token").send_keys(forged)
    page.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
    error = wait_for(page, lambda b: b.find_element(By.ID, "signin-error") if b.find_element(By.ID, "signin-error").is_displayed() else None,
                     10, "the refusal")
    assert "not accepted" in error.text
    assert not page.find_element(By.ID, "notice").is_displayed(), "no word of a sign-out that never was"
    assert not page.find_element(By.ID, "nav").is_displayed()
    assert page.execute_script("return sessionStorage.getItem('citewell.token')") is None


def test_demo_identities_sign_in_with_one_click(page: Any, site: Site, screenshots: Path) -> None:
    buttons = wait_for(page, lambda b: b.find_elements(By.CSS_SELECTOR, "#demo-list button.identity"), 10, "demo identities")
    tenants = {button.get_attribute("data-tenant") for button in buttons}
    assert {"northpier", "bluefen"} <= tenants
    assert layout_shift(page) < 0.01  # they come with the page: nothing above the sign-in form moves it later
    screenshot(page, "signin", screenshots)
    next(b for b in buttons if b.get_attribute("data-tenant") == "bluefen").click()
    wait_for(page, lambda b: b.find_element(By.ID, "whoami").is_displayed(), 20, "signed in as a demo identity")
    assert "bluefen" in page.find_element(By.ID, "who").text


# ---------- asking ----------


def test_an_answer_links_its_sources_and_opens_the_quote_highlighted_in_its_section(
        page: Any, site: Site, screenshots: Path) -> None:
    sign_in(page, site.tokens["staff"])
    answer = ask(page, "How many days of annual leave do full-time staff get?")
    text = answer.find_element(By.ID, "answer-text").text
    assert "27 days" in text
    markers = answer.find_elements(By.CSS_SELECTOR, "#answer-text a.marker")
    assert markers, "the answer's [S1] markers are links"
    source = answer.find_element(By.CSS_SELECTOR, "#sources li.source")
    assert "Northpier Staff Handbook" in source.find_element(By.CSS_SELECTOR, ".title").text
    assert "Annual leave" in source.find_element(By.CSS_SELECTOR, ".meta").text
    quote = source.find_element(By.CSS_SELECTOR, "blockquote.quote").text
    assert "27 days" in quote
    screenshot(page, "ask", screenshots)

    markers[0].click()  # a marker takes you (and keyboard focus) to its source
    ref = markers[0].get_attribute("data-ref")
    assert page.switch_to.active_element.get_attribute("id") == f"cite-{ref}"

    page.find_element(By.CSS_SELECTOR, f"#cite-{ref} button.open-source").click()
    mark = wait_for(page, lambda b: b.find_element(By.ID, "quote-mark"), 20, "the highlighted quote")
    assert page.find_element(By.ID, "source-dialog").get_attribute("open") is not None
    assert " ".join(mark.text.split()) == " ".join(quote.split())
    section = page.find_element(By.ID, "section-text").text
    assert "Carried days expire on 31 March" in section  # the section around the quote
    assert "37.5 hours" not in section  # and not the next section
    screenshot(page, "source", screenshots)
    page.find_element(By.ID, "source-close").click()
    assert page.find_element(By.ID, "source-dialog").get_attribute("open") is None


def test_the_ask_flow_works_from_the_keyboard_alone(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["staff"])
    answer = ask(page, "When do carried days of leave expire?")  # typed, then Enter
    marker = answer.find_element(By.CSS_SELECTOR, "#answer-text a.marker")
    page.execute_script("arguments[0].focus()", page.find_element(By.ID, "question"))
    for _ in range(30):  # Tab from the question to the first marker
        page.switch_to.active_element.send_keys(Keys.TAB)
        if page.switch_to.active_element == marker:
            break
    assert page.switch_to.active_element == marker, "the marker is reachable with Tab"
    outline = page.execute_script("return getComputedStyle(arguments[0]).outlineStyle", marker)
    assert outline != "none", "focus is visible"
    marker.send_keys(Keys.ENTER)
    source = page.switch_to.active_element
    assert source.get_attribute("id") == f"cite-{marker.get_attribute('data-ref')}"
    source.send_keys(Keys.TAB)
    opener = page.switch_to.active_element
    assert "open-source" in opener.get_attribute("class")
    opener.send_keys(Keys.ENTER)
    wait_for(page, lambda b: b.find_element(By.ID, "quote-mark"), 20, "the source")
    page.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait_for(page, lambda b: b.find_element(By.ID, "source-dialog").get_attribute("open") is None, 5, "Escape closes")
    assert page.switch_to.active_element == opener, "focus goes back to where it was"


def test_no_is_recorded_when_pressed_and_a_comment_amends_that_feedback(page: Any, site: Site) -> None:
    """Pressing No is the feedback: it is recorded before any comment, and the comment sent after
    it is added to that record, not a second one."""
    sign_in(page, site.tokens["staff"])
    answer = ask(page, "How many days of annual leave do part-time staff get?")
    answer_id = answer.get_attribute("data-answer-id")

    def recorded() -> list[tuple[bool, str | None]]:
        listed = json.loads(citewell(site.home, "feedback", "--tenant", "northpier", "--json").stdout)["unhelpful"]
        return [(False, i["comment"]) for i in listed if i["answer_id"] == answer_id]

    page.find_element(By.ID, "feedback-no").click()
    wait_for(page, lambda b: "Noted" in b.find_element(By.ID, "feedback-status").text, 20, "the vote recorded")
    assert page.find_element(By.ID, "feedback-no").get_attribute("aria-pressed") == "true"
    assert page.switch_to.active_element == page.find_element(By.ID, "feedback-comment")
    assert recorded() == [(False, None)]  # no Send pressed: the vote alone is there
    page.find_element(By.ID, "feedback-comment").send_keys("It gives full-time days only")
    page.find_element(By.ID, "feedback-send").click()
    wait_for(page, lambda b: "recorded" in b.find_element(By.ID, "feedback-status").text, 20, "the comment recorded")
    assert recorded() == [(False, "It gives full-time days only")]


def test_a_refusal_says_so_and_lists_the_closest_passages_as_passages(page: Any, site: Site, screenshots: Path) -> None:
    sign_in(page, site.tokens["staff"])
    answer = ask(page, "Who is the chief executive of Northpier?")
    refusal = answer.find_element(By.ID, "refusal")
    assert "Nothing in the documents you can read is about this" in refusal.text
    assert "do not answer" not in refusal.text  # what was found, never what exists
    assert not answer.find_elements(By.ID, "answer-text") and not answer.find_elements(By.ID, "unconfirmed")
    assert not answer.find_elements(By.CSS_SELECTOR, "#sources")
    passages = refusal.find_elements(By.CSS_SELECTOR, "#closest li.passage")
    assert passages, "the closest passages are listed"
    assert "not an answer" in refusal.text
    for passage in passages:
        assert passage.find_element(By.CSS_SELECTOR, ".title").text
        assert passage.find_element(By.CSS_SELECTOR, ".snippet").text
    screenshot(page, "refusal", screenshots)


def test_an_unconfirmed_answer_quotes_its_closest_passage_labelled_not_confirmed(page: Any, site: Site, screenshots: Path) -> None:
    sign_in(page, site.tokens["staff"])
    answer = ask(page, "What are the core hours on Saturday?")
    box = answer.find_element(By.ID, "unconfirmed")
    assert box.find_element(By.TAG_NAME, "h2").text == "Not confirmed"
    assert "could not confirm that this answers your question" in box.text
    assert not answer.find_elements(By.ID, "refusal") and not answer.find_elements(By.ID, "answer-text")
    quote = box.find_element(By.ID, "unconfirmed-text")
    assert quote.text == "Core hours are 10:00 to 15:00. S1"
    (source,) = box.find_elements(By.CSS_SELECTOR, "#sources li.source")
    assert source.find_element(By.CSS_SELECTOR, ".quote").text == "Core hours are 10:00 to 15:00."
    assert "Working hours" in source.text
    assert box.find_elements(By.CSS_SELECTOR, "#closest li.passage"), "the closest passages follow"
    screenshot(page, "unconfirmed", screenshots)
    quote.find_element(By.CSS_SELECTOR, "a.marker").click()  # the marker leads to its source, as an answer's does
    wait_for(page, lambda b: b.switch_to.active_element.get_attribute("id") == "cite-S1", 5, "the marker focuses its source")


# ---------- search ----------


def test_a_source_says_where_it_sits_in_its_file(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["support"])
    answer = ask(page, "What should the operator do for error E1027?")
    source = answer.find_element(By.CSS_SELECTOR, "#sources li.source")
    assert "error-codes.csv" in source.text and "Ballast pump" in source.find_element(By.CSS_SELECTOR, "blockquote").text
    assert "row 2" in source.find_element(By.CSS_SELECTOR, ".meta .where").text  # the CSV record quoted, not the chunk's


def open_quote(page: Any, question: str) -> tuple[str, list[str], str]:
    """Asks, opens the first source in its document: the source's place and quote, the highlighted
    parts, and the dialog's text (with its notes)."""
    answer = ask(page, question)
    source = answer.find_element(By.CSS_SELECTOR, "#sources li.source")
    where = " ".join(w.text for w in source.find_elements(By.CSS_SELECTOR, ".meta .where"))  # none for a text file
    quote = source.find_element(By.CSS_SELECTOR, "blockquote.quote").text
    source.find_element(By.CSS_SELECTOR, "button.open-source").click()
    wait_for(page, lambda b: "Opening" not in b.find_element(By.ID, "source-body").text, 20, "the document")
    marks = [" ".join(m.text.split()) for m in page.find_elements(By.CSS_SELECTOR, "#section-text mark.quote-part")]
    return where, [quote, *marks], page.find_element(By.ID, "source-body").text


def test_a_quote_of_two_sentences_on_page_one_of_a_pdf_is_found_in_its_document(page: Any, site: Site) -> None:
    """The bug this reproduces: the answerer joined two neighbouring sentences without their space
    ("journey.First"), a quote the document does not hold, so the page said it was not there."""
    sign_in(page, site.tokens["eastquay"])
    where, (quote, *marks), dialog = open_quote(page, "Can I travel first class by rail?")
    assert "journey. First class" in quote and "page 1" in where
    assert "not in the current text" not in dialog
    assert marks == [" ".join(quote.split())]


def test_an_elided_quote_is_highlighted_part_by_part(page: Any, site: Site, screenshots: Path) -> None:
    sign_in(page, site.tokens["eastquay"])
    where, (quote, *marks), dialog = open_quote(page, "Who approves flights?")
    assert " … " in quote, quote  # two units of the passage with the text between them left out
    assert "not in the current text" not in dialog
    assert marks == [" ".join(part.split()) for part in quote.split(" … ")]
    assert not any("line manager" in mark for mark in marks)  # the sentence between them is not highlighted
    assert where.startswith("page 1")
    screenshot(page, "source-elided", screenshots)


def test_a_quote_across_a_line_wrap_is_highlighted(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["eastquay"])
    _, (quote, *marks), dialog = open_quote(page, "When does the pilot boat leave the north pier?")
    assert "weather permitting" in " ".join(quote.split())
    assert "not in the current text" not in dialog
    assert marks == [" ".join(quote.split())]


def test_search_shows_title_section_snippet_and_lanes(page: Any, site: Site, screenshots: Path) -> None:
    sign_in(page, site.tokens["support"])
    results = search(page, "What does error E1027 mean?")
    hits = results.find_elements(By.CSS_SELECTOR, "#hits li.hit")
    assert hits and hits[0].get_attribute("data-document-id") == "error-codes.csv"
    first = hits[0]
    assert "Ballast pump pressure low" in first.find_element(By.CSS_SELECTOR, ".snippet").text
    lanes = first.find_element(By.CSS_SELECTOR, ".lanes").text
    assert "words #" in lanes or "meaning #" in lanes
    assert first.find_element(By.CSS_SELECTOR, ".title").text
    screenshot(page, "search", screenshots)


def narrow(page: Any, form: str, **fields: str) -> None:
    """Fill the "Narrow to" panel of the ask or search form (opened first); empty fields clear."""
    panel = page.find_element(By.CSS_SELECTOR, f"#{form}-form details.filters")
    if not panel.get_attribute("open"):
        panel.find_element(By.TAG_NAME, "summary").click()
    for name in ("doc", "prefix", "source", "tag", "locale"):
        box = page.find_element(By.ID, f"{form}-{name}")
        box.clear()
        if fields.get(name):
            box.send_keys(fields[name])


def hit_ids(results: Any) -> list[str]:
    return [h.get_attribute("data-document-id") for h in results.find_elements(By.CSS_SELECTOR, "#hits li.hit")]


def test_search_narrowed_on_the_page_ranks_inside_the_filter_and_never_widens(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["staff"])
    go(page, "search")
    assert "tide.txt" in hit_ids(search(page, "tide table at the harbour gate"))
    narrow(page, "search", doc="handbook.md")
    assert set(hit_ids(search(page, "tide table at the harbour gate"))) == {"handbook.md"}  # ranked inside, not cut
    # A filter naming the support role's document: the staff caller's roles do not open it.
    narrow(page, "search", doc="error-codes.csv, handbook.md")
    assert set(hit_ids(search(page, "ballast pump pressure low"))) <= {"handbook.md"}
    shown = everything(page)
    assert not [text for text in ("Ballast pump", "bridge journal") if text in shown]
    # the panel says its filters are set, and finding nothing within them is said as such
    assert page.find_element(By.CSS_SELECTOR, "#search-form details.filters summary").text == "Narrow to (filters set)"
    narrow(page, "search", doc="no-such-document.md")
    empty = search(page, "tide table at the harbour gate")
    assert "within the filters" in empty.find_element(By.CSS_SELECTOR, ".empty").text
    go(page, "ask")
    narrow(page, "ask", doc="no-such-document.md")
    assert "narrowed to" in ask(page, "Where is the tide table posted?").find_element(By.CSS_SELECTOR, "#refusal h2").text
    narrow(page, "ask")
    assert page.find_element(By.CSS_SELECTOR, "#ask-form details.filters summary").text == "Narrow to"
    go(page, "search")
    narrow(page, "search", prefix="policies")
    page.find_element(By.ID, "search-question").send_keys(Keys.ENTER)
    refusal = wait_for(page, lambda b: b.find_element(By.ID, "search-status") if "prefix"
                       in b.find_element(By.ID, "search-status").text else None, 30, "the filter's refusal")
    assert "ValidationError" not in refusal.text  # what is wrong, not the server's class name


def test_document_text_is_shown_as_text_never_run_as_markup(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["writer"])
    results = search(page, "Where is the tide table posted?")
    hit = next(h for h in results.find_elements(By.CSS_SELECTOR, "#hits li.hit") if h.get_attribute("data-document-id") == "tide.txt")
    assert hit.find_element(By.CSS_SELECTOR, ".title").text == HOSTILE_TITLE
    assert "<img src=x onerror=" in hit.find_element(By.CSS_SELECTOR, ".snippet").text
    hit.find_element(By.CSS_SELECTOR, "button.open-source").click()
    section = wait_for(page, lambda b: b.find_element(By.ID, "section-text"), 20, "the hostile section")
    assert "<script>window.__pwned = 'script'</script>" in section.text
    page.find_element(By.ID, "source-close").click()
    ask(page, "Where is the tide table posted?")
    items = documents(page)
    assert items["tide.txt"]["title"] == HOSTILE_TITLE
    assert page.execute_script("return window.__pwned") is None
    assert not page.find_elements(By.CSS_SELECTOR, "main img, dialog img, main script, dialog script")


# ---------- documents ----------


def test_uploads_publish_and_a_broken_file_fails_with_its_reason(
        page: Any, site: Site, tmp_path: Path, screenshots: Path) -> None:
    good = tmp_path / "moorings.md"
    good.write_text("# Mooring rules\n\n## Night berths\n\nNight berths at the east quay cost 14 euros and are booked "
                    "at the harbour master's window.\n", encoding="utf-8")
    broken = tmp_path / "manifest.pdf"
    broken.write_text("this is plain text wearing a PDF name\n", encoding="utf-8")
    sign_in(page, site.tokens["writer"])
    assert "can edit documents" in page.find_element(By.ID, "who").text
    documents(page)
    assert page.find_element(By.ID, "upload").is_displayed()
    roles = {box.get_attribute("value"): box.is_selected() for box in page.find_elements(By.CSS_SELECTOR, "#upload-role-list input")}
    assert roles == {"staff": False}, "the roles the caller reads by, none checked; the write role is no reading role"
    choose_roles(page, "staff")
    upload(page, good, broken)
    published = settled(page, "moorings.md")
    assert published.get_attribute("data-state") == "published", published.text
    assert "revision" in published.text
    failed = settled(page, "manifest.pdf")
    assert failed.get_attribute("data-state") == "failed"
    assert "type_mismatch" in failed.text
    items = documents(page)
    assert items["moorings.md"]["status"] == "published"
    revision = published.text.rsplit("revision ", 1)[1].strip()
    assert f"Revision\n{revision}" in items["moorings.md"]["text"] and "Readable by\nstaff" in items["moorings.md"]["text"]
    assert items["manifest.pdf"]["status"] == "failed" and "type_mismatch" in items["manifest.pdf"]["text"]
    screenshot(page, "documents", screenshots)


def test_an_upload_waits_for_a_choice_of_who_may_read_it(page: Any, site: Site, tmp_path: Path) -> None:
    """No role is ticked to begin with: a file sent without a choice is not uploaded, and the page
    says what to do (with every role ticked, an HR writer's salary sheet became readable by all staff)."""
    import httpx

    unchosen = tmp_path / "salary-bands.md"
    unchosen.write_text("# Salary bands\n\nThe harbour pilot band is 52,000 to 58,000 euros.\n", encoding="utf-8")
    sign_in(page, site.tokens["writer"])
    documents(page)
    assert not page.find_elements(By.CSS_SELECTOR, "#upload-role-list input:checked")
    upload(page, unchosen)
    message = wait_for(page, lambda b: b.find_element(By.ID, "documents-status") if "Choose who may read"
                       in b.find_element(By.ID, "documents-status").text else None, 10, "the message asking for roles")
    assert "Nothing was uploaded" in message.text
    assert not page.find_elements(By.CSS_SELECTOR, '#upload-list li[data-name="salary-bands.md"]')
    writer = {"Authorization": f"Bearer {site.tokens['writer']}"}
    assert httpx.get(f"{site.base}/documents/salary-bands.md", headers=writer).status_code == 404  # never registered
    choose_roles(page, "staff")  # once roles are chosen and the file goes up, the refusal is no longer shown
    upload(page, unchosen)
    wait_for(page, lambda b: b.find_elements(By.CSS_SELECTOR, '#upload-list li[data-name="salary-bands.md"]'), 30, "the upload")
    assert "Choose who may read" not in page.find_element(By.ID, "documents-status").text


def test_a_file_dropped_on_the_zone_is_uploaded(page: Any, site: Site, tmp_path: Path) -> None:
    dropped = tmp_path / "ferries.md"
    dropped.write_text("# Ferry timetable\n\nThe first ferry to Gullholm leaves at 06:40 on weekdays.\n", encoding="utf-8")
    sign_in(page, site.tokens["writer"])
    documents(page)
    choose_roles(page, "staff")
    # Selenium cannot drag from the desktop: a real File from a file input is dropped with a real DataTransfer.
    carrier = page.execute_script("""
        const input = document.createElement('input'); input.type = 'file'; input.id = 'carrier';
        document.body.append(input); return input;""")
    carrier.send_keys(str(dropped))
    page.execute_script("""
        const transfer = new DataTransfer(); transfer.items.add(arguments[0].files[0]);
        const zone = document.getElementById('dropzone');
        for (const type of ['dragenter', 'dragover', 'drop'])
          zone.dispatchEvent(new DragEvent(type, {dataTransfer: transfer, bubbles: true, cancelable: true}));
        arguments[0].remove();""", carrier)
    assert settled(page, "ferries.md").get_attribute("data-state") == "published"


def test_files_the_server_would_refuse_are_refused_before_sending_and_a_name_with_hash_uploads(
        page: Any, site: Site, tmp_path: Path) -> None:
    empty, big, hashed = tmp_path / "empty.md", tmp_path / "big.txt", tmp_path / "notes#1.md"
    empty.write_bytes(b"")
    with big.open("wb") as handle:  # one byte over the server's limit, as /me tells a writer
        handle.truncate(50 * 1024 * 1024 + 1)
    hashed.write_text("# Notes 1\n\nThe Gullholm pier lamp is serviced every third Tuesday.\n", encoding="utf-8")
    sign_in(page, site.tokens["writer"])
    documents(page)
    choose_roles(page, "staff")
    upload(page, empty, big, hashed)
    assert "empty" in settled(page, "empty.md").text
    sizes = {row.get_attribute("data-name"): row.find_element(By.CSS_SELECTOR, ".size").text
             for row in page.find_elements(By.CSS_SELECTOR, "#upload-list li")}
    assert sizes["empty.md"] == "0 bytes" and sizes["big.txt"] == "50.0 MB" and sizes["notes#1.md"].endswith(" bytes")
    refused = settled(page, "big.txt")
    assert refused.get_attribute("data-state") == "failed" and "too_large" in refused.text and "nothing was sent" in refused.text
    assert settled(page, "notes#1.md").get_attribute("data-state") == "published"
    items = documents(page)
    assert "notes-1.md" in items and "empty.md" not in items and "big.txt" not in items  # nothing left processing


def test_a_refreshing_list_keeps_the_keyboard_where_it_was(page: Any, site: Site) -> None:
    """A document still processing makes the list refresh every 2 s: focus and messages stay."""
    import httpx

    writer = {"Authorization": f"Bearer {site.tokens['writer']}"}
    created = httpx.post(f"{site.base}/documents", headers=writer, json={"document_id": "pending.md", "allowed_roles": ["staff"]})
    assert created.status_code == 201, created.text  # registered, its file never sent: it stays processing
    try:
        sign_in(page, site.tokens["writer"])
        assert documents(page)["pending.md"]["status"] == "processing"
        button = delete_button(page, "handbook.md")
        page.execute_script("arguments[0].focus()", button)
        loads = page.find_element(By.ID, "documents").get_attribute("data-loads")
        wait_for(page, lambda b: int(b.find_element(By.ID, "documents").get_attribute("data-loads")) >= int(loads) + 2,
                 20, "two refreshes")
        assert page.switch_to.active_element == button, "the same button keeps the focus"
        button.send_keys(Keys.ENTER)
        page.switch_to.active_element.send_keys(Keys.ESCAPE)  # the dialog's cancel
        wait_for(page, lambda b: b.find_element(By.ID, "confirm-dialog").get_attribute("open") is None, 5, "Escape closes")
        assert page.switch_to.active_element == button, "focus goes back to the button"
    finally:
        httpx.delete(f"{site.base}/documents/pending.md", headers=writer)


def test_signing_in_from_the_keyboard_leaves_the_cursor_in_the_question(page: Any, site: Site) -> None:
    field = page.find_element(By.ID, "token")
    page.execute_script("arguments[0].value = arguments[1]", field, site.tokens["staff"])  # a paste
    field.send_keys(Keys.TAB)  # from the token to the Sign in button
    page.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for(page, lambda b: b.find_element(By.ID, "whoami").is_displayed(), 20, "signed in")
    wait_for(page, lambda b: b.switch_to.active_element.get_attribute("id") == "question", 5, "the question field focused")


def test_readers_without_the_write_role_get_no_upload_or_delete(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["staff"])
    items = documents(page)
    assert "handbook.md" in items
    assert not page.find_element(By.ID, "upload").is_displayed()
    assert not page.find_elements(By.CSS_SELECTOR, "#documents button.delete")


def test_a_deleted_document_is_gone_from_the_list_and_from_answers(page: Any, site: Site, tmp_path: Path) -> None:
    doomed = tmp_path / "ferry-pass.md"
    doomed.write_text("# Ferry pass\n\n## Price\n\nThe Quillmoor ferry pass costs 41 euros per month for staff.\n",
                      encoding="utf-8")
    question = "How much does the Quillmoor ferry pass cost per month?"
    sign_in(page, site.tokens["writer"])
    documents(page)
    choose_roles(page, "staff")
    upload(page, doomed)
    assert settled(page, "ferry-pass.md").get_attribute("data-state") == "published"
    answer = ask(page, question)
    assert "41 euros" in answer.text

    documents(page)
    delete_button(page, "ferry-pass.md").click()
    dialog = page.find_element(By.ID, "confirm-dialog")
    assert dialog.get_attribute("open") is not None and "Ferry pass" in dialog.text
    dialog.find_element(By.CSS_SELECTOR, 'button[value="cancel"]').click()  # a cancel deletes nothing
    assert "ferry-pass.md" in documents(page)

    documents(page)
    delete_button(page, "ferry-pass.md").click()
    page.find_element(By.ID, "confirm-delete").click()
    wait_for(page, lambda b: "Deleted" in b.find_element(By.ID, "documents-status").text, 30, "the delete")
    assert "ferry-pass.md" not in documents(page)
    answer = ask(page, question)
    assert "41 euros" not in answer.text and "Quillmoor ferry pass costs" not in everything(page)
    assert answer.find_elements(By.ID, "refusal") or "ferry-pass.md" not in answer.text


# ---------- nobody sees anyone else's documents ----------


def visit_everything(browser: Any, questions: list[str]) -> str:
    """Every view with every question asked and searched, sources opened: all the page then holds."""
    seen = []
    for question in questions:
        answer = ask(browser, question)
        for opener in answer.find_elements(By.CSS_SELECTOR, "button.open-source")[:3]:
            opener.click()
            wait_for(browser, lambda b: b.find_elements(By.ID, "section-text") or b.find_elements(By.CSS_SELECTOR, "#source-body .error"), 20)
            seen.append(everything(browser))
            browser.find_element(By.ID, "source-close").click()
        seen.append(everything(browser))
        search(browser, question)
        seen.append(everything(browser))
    documents(browser)
    time.sleep(0.3)
    seen.append(everything(browser))
    return "\n".join(seen)


QUESTIONS = ["What should I do for error E1027?", "How many days of annual leave or holiday do I get?",
             "Where is the tide table posted?", "Who lends bicycles?"]


def test_another_tenant_never_sees_the_first_ones_documents(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["support"])
    first = visit_everything(page, QUESTIONS[:1])
    assert "Ballast pump" in first  # the first identity does see its own
    sign_out(page)
    left = [secret for secret in NORTHPIER_ONLY if secret in everything(page)]
    assert not left, f"{left} stayed in the page after signing out"
    sign_in(page, site.tokens["bluefen"])
    seen = visit_everything(page, QUESTIONS)
    assert "Kestrel rota" in seen
    leaked = [secret for secret in NORTHPIER_ONLY if secret in seen]
    assert not leaked, f"bluefen saw northpier's {leaked}"


def test_fewer_roles_in_the_same_tenant_never_see_the_restricted_documents(page: Any, site: Site) -> None:
    sign_in(page, site.tokens["staff"])
    seen = visit_everything(page, QUESTIONS)
    assert "27 days" in seen
    leaked = [secret for secret in (*SUPPORT_ONLY, *BLUEFEN_ONLY) if secret in seen]
    assert not leaked, f"northpier staff saw {leaked}"


# ---------- phone width ----------


def test_the_page_reads_at_phone_width(page: Any, site: Site, screenshots: Path) -> None:
    page.set_window_size(*PHONE)
    sign_in(page, site.tokens["staff"])
    ask(page, "How many days of annual leave do full-time staff get?")
    overflow = page.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px at 375 px"
    for element in page.find_elements(By.CSS_SELECTOR, "#nav a, #question, #ask-form button, .open-source"):
        box = element.rect
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE[0] + 1, element.text
    screenshot(page, "phone", screenshots)
    page.find_element(By.CSS_SELECTOR, "#sources button.open-source").click()
    wait_for(page, lambda b: b.find_element(By.ID, "quote-mark"), 20, "the source at phone width")
    box = page.find_element(By.ID, "source-dialog").rect
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE[0] + 1, "the source fills the screen, no wider"
    screenshot(page, "phone-source", screenshots)
