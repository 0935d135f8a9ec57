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
import socket
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

CITEWELL = [sys.executable, "-m", "citewell.cli"]
SCREENSHOTS = Path(os.environ.get("CITEWELL_SCREENSHOTS") or Path(__file__).resolve().parent.parent / "docs" / "screenshots")
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
def serving(home: Path, *extra: str) -> Iterator[str]:
    """``citewell serve`` on a free loopback port; yields its base URL, stops it with SIGTERM."""
    port = free_port()
    log = home.parent / f"serve-{port}.log"
    with open(log, "w") as out:
        process = subprocess.Popen([*CITEWELL, "--home", str(home), "serve", "--host", "127.0.0.1", "--port", str(port),
                                    *extra], stdout=out, stderr=subprocess.STDOUT)
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


def screenshot(browser: Any, name: str) -> Path:
    """docs/screenshots/NAME.png: the whole page at the window's width (up to 2,400 px tall), or
    what the window shows while a dialog is open (a modal covers the window, not the page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    time.sleep(0.3)  # transitions (the flash of a source, a spinner) settle
    if browser.execute_script("return !!document.querySelector('dialog[open]')"):
        browser.save_screenshot(str(path))
        return path
    width = browser.execute_script("return document.documentElement.clientWidth")
    height = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]["height"]
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 2400), "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))
    return path
