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

WATCH = """window.__seen = [];
new MutationObserver(() => {
  for (const id of ["draft", "retraction"]) if (document.getElementById(id) && !window.__seen.includes(id)) window.__seen.push(id);
}).observe(document.getElementById("answer"), {childList: true, subtree: true});"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    from benchmarks.model_server import MODEL_NAME, serve
    from benchmarks.standin_model import Fault, StandInModel

    root = tmp_path_factory.mktemp("web-conversations")
    home, files = root / "home", root / "files"
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
