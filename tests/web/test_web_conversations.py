"""The ask page's conversation in headless Chromium against a real ``citewell serve`` answering with
the stand-in model (streaming, and misquoting every time, so every draft is retracted): a
question and a follow-up in one thread with the rewritten question shown, the draft replaced
by the verified answer, feedback given from the keyboard, the history, a new conversation, and
an earlier conversation reopened from the history with each turn's answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web_browser import (
    ask,
    assert_clean,
    browser_paths,
    ingest,
    layout_shift,
    mint,
    screenshot,
    serving,
    sign_in,
    signed_out,
    start_browser,
    wait_for,
)

if isinstance(browser_paths(), str):
    pytest.skip(str(browser_paths()), allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

ALLOWANCES = """# Travel allowances

The meal allowance in Manchester is 18 pounds per day.

The meal allowance in Leeds is 16 pounds per day.
"""

WATCH = """window.__seen = []; window.__said = [];
new MutationObserver(() => {
  for (const id of ["draft", "retraction"]) {
    const node = document.getElementById(id);
    if (node && !window.__seen.includes(id)) window.__seen.push(id);
    if (node) window.__said.push(node.textContent);
  }
}).observe(document.getElementById("answer"), {childList: true, subtree: true, characterData: true});"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("web-conversations") / "home"


@pytest.fixture(scope="module")
def site(home: Path) -> Iterator[tuple[str, str, str]]:
    from benchmarks.model_server import MODEL_NAME, serve
    from benchmarks.standin_model import Fault, StandInModel

    files = home.parent / "files"
    files.mkdir()
    (files / "allowances.md").write_text(ALLOWANCES, encoding="utf-8")
    ingest(home, files / "allowances.md", "northpier", "staff")
    model = serve(StandInModel(fault_rate=1.0, faults=(Fault.FALSE_QUOTE,)))
    model.token_seconds = 0.05  # slow enough that the draft is on the page before its retraction
    env = {"CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": f"{model.url}/v1", "CITEWELL_OPENAI_MODEL": MODEL_NAME}
    try:
        with serving(home, env=env) as base:
            yield base, mint(home, "northpier", "staff"), mint(home, "northpier", "staff")  # two people
    finally:
        model.shutdown()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = start_browser()
    yield driver
    driver.quit()


def test_a_thread_with_a_follow_up_a_retracted_draft_and_feedback(browser: Any, site: tuple[str, str, str], screenshots: Path):
    base, token, _ = site
    signed_out(browser, base)
    sign_in(browser, token)
    browser.execute_script(WATCH)
    answer = ask(browser, "What is the meal allowance in Manchester?")
    assert "18 pounds" in answer.text
    assert browser.execute_script("return window.__seen") == ["draft", "retraction"]  # the draft was shown, then withdrawn
    assert not browser.find_elements(By.ID, "draft") and not browser.find_elements(By.ID, "retraction")
    # why, in a reader's words: in the retraction, and above the answer; the operator's note folded away
    plainly = "The language model's answer was not used (it quoted words your documents do not say)"
    said = browser.execute_script("return window.__said")
    assert any(plainly in text for text in said) and not any("quote_not_in_source" in text for text in said), said
    note = answer.find_element(By.CSS_SELECTOR, ".degraded")
    assert plainly in note.text and "quote_not_in_source" not in note.text and "draft rejected" not in note.text

    answer = ask(browser, "what about Leeds?")
    assert "16 pounds" in answer.text
    assert browser.find_element(By.ID, "rewritten").text == "Answered as: What is the meal allowance in Leeds?"
    turns = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#thread .turn")]
    assert turns[1] == "what about Leeds?\nanswered as: What is the meal allowance in Leeds?"  # its answer is the one below
    asked, said = turns[0].split("\n", 1)  # the earlier turn keeps its answer in the thread
    assert asked == "What is the meal allowance in Manchester?" and "18 pounds" in said and "[S1]" not in said

    # feedback from the keyboard: tab to "No", Enter, type, Enter
    no = browser.find_element(By.ID, "feedback-no")
    browser.execute_script("arguments[0].focus()", browser.find_element(By.ID, "feedback-yes"))
    browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element == no
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    assert browser.switch_to.active_element == browser.find_element(By.ID, "feedback-comment")
    browser.switch_to.active_element.send_keys("I asked for the evening rate", Keys.ENTER)
    wait_for(browser, lambda b: "recorded" in b.find_element(By.ID, "feedback-status").text, 20, "feedback recorded")
    assert no.get_attribute("aria-pressed") == "true"
    browser.find_element(By.CSS_SELECTOR, "#history-box summary").click()
    wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#history li button")) == 2, 20, "two recent questions")
    screenshot(browser, "conversation", screenshots)

    browser.find_element(By.ID, "new-conversation").click()
    assert not browser.find_element(By.ID, "thread").is_displayed()
    assert browser.switch_to.active_element == browser.find_element(By.ID, "question")
    answer = ask(browser, "what about Leeds?")  # no conversation to follow: asked as it stands
    assert not browser.find_elements(By.ID, "rewritten")
    browser.find_element(By.CSS_SELECTOR, "#history li button").click()  # the latest question's conversation comes back
    wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#thread .turn")) == 1, 20, "the thread reopened")
    # the first conversation, from its first question: both turns with their answers, no stray answer below
    wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#history li button")) == 3, 20, "three recent questions")
    browser.find_elements(By.CSS_SELECTOR, "#history li button")[-1].click()
    wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#thread .turn")) == 2, 20, "the first thread reopened")
    said = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#thread .turn-answer")]
    assert len(said) == 2 and "18 pounds" in said[0] and "16 pounds" in said[1], said
    assert not browser.find_element(By.ID, "answer").is_displayed()
    screenshot(browser, "conversation-reopened", screenshots)
    assert_clean(browser)



