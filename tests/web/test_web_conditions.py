"""The ask page in headless Chromium against a real ``citewell serve`` (the extractive default): an
answer per condition shown line by line with its sources, a clarifying question with a button per
condition, and the button asking for that one in the same conversation."""

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

DEPOTS = """depot,field allowance per shift,night shift supplement
Harrowmere,14 pounds,38 pounds
Doveridge,11 pounds,35 pounds
Calder Street,9 pounds,30 pounds
Marrow Hills,16 pounds,42 pounds
"""
ABROAD = """country,coworking allowance per day
France,25 euros
Germany,28 euros
Spain,20 euros
Italy,22 euros
Poland,15 euros
Czechia,14 euros
Austria,26 euros
Belgium,24 euros
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("web-conditions")
    home, files = root / "home", root / "files"
    files.mkdir()
    for name, text in (("depots.csv", DEPOTS), ("abroad.csv", ABROAD)):
        (files / name).write_text(text, encoding="utf-8")
        ingest(home, files / name, "northpier", "staff")
    with serving(home) as base:
        yield base, mint(home, "northpier", "staff")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = start_browser()
    yield driver
    driver.quit()


def test_answers_per_condition_then_a_clarifying_question_and_its_choice(browser: Any, site: tuple[str, str], screenshots: Path):
    base, token = site
    signed_out(browser, base)
    sign_in(browser, token)
    answer = ask(browser, "What is the field allowance per shift?")
    lines = browser.find_element(By.ID, "answer-text").text.splitlines()
    assert lines == ["It depends on the depot:", "- Harrowmere: 14 pounds S1", "- Doveridge: 11 pounds S1",
                     "- Calder Street: 9 pounds S1", "- Marrow Hills: 16 pounds S1"]
    assert "depots.csv" in answer.find_element(By.ID, "sources").text
    screenshot(browser, "conditions", screenshots)

    ask(browser, "What is the coworking allowance per day?")
    box = browser.find_element(By.ID, "clarify")
    assert box.find_element(By.TAG_NAME, "h2").text == "Which country do you mean?"
    assert browser.find_element(By.ID, "clarify-text").text == (
        "The documents give a different answer for each: France, Germany, Spain, Italy, Poland, Czechia, Austria, Belgium. S1")
    choices = [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#clarify-choices button")]
    assert choices == ["France", "Germany", "Spain", "Italy", "Poland", "Czechia", "Austria", "Belgium"]
    screenshot(browser, "clarify", screenshots)

    browser.find_element(By.XPATH, "//ul[@id='clarify-choices']//button[text()='Germany']").click()
    wait_for(browser, lambda b: b.find_elements(By.ID, "rewritten")
             and "Germany" in b.find_element(By.ID, "rewritten").text and not b.find_element(By.ID, "ask-status").text,
             60, "the answer for Germany")
    assert browser.find_element(By.ID, "rewritten").text == "Answered as: What is the coworking allowance per day for Germany?"
    assert browser.find_element(By.ID, "answer-text").text.startswith("28 euros")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#thread .turn")) == 3
    assert_clean(browser)
