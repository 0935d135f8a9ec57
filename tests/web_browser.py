"""A real browser and a real ``citewell serve`` for the web page's tests.

Headless Chromium comes from Debian's ``chromium`` and ``chromium-driver`` packages (``make
test`` installs them when it can); nothing is downloaded at run time. The server is the
real one, started as a subprocess on a free loopback port over a home the test ingested.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.serving import start_serve

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError:  # the tests skip with the reason browser_paths() gives
    pass

CITEWELL = [sys.executable, "-m", "citewell"]
DESKTOP = (1280, 900)
PHONE = (375, 812)


def browser_paths() -> tuple[str, str] | str:
    """(chromium, chromedriver), or why the browser tests cannot run here."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        return ("browser tests skipped: Debian's chromium and chromium-driver packages are not installed "
                "(`make test` installs them with apt-get when it runs as root)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "browser tests skipped: selenium is not installed (pip install -e '.[dev]')"
    return chromium, driver


def start_browser() -> Any:
    """Headless Chromium at desktop size. Selenium is pointed at both binaries, so its
    manager never looks for (or downloads) a browser of its own."""
    found = browser_paths()
    if isinstance(found, str):
        pytest.skip(found)
    chromium, driver = found
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--force-device-scale-factor=1", "--hide-scrollbars", "--lang=en-GB",
                     "--disable-extensions", "--no-first-run", "--disable-background-networking",
                     f"--window-size={DESKTOP[0]},{DESKTOP[1]}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(driver), options=options)
    browser.set_page_load_timeout(30)
    return browser


def citewell(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CITEWELL, "--home", str(home), *args], capture_output=True, text=True, check=check,
                          timeout=300)


def ingest(home: Path, path: Path, tenant: str, roles: str, *extra: str) -> dict[str, Any]:
    done = citewell(home, "ingest", str(path), "--tenant", tenant, "--allow-roles", roles, "--json", *extra)
    return json.loads(done.stdout)


def mint(home: Path, tenant: str, roles: str) -> str:
    """A token signed by the home's own key, as an operator makes one."""
    return str(json.loads(citewell(home, "token", "--tenant", tenant, "--roles", roles, "--json").stdout)["token"])