def test_a_reload_goes_on_with_the_conversation_and_the_next_caller_does_not(browser: Any, site: tuple[str, str, str]):
    """A reload kept the token but dropped the conversation: the next follow-up started a new one,
    asked as it stood, with nothing on the page to say so."""
    base, token, other = site
    signed_out(browser, base)
    sign_in(browser, token)
    ask(browser, "What is the meal allowance in Manchester?")
    browser.refresh()
    wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#thread .turn")) == 1, 20, "the thread after the reload")
    assert "follows up this conversation" in browser.find_element(By.ID, "ask-status").text
    answer = ask(browser, "what about Leeds?")
    assert "16 pounds" in answer.text
    assert browser.find_element(By.ID, "rewritten").text == "Answered as: What is the meal allowance in Leeds?"

    sign_in_over(browser, other)  # another person in this tab, without signing out first
    browser.refresh()
    wait_for(browser, lambda b: b.find_element(By.ID, "whoami").is_displayed(), 20, "signed in again")
    assert not browser.find_elements(By.CSS_SELECTOR, "#thread .turn")
    answer = ask(browser, "what about Leeds?")
    assert not browser.find_elements(By.ID, "rewritten")  # a question of its own: nothing of the last caller's followed
    assert_clean(browser)


def sign_in_over(browser: Any, token: str) -> None:
    """The token the page keeps replaced by another, as a second sign-in in the same tab leaves it."""
    browser.execute_script("sessionStorage.setItem('citewell.token', arguments[0])", token)


def positions(browser: Any, *selectors: str) -> list[dict[str, float]]:
    return browser.execute_script("""return arguments[0].map((s) => {
        const box = document.querySelector(s).getBoundingClientRect(); return {top: box.top, bottom: box.bottom}; });""",
                                  list(selectors))


def test_the_thread_reads_in_order_above_the_question_box_every_answer_with_its_sources(
        browser: Any, site: tuple[str, str, str], screenshots: Path):
    """The question box sat between the earlier turns and the newest answer, and an earlier answer
    kept only its words: now the thread reads top to bottom, each answer under its question with
    its sources as chips, the newest in full, and the box below it all, after a reload too."""
    base, token, _ = site
    signed_out(browser, base)
    sign_in(browser, token)
    ask(browser, "What is the meal allowance in Manchester?")
    ask(browser, "what about Leeds?")
    first, second = browser.find_elements(By.CSS_SELECTOR, "#thread > .turn")
    earlier = first.find_element(By.CSS_SELECTOR, ".turn-answer")
    assert "18 pounds" in earlier.text
    chip = earlier.find_element(By.CSS_SELECTOR, ".chips button.chip")
    assert chip.text.startswith("S1") and "Travel allowances" in chip.text
    assert not second.find_elements(By.CSS_SELECTOR, ".turn-answer")  # the newest answer is the one below
    turn, sources, asked, answer, box = positions(
        browser, "#thread > .turn:first-child", "#thread > .turn:first-child .chips", "#thread > .turn:last-child",
        "#answer", "#ask-form")
    assert turn["top"] < sources["top"] < asked["top"] < answer["top"] < answer["bottom"] <= box["top"]
    assert "16 pounds" in browser.find_element(By.ID, "answer-text").text
    ids = browser.execute_script("return [...document.querySelectorAll('[id]')].map((n) => n.id)")
    assert len(ids) == len(set(ids)), "an id twice: a thread's answers must not share theirs"
    screenshot(browser, "conversation-thread", screenshots)

    earlier.find_element(By.CSS_SELECTOR, "a.marker").click()  # its marker goes to its own chip
    assert browser.switch_to.active_element == chip
    chip.click()  # and the chip opens the quote in its document
    wait_for(browser, lambda b: "18 pounds" in b.find_element(By.ID, "quote-mark").text, 20, "the quote in its document")
    browser.find_element(By.ID, "source-close").click()

    browser.refresh()  # the conversation resumed: every turn with its answer and sources, the box below
    wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#thread .turn-answer .chip")) == 2, 20, "the thread again")
    said = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#thread .turn-answer")]
    assert "18 pounds" in said[0] and "16 pounds" in said[1]
    wait_for(browser, lambda b: b.find_element(By.ID, "ask-form").is_displayed(), 10, "the question box")
    last, box = positions(browser, "#thread", "#ask-form")
    assert last["bottom"] <= box["top"]
    assert layout_shift(browser) < 0.01  # the box waited for the thread above it: nothing shown moved
    assert_clean(browser)


