"""The page signs in with an OpenID Connect provider (tests/oidc_provider.py, on loopback) in a real
browser: "Sign in" runs the authorization code flow with PKCE, the provider approves at once and
sends the browser back with a code, the page exchanges it (the provider checks the verifier) and
signs in with the ID token; the signed-in user sees only what their groups map to. A return that
this tab did not start is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.oidc_provider import Provider
from tests.web_browser import (
    assert_clean,
    browser_paths,
    documents,
    everything,
    ingest,
    layout_shift,
    search,
    serving,
    sign_out,
    signed_out,
    start_browser,
    wait_for,
)

if isinstance(browser_paths(), str):
    pytest.skip(str(browser_paths()), allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402

HANDBOOK = "# Northpier Staff Handbook\n\n## Annual leave\n\nFull-time staff receive 27 days of paid annual leave.\n"
SALARIES = "# Salary bands\n\n## Shift lead\n\nThe salary band of a shift lead is 41,000 to 47,000 euros a year.\n"
GROUP_ROLES = '"citewell-staff" = "staff"\n"northpier-hr" = ["hr", "staff"]\n'
STAFF_USER = {"sub": "alice", "org": "northpier", "groups": ["citewell-staff", "Everyone"]}
HR_USER = {"sub": "harriet", "org": "northpier", "groups": ["northpier-hr"]}


@dataclass
class Site:
    base: str
    provider: Provider


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("oidc-web")
    home, files = root / "home", root / "files"
    files.mkdir()
    (files / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    (files / "salaries.md").write_text(SALARIES, encoding="utf-8")
    ingest(home, files / "handbook.md", "northpier", "staff")
    ingest(home, files / "salaries.md", "northpier", "hr")
    (root / "group-roles.toml").write_text(GROUP_ROLES, encoding="utf-8")
    provider = Provider().start()
    try:
        with serving(home, "--oidc-issuer", provider.issuer, "--oidc-client-id", provider.client_id,
                     "--oidc-tenant-claim", "org", "--oidc-group-roles", str(root / "group-roles.toml")) as base:
            yield Site(base, provider)
    finally:
        provider.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = start_browser()
    yield driver
    driver.quit()


@pytest.fixture
def page(browser: Any, site: Site) -> Iterator[Any]:
    yield signed_out(browser, site.base)
    assert_clean(browser)


def _sign_in_with_provider(page: Any) -> None:
    wait_for(page, lambda b: b.find_element(By.ID, "oidc").is_displayed(), 20, "the provider's sign-in")
    page.find_element(By.ID, "oidc-sign-in").click()
    wait_for(page, lambda b: b.find_element(By.ID, "whoami").is_displayed(), 30, "signed in through the provider")


def test_signing_in_with_the_provider_shows_only_what_the_users_groups_map_to(page: Any, site: Site) -> None:
    site.provider.user = STAFF_USER
    exchanges = site.provider.fetched.count("/realms/citewell/token")
    assert "127.0.0.1" in page.find_element(By.ID, "oidc-issuer").text
    assert page.find_element(By.ID, "token-form").is_displayed()  # the token box stays, for CLI and demo tokens
    assert layout_shift(page) < 0.01  # the provider's panel comes with the page: the token box never moves
    _sign_in_with_provider(page)
    assert site.provider.fetched.count("/realms/citewell/token") == exchanges + 1  # the code, with its PKCE verifier
    who = page.find_element(By.ID, "who").text
    assert "northpier" in who and "staff" in who and "hr" not in who
    assert page.execute_script("return location.search") == ""  # the code left the address bar
    token = page.execute_script("return sessionStorage.getItem('citewell.token')")
    claims = json.loads(_payload(token))
    assert claims["iss"] == site.provider.issuer and claims["sub"] == "alice" and claims["nonce"]
    assert page.execute_script("return sessionStorage.getItem('citewell.oidc')") is None  # the verifier is gone
    assert set(documents(page)) == {"handbook.md"}
    search(page, "salary band of a shift lead")
    assert "41,000" not in everything(page) and "Salary bands" not in everything(page)
    sign_out(page)

    site.provider.user = HR_USER  # another person of the provider, in the HR group
    _sign_in_with_provider(page)
    who = page.find_element(By.ID, "who").text
    assert "hr" in who and "staff" in who
    assert set(documents(page)) == {"handbook.md", "salaries.md"}
    sign_out(page)


def test_a_return_this_tab_did_not_start_is_refused(page: Any, site: Site) -> None:
    page.get(site.base + "/?code=stolen&state=forged")
    error = wait_for(page, lambda b: b.find_element(By.ID, "oidc-error") if b.find_element(By.ID, "oidc-error").is_displayed()
                     else None, 20, "the refusal")
    assert "not started here" in error.text
    assert not page.find_element(By.ID, "whoami").is_displayed()
    assert page.execute_script("return location.search") == ""


def test_a_user_whose_groups_map_to_nothing_is_not_signed_in(page: Any, site: Site) -> None:
    site.provider.user = {"sub": "visitor", "org": "northpier", "groups": ["Everyone"]}
    wait_for(page, lambda b: b.find_element(By.ID, "oidc").is_displayed(), 20, "the provider's sign-in")
    page.find_element(By.ID, "oidc-sign-in").click()
    error = wait_for(page, lambda b: b.find_element(By.ID, "signin-error") if b.find_element(By.ID, "signin-error").is_displayed()
                     else None, 30, "the refusal")
    assert "no tenant or no roles" in error.text
    assert not page.find_element(By.ID, "whoami").is_displayed()
    assert page.execute_script("return sessionStorage.getItem('citewell.token')") is None


def _payload(token: str) -> str:
    import base64

    part = token.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()
