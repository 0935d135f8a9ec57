"""A reduced mode is shown, not hidden: with the model service down the page still answers
(extractively) and says so above the answer, in a reader's words. A real ``citewell serve``
whose generator points at a loopback port where nothing listens."""

from __future__ import annotations

import socket
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
)

if isinstance(browser_paths(), str):
    pytest.skip(str(browser_paths()), allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("web-degraded")
    handbook = root / "handbook.md"
    handbook.write_text("# Staff handbook\n\n## Annual leave\n\nFull-time staff receive 27 days of paid annual leave "
                        "per calendar year, plus public holidays.\n", encoding="utf-8")
    home = root / "home"
    ingest(home, handbook, "northpier", "staff")
    with socket.socket() as held:  # bound and never listening: connections are refused, and no other
        held.bind(("127.0.0.1", 0))  # process (a test worker beside this one) can serve on the port
        nothing_listens = f"http://127.0.0.1:{held.getsockname()[1]}/v1"
        env = {"CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": nothing_listens,
               "CITEWELL_OPENAI_MODEL": "absent-model", "CITEWELL_GENERATOR_TIMEOUT": "2"}
        with serving(home, env=env) as base:
            yield base, mint(home, "northpier", "staff")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = start_browser()
    yield driver
    driver.quit()


def test_an_answer_given_in_a_reduced_mode_says_so(browser: Any, site: tuple[str, str], screenshots: Path) -> None:
    base, token = site
    page = signed_out(browser, base)
    sign_in(page, token)
    answer = ask(page, "How many days of annual leave do full-time staff get?")
    note = answer.find_element(By.CSS_SELECTOR, ".degraded")
    # said in a reader's words; the operator's note ("generator unavailable: openai (...)") folded away
    assert "reduced mode" in note.text and "The language model could not be reached" in note.text
    assert "generator unavailable" not in note.text and "openai" not in note.text
    assert "27 days" in answer.find_element(By.ID, "answer-text").text  # the extractive answer, still cited
    assert answer.find_elements(By.CSS_SELECTOR, "#sources li.source")
    screenshot(page, "degraded", screenshots)
    details = note.find_element(By.CSS_SELECTOR, "details")
    details.find_element(By.TAG_NAME, "summary").click()
    assert "generator unavailable: openai" in details.text
    assert_clean(page)