def test_a_models_refusal_word_is_never_shown_as_a_draft(browser: Any, site: tuple[str, str, str]):
    """The model refuses with its refusal word, streamed like any draft: the page says so in words."""
    base, token, _ = site
    signed_out(browser, base)
    sign_in(browser, token)
    browser.execute_script(WATCH)
    answer = ask(browser, "Which hotel do staff book for a night in Manchester?")
    said = browser.execute_script("return window.__said")
    assert said and all("NOT_IN_DOCUMENTS" not in text for text in said), said
    assert any("found no answer in your documents" in text for text in said), said
    assert "NOT_IN_DOCUMENTS" not in browser.find_element(By.TAG_NAME, "body").text
    assert answer.is_displayed()
    assert_clean(browser)


def test_a_long_conversation_shows_its_latest_turns_and_earlier_ones_on_request(browser: Any, site: tuple[str, str, str],
                                                                                 home: Path):
    """A conversation of 25 turns, reloaded: the latest 20 with their answers and "Earlier turns
    (5)" above them; pressed, the 5 come above in order, each with its answer, and it goes."""
    from citewell.metadata.sqlite import SqliteMetadataStore
    from citewell.models.conversations import Conversation
    from citewell.models.values import utcnow
    from citewell.records import update_conversation

    base, token, _ = site
    signed_out(browser, base)
    sign_in(browser, token)
    ask(browser, "What is the meal allowance in Manchester?")
    cid = browser.execute_script("return JSON.parse(sessionStorage.getItem('citewell.conversation')).id")
    store = SqliteMetadataStore(home / "metadata.db")  # the served home's own store: 24 more turns as an ask writes each
    head = store.get_conversation("northpier", cid, last=1)
    assert head is not None and head.turn_count == 1

    def asked_again(current: Conversation) -> Conversation:
        at, seq = utcnow(), current.turn_count + 1
        again = head.turns[0].model_copy(update={"seq": seq, "at": at, "asked": f"question {seq}", "question": f"question {seq}"})
        return current.model_copy(update={"turns": [again], "turn_count": seq, "updated_at": at})

    for _ in range(24):
        assert update_conversation(store, store.get_conversation("northpier", cid, last=0), asked_again) is not None

    browser.refresh()
    wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#thread > .turn")) == 20, 20, "the latest page")
    earlier = browser.find_element(By.ID, "thread-earlier")
    assert earlier.is_displayed() and earlier.text == "Earlier turns (5)"
    asked = [t.find_element(By.CSS_SELECTOR, ".turn-asked").text for t in browser.find_elements(By.CSS_SELECTOR, "#thread > .turn")]
    assert asked == [f"question {n}" for n in range(6, 26)]
    earlier.click()
    wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#thread > .turn")) == 25, 20, "the earlier turns")
    turns = browser.find_elements(By.CSS_SELECTOR, "#thread > .turn")
    asked = [t.find_element(By.CSS_SELECTOR, ".turn-asked").text for t in turns]
    assert asked == ["What is the meal allowance in Manchester?", *(f"question {n}" for n in range(2, 26))]
    assert "18 pounds" in turns[0].find_element(By.CSS_SELECTOR, ".turn-answer").text
    assert not browser.find_element(By.ID, "thread-earlier").is_displayed()
    assert "5 earlier turns shown" in browser.find_element(By.ID, "ask-status").text
    browser.find_element(By.ID, "new-conversation").click()  # a new conversation has no earlier turns to offer
    assert not browser.find_element(By.ID, "thread-earlier").is_displayed()
    assert_clean(browser)