@contextmanager
def serving(home: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``citewell serve`` on a free loopback port (``env`` added to this environment); yields its
    base URL, stops it with SIGTERM."""
    process, port, log = start_serve(
        home, lambda port: [*CITEWELL, "--home", str(home), "serve", "--host", "127.0.0.1", "--port", str(port), *extra],
        {**os.environ, **(env or {})})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"citewell serve exited with {process.returncode}:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(base + "/", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"citewell serve did not answer within 120 s:\n{log.read_text()}")
            time.sleep(0.25)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for(browser: Any, condition: Callable[[Any], Any], timeout: float = 60, message: str = "") -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout, poll_frequency=0.1).until(condition, message)


def screenshot_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests' screenshots go: the folder named by ``CITEWELL_SCREENSHOTS`` when one is
    asked for on purpose (``make screenshots`` names docs/screenshots), else a folder of this test
    run, so that a test run leaves the working tree as it found it."""
    asked = os.environ.get("CITEWELL_SCREENSHOTS")
    return Path(asked).resolve() if asked else tmp_path_factory.mktemp("screenshots")


def screenshot(browser: Any, name: str, folder: Path) -> Path:
    """FOLDER/NAME.png: the whole page at the window's width (up to 2,400 px tall), or what the
    window shows while a dialog is open (a modal covers the window, not the page). The file is
    read back: a PNG as wide as the page."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    time.sleep(0.3)  # transitions (the flash of a source, a spinner) settle
    if browser.execute_script("return !!document.querySelector('dialog[open]')"):
        width = browser.execute_script("return window.innerWidth")
        browser.save_screenshot(str(path))
    else:
        width = browser.execute_script("return document.documentElement.clientWidth")
        height = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]["height"]
        shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 2400), "scale": 1}})
        path.write_bytes(base64.b64decode(shot["data"]))
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    shot_width, shot_height = struct.unpack(">II", head[16:24])
    assert shot_width == width and shot_height > 0, f"{path} is {shot_width}x{shot_height}, the page {width} wide"
    return path


def signed_out(browser: Any, base: str) -> Any:
    """The page at desktop size with nobody signed in (this tab's storage cleared)."""
    browser.set_window_size(*DESKTOP)
    browser.get(base + "/openapi.json")  # same origin, not the page: nothing signs in from storage here
    browser.execute_script("sessionStorage.clear()")
    browser.get(base + "/")
    wait_for(browser, lambda b: b.find_element(By.ID, "view-signin").is_displayed(), 20, "the sign-in view")
    return browser


def layout_shift(browser: Any) -> float:
    """The page's cumulative layout shift so far, as the browser measured it (what Lighthouse
    scores): every shift of what was already shown, but those right after a person's input."""
    return float(browser.execute_async_script("""const done = arguments[arguments.length - 1];
        new PerformanceObserver((list) => done(list.getEntries().filter((e) => !e.hadRecentInput)
          .reduce((sum, e) => sum + e.value, 0))).observe({type: "layout-shift", buffered: true});
        setTimeout(() => done(0), 1000);  // no entry at all: nothing moved"""))


def assert_clean(browser: Any) -> None:
    """Nothing was rendered as anything but text, and the page logged no error (the expected
    4xx of a refused request and the 404 of /demo/identities without --demo aside)."""
    assert "[object " not in everything(browser), "something was rendered that is not text"
    errors = [entry for entry in browser.get_log("browser")
              if entry["level"] == "SEVERE" and "/demo/identities" not in entry["message"]
              and "the server responded with a status of 4" not in entry["message"]]
    assert not errors, f"the page logged errors: {errors}"


# ---------- acting as a person would ----------


def sign_in(browser: Any, token: str) -> None:
    field = browser.find_element(By.ID, "token")
    field.clear()
    browser.execute_script("arguments[0].value = arguments[1]", field, token)  # a paste, without typing 600 keys
    browser.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
    wait_for(browser, lambda b: b.find_element(By.ID, "whoami").is_displayed(), 20, "signed in")


def sign_out(browser: Any) -> None:
    browser.find_element(By.ID, "sign-out").click()
    wait_for(browser, lambda b: b.find_element(By.ID, "view-signin").is_displayed(), 10, "signed out")


def go(browser: Any, view: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f'#nav a[data-view="{view}"]').click()
    wait_for(browser, lambda b: b.find_element(By.ID, f"view-{view}").is_displayed(), 10, view)


def ask(browser: Any, question: str) -> Any:
    go(browser, "ask")
    field = browser.find_element(By.ID, "question")
    field.clear()
    field.send_keys(question, Keys.ENTER)
    return wait_for(browser, lambda b: b.find_element(By.ID, "answer") if b.find_element(By.ID, "answer").is_displayed()
                    and not b.find_element(By.ID, "ask-status").text else None, 60, f"an answer to {question!r}")


def search(browser: Any, question: str) -> Any:
    go(browser, "search")
    field = browser.find_element(By.ID, "search-question")
    field.clear()
    field.send_keys(question, Keys.ENTER)
    return wait_for(browser, lambda b: b.find_element(By.ID, "search-results")
                    if b.find_element(By.ID, "search-results").is_displayed()
                    and "Searching" not in b.find_element(By.ID, "search-status").text else None, 60, "search results")


def documents(browser: Any) -> dict[str, dict[str, str]]:
    """The Documents view freshly loaded (the view opened, or Refresh pressed): each item's
    status, title and text by document id, read at once while the list stands still."""
    loads = browser.find_element(By.ID, "documents").get_attribute("data-loads")
    if browser.find_element(By.ID, "view-documents").is_displayed():
        browser.find_element(By.ID, "documents-refresh").click()
    else:
        go(browser, "documents")
    wait_for(browser, lambda b: b.find_element(By.ID, "documents").get_attribute("data-loads") != loads, 20, "the documents list")
    return browser.execute_script("""
        const found = {};
        for (const item of document.querySelectorAll('#documents li.doc'))
          found[item.dataset.documentId] = {status: item.dataset.status, title: item.querySelector('.title').textContent,
                                            text: item.innerText};
        return found;""")


def delete_button(browser: Any, document_id: str) -> Any:
    return browser.find_element(By.CSS_SELECTOR, f'#documents li.doc[data-document-id="{document_id}"] button.delete')


def everything(browser: Any) -> str:
    """All text in the document, shown or hidden, and every attribute value: what 'anywhere on the page' means."""
    return browser.execute_script("""
        const parts = [document.documentElement.textContent];
        for (const node of document.querySelectorAll('*')) {
          for (const attribute of node.attributes) parts.push(attribute.value);
          if ('value' in node && typeof node.value === 'string') parts.push(node.value);
        }
        return parts.join('\\n');""")


def choose_roles(browser: Any, *roles: str) -> None:
    """Tick exactly ``roles`` among who may read an upload (none is ticked to begin with)."""
    for box in browser.find_elements(By.CSS_SELECTOR, "#upload-role-list input"):
        if box.is_selected() != (box.get_attribute("value") in roles):
            box.click()


def upload(browser: Any, *paths: Path) -> None:
    browser.find_element(By.ID, "files").send_keys("\n".join(str(p) for p in paths))


def upload_state(browser: Any, name: str) -> Any:
    return browser.find_element(By.CSS_SELECTOR, f'#upload-list li[data-name="{name}"]')


def settled(browser: Any, name: str) -> Any:
    """The upload row of ``name`` once it is published or failed."""
    return wait_for(browser, lambda b: upload_state(b, name) if upload_state(b, name).get_attribute("data-state")
                    in ("published", "failed") else None, 120, f"the upload of {name} to finish")
