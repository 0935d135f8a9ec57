"""A re-crawl with --prune deletes only what the site itself said is gone, and a crawl stays in
its scope however a link or a redirect spells its way out: on real loopback sites."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from benchmarks.loopback_site import Site, page, serving
from citewell.cli import main
from citewell.deployments import open_local
from citewell.fetch.urls import Scope, normalise

ALLOW = ("--allow-host", "127.0.0.1")


def pages() -> dict[str, bytes]:
    return {
        "/docs/": page("Handbook", "The handbook of the port.", ["leave.html", "cranes.html"]),
        "/docs/leave.html": page("Annual leave", "Staff receive 27 days of paid annual leave.", ["gate.html"]),
        "/docs/cranes.html": page("Cranes", "Error E1027 means the crane lost its heartbeat."),
        "/docs/gate.html": page("Gate", "The east gate closes at ten."),
    }


def crawl(capsys, home: Path, url: str, *flags: str) -> tuple[int, dict]:
    code = main(["--home", str(home), "ingest", url, "--crawl", "--tenant", "northpier", "--allow-roles", "staff",
                 "--json", "--delay", "0", *ALLOW, *flags])
    return code, json.loads(capsys.readouterr().out)


def stored(home: Path) -> set[str]:
    return {d.document_id.split("/docs/", 1)[1] for d in open_local(home).documents.list_documents("northpier")}


def answer(status: int):
    def send(handler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return send


ALL = {"", "leave.html", "cranes.html", "gate.html"}


@pytest.mark.parametrize("path, status, why", [
    ("/docs/", 500, "its first page was not read"),
    ("/docs/", 503, "its first page was not read"),
    ("/docs/leave.html", 500, "1 page could not be fetched"),  # gate.html is linked from leave.html only
    ("/robots.txt", 503, "it did not end"),
    ("/robots.txt", 403, "it did not end"),
])
def test_a_recrawl_whose_pages_fail_for_now_prunes_nothing_and_says_why(capsys, tmp_path, path, status, why):
    site = Site(pages=pages())
    with serving(site):
        crawl(capsys, tmp_path, f"{site.url}/docs/")
        site.routes[path] = answer(status)
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/", "--prune")
    assert stored(tmp_path) == ALL and "gone" not in out
    assert code == 1
    report = out["crawls"][0]
    assert not report["complete"] and why in "; ".join(report["unfinished"])
    if path == "/robots.txt":
        root = {d["document_id"]: d for d in out["documents"]}[f"{site.url}/docs/"]
        assert root["status"] == "failed" and f"robots.txt answered {status}" in root["error"]["message"]


def test_a_site_that_is_down_prunes_nothing(capsys, tmp_path):
    site = Site(pages=pages())
    with serving(site):
        crawl(capsys, tmp_path, f"{site.url}/docs/")
    code, out = crawl(capsys, tmp_path, f"{site.url}/docs/", "--prune")  # nothing listens on the port now
    assert code == 1 and stored(tmp_path) == ALL and "gone" not in out
    assert "robots.txt could not be read" in out["documents"][0]["error"]["message"]


def test_a_page_that_answers_404_is_gone_even_when_the_crawl_is_unfinished(capsys, tmp_path):
    site = Site(pages=pages())
    with serving(site):
        crawl(capsys, tmp_path, f"{site.url}/docs/")
        del site.pages["/docs/cranes.html"]  # the site says 404 for it
        site.routes["/docs/leave.html"] = answer(502)  # and gate.html's only link is not read
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/", "--prune")
    assert [g["document_id"] for g in out["gone"]] == [f"{site.url}/docs/cranes.html"]
    assert stored(tmp_path) == ALL - {"cranes.html"}


def test_a_complete_recrawl_still_prunes_a_page_no_longer_linked(capsys, tmp_path):
    site = Site(pages=pages())
    with serving(site):
        crawl(capsys, tmp_path, f"{site.url}/docs/")
        site.pages["/docs/leave.html"] = page("Annual leave", "Staff receive 28 days of paid annual leave.")
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/", "--prune")
    assert code == 0 and out["crawls"][0] == {"root": f"{site.url}/docs/", "complete": True, "unfinished": [], "notes": []}
    assert [g["document_id"] for g in out["gone"]] == [f"{site.url}/docs/gate.html"] and out["gone"][0]["deleted"]
    assert stored(tmp_path) == ALL - {"gate.html"}


def test_a_shallower_recrawl_does_not_prune_the_pages_beyond_its_depth(capsys, tmp_path):
    site = Site(pages=pages())
    with serving(site):
        crawl(capsys, tmp_path, f"{site.url}/docs/")
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/", "--prune", "--depth", "1")
    assert code == 0 and stored(tmp_path) == ALL and "gone" not in out
    assert "1 page at its depth limit of 1 link to pages it did not follow" in out["crawls"][0]["unfinished"]


def test_pages_robots_txt_now_hides_are_kept(capsys, tmp_path):
    site = Site(pages=pages())
    with serving(site):
        crawl(capsys, tmp_path, f"{site.url}/docs/")
        site.pages["/robots.txt"] = b"User-agent: *\nDisallow: /docs/leave.html\n"
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/", "--prune")
    assert code == 0 and stored(tmp_path) == ALL and "gone" not in out
    assert "robots.txt kept 1 page from being read" in out["crawls"][0]["unfinished"][0]


@pytest.mark.parametrize("delay", ["99999999999999999999", "86400"])
def test_a_huge_crawl_delay_is_capped_and_said(capsys, tmp_path, delay):
    site = Site(pages={"/docs/": page("Handbook", "One page."), "/robots.txt": f"User-agent: *\nCrawl-delay: {delay}\n".encode()})
    with serving(site):
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/")
    assert code == 0 and out["crawls"][0]["notes"] == [
        f"robots.txt asks for a Crawl-delay of {delay} seconds; 10 seconds, the most a crawl waits, were kept"]


LEAVING = ["%2e%2e/private/secret.html", "..%2fprivate/secret.html", "..%2Fprivate/secret.html", "..;/private/secret.html",
           "%252e%252e/private/secret.html", "..%5cprivate/secret.html", "%2E%2E%2Fprivate%2Fsecret.html",
           ".%2e/private/secret.html", "../private/secret.html", "/docs/%2e%2e/private/secret.html"]


def test_links_that_spell_their_way_out_of_the_prefix_are_not_followed(capsys, tmp_path):
    secret = page("Secret", "The vault code is 7731.")
    site = Site(pages={"/docs/": page("Docs", "Public docs.", LEAVING), "/private/secret.html": secret})
    with serving(site):
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/")
    assert code == 0 and stored(tmp_path) == {""}
    assert [p for p, _ in site.requests if p not in ("/robots.txt", "/docs/")] == []


@pytest.mark.parametrize("link", LEAVING)
def test_the_scope_is_the_path_a_server_resolves(link):
    scope = Scope.of("http://h/docs/")
    assert not scope.holds(normalise(str(httpx.URL("http://h/docs/").join(link))))
    assert scope.holds(normalise("http://h/docs/a%2Fb/./c%7e.html"))


def redirect(to: str):
    def send(handler) -> None:
        handler.send_response(302)
        handler.send_header("Location", to)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return send


def test_a_redirect_out_of_the_scope_is_not_followed_and_the_page_is_kept(capsys, tmp_path):
    site = Site(pages={**pages(), "/private/secret.html": page("Secret", "The vault code is 7731.")})
    with serving(site):
        crawl(capsys, tmp_path, f"{site.url}/docs/")
        site.routes["/docs/cranes.html"] = redirect("/docs/%2e%2e/private/secret.html")
        site.routes["/docs/gate.html"] = redirect(f"{site.url}/private/secret.html")
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/", "--prune")
    docs = {d["document_id"].rsplit("/", 1)[1]: d for d in out["documents"]}
    assert docs["cranes.html"]["status"] == docs["gate.html"]["status"] == "skipped"
    assert docs["gate.html"]["error"]["code"] == "out_of_scope" and "outside the crawl's scope" in docs["gate.html"]["error"]["message"]
    assert code == 0 and stored(tmp_path) == ALL and "gone" not in out
    assert not any(p.startswith("/private/") for p, _ in site.requests)


def test_a_first_page_that_redirects_out_of_its_scope_fails_with_the_reason(capsys, tmp_path):
    site = Site(pages={"/elsewhere/": page("Else", "Elsewhere.")}, routes={"/docs/": redirect("/elsewhere/")})
    with serving(site):
        code, out = crawl(capsys, tmp_path, f"{site.url}/docs/")
    assert code == 1 and out["documents"][0]["error"]["code"] == "out_of_scope"
    assert open_local(tmp_path).documents.list_documents("northpier")[0].status.value == "failed"


def test_the_report_says_why_nothing_was_pruned_in_words(capsys, tmp_path):
    site = Site(pages=pages())
    with serving(site):
        main(["--home", str(tmp_path), "ingest", f"{site.url}/docs/", "--crawl", "--tenant", "northpier",
              "--allow-roles", "staff", "--delay", "0", *ALLOW])
        site.routes["/docs/"] = answer(500)
        capsys.readouterr()
        main(["--home", str(tmp_path), "ingest", f"{site.url}/docs/", "--crawl", "--tenant", "northpier",
              "--allow-roles", "staff", "--delay", "0", "--prune", *ALLOW])
    shown = " ".join(capsys.readouterr().out.split())
    assert "pages it did not reach are not called gone (nor pruned), since its first page was not read" in shown
