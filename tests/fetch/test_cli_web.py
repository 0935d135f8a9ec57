"""citewell ingest on web pages and sites served on loopback (allowed through --allow-host):
the same stages and records as files, re-crawls that cost only conditional requests, pages gone."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchmarks.loopback_site import Site, page, serving
from citewell.cli import main
from citewell.deployments import open_local

ALLOW = ("--allow-host", "127.0.0.1")


def ingest(capsys, home: Path, *argv: str, roles: str = "staff") -> tuple[int, dict]:
    code = main(["--home", str(home), "ingest", *argv, "--tenant", "northpier", "--allow-roles", roles, "--json",
                 "--delay", "0", *ALLOW])
    out = json.loads(capsys.readouterr().out)
    return code, out


def by_id(out: dict) -> dict[str, dict]:
    return {d["document_id"]: d for d in out["documents"]}


def site_pages() -> dict[str, bytes]:
    return {
        "/docs/": page("Port handbook", "The handbook of the port.", ["leave.html", "cranes/", "../private/", "#top",
                                                                       "mailto:hr@example.com", "leave.html#annual"]),
        "/docs/leave.html": page("Annual leave", "Staff receive 27 days of paid annual leave.", ["cranes/"]),
        "/docs/cranes/": page("Cranes", "Error E1027 means the crane lost its heartbeat.", ["deep.html", "/docs/"]),
        "/docs/cranes/deep.html": page("Deep page", "The deepest page of the handbook.", ["deeper.html"]),
        "/docs/cranes/deeper.html": page("Deeper", "Beyond the crawl's depth of two."),
        "/private/": page("Outside", "Not under the crawl's prefix."),
    }


def writes(home: Path) -> tuple[int, int]:
    """What the stores hold that a write would change: the records' versions and the objects."""
    with sqlite3.connect(home / "metadata.db") as db:
        versions = sum(row[0] for row in db.execute("SELECT version FROM documents"))
    return versions, sum(1 for p in (home / "objects").rglob("*") if p.is_file())


def test_a_crawl_stays_in_its_site_and_depth_and_takes_titles_and_sources(capsys, tmp_path):
    with serving(Site(pages=site_pages())) as site:
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl", "--depth", "2")
    docs = by_id(out)
    assert code == 0 and set(docs) == {f"{site.url}/docs/{p}" for p in ("", "leave.html", "cranes/", "cranes/deep.html")}
    assert all(d["status"] == "published" for d in docs.values())
    record = open_local(tmp_path).documents.get_document("northpier", f"{site.url}/docs/leave.html")
    assert record.title == "Annual leave" and record.source == f"{site.url}/docs/leave.html"
    assert "/private/" not in [p for p, _ in site.requests]
    assert [p for p, _ in site.requests].count("/docs/leave.html") == 1  # a fragment is the same page
    main(["--home", str(tmp_path), "search", "crane heartbeat", "--tenant", "northpier", "--roles", "staff", "--json"])
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["document_id"] == f"{site.url}/docs/cranes/"


def test_a_recrawl_of_an_unchanged_site_sends_only_conditional_requests_and_writes_nothing(capsys, tmp_path):
    with serving(Site(pages=site_pages())) as site:
        ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl")
        before, site.requests[:] = writes(tmp_path), []
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl")
    assert code == 0 and {d["status"] for d in out["documents"]} == {"unchanged"} and "gone" not in out
    pages = [(p, h) for p, h in site.requests if p != "/robots.txt"]
    assert len(pages) == 5 and all("if-none-match" in h and "if-modified-since" in h for _, h in pages)
    assert writes(tmp_path) == before


def test_without_validators_the_same_bytes_are_unchanged_and_write_nothing(capsys, tmp_path):
    with serving(Site(pages=site_pages(), validators=False)) as site:
        ingest(capsys, tmp_path, f"{site.url}/docs/leave.html")
        before = writes(tmp_path)
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/leave.html")
    assert code == 0 and by_id(out)[f"{site.url}/docs/leave.html"]["status"] == "unchanged"
    assert writes(tmp_path) == before


def test_a_304_under_other_roles_republishes_the_stored_bytes(capsys, tmp_path):
    url_path = "/docs/leave.html"
    with serving(Site(pages=site_pages())) as site:
        ingest(capsys, tmp_path, site.url + url_path)
        code, out = ingest(capsys, tmp_path, site.url + url_path, "--replace", roles="staff,hr")
    assert code == 0 and by_id(out)[site.url + url_path]["status"] == "published"
    assert site.requests[-1][1].get("if-none-match")  # the server said 304: the stored bytes were used
    record = open_local(tmp_path).documents.get_document("northpier", site.url + url_path)
    assert record.allowed_roles == {"staff", "hr"} and record.chunk_count == 1


def test_changed_pages_republish_and_gone_pages_are_listed_then_pruned(capsys, tmp_path):
    pages = site_pages()
    with serving(Site(pages=pages)) as site:
        ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl")
        pages["/docs/leave.html"] = page("Annual leave", "Staff now receive 30 days of paid annual leave.", ["cranes/"])
        del pages["/docs/cranes/deeper.html"]  # answers 404
        pages["/docs/cranes/"] = page("Cranes", "Error E1027 means the crane lost its heartbeat.", ["/docs/"])  # deep.html unlinked
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl")
        docs, gone = by_id(out), {g["document_id"]: g for g in out["gone"]}
        assert code == 0 and docs[f"{site.url}/docs/leave.html"]["status"] == "published"
        assert set(gone) == {f"{site.url}/docs/cranes/deep.html", f"{site.url}/docs/cranes/deeper.html"}
        assert not any(g["deleted"] for g in gone.values())
        assert open_local(tmp_path).documents.get_document("northpier", f"{site.url}/docs/cranes/deep.html").active_revision
        del pages["/docs/cranes/deep.html"]
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl", "--prune")
    assert {g["document_id"] for g in out["gone"] if g["deleted"]} == set(gone)
    assert all(open_local(tmp_path).documents.get_document("northpier", d) is None for d in gone)


def test_a_page_that_answers_410_is_gone_and_pruned(capsys, tmp_path):
    def withdrawn(handler) -> None:
        handler.send_response(410)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with serving(Site(pages=site_pages())) as site:
        url = f"{site.url}/docs/leave.html"
        ingest(capsys, tmp_path, url)
        site.routes["/docs/leave.html"] = withdrawn
        code, out = ingest(capsys, tmp_path, url)
        assert code == 0 and out["gone"] == [{"document_id": url, "source": url, "reason": "answers 410", "deleted": False}]
        assert open_local(tmp_path).documents.get_document("northpier", url).active_revision  # listed, still served
        code, out = ingest(capsys, tmp_path, url, "--prune")
    assert code == 0 and out["gone"][0]["deleted"] and open_local(tmp_path).documents.get_document("northpier", url) is None


def test_a_crawl_cut_short_by_its_page_limit_calls_no_page_gone(capsys, tmp_path):
    with serving(Site(pages=site_pages())) as site:
        ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl")
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl", "--max-pages", "2", "--concurrency", "1")
    assert code == 0 and len(out["documents"]) == 2 and "gone" not in out


def test_robots_txt_is_honoured(capsys, tmp_path):
    pages = {**site_pages(), "/robots.txt": b"User-agent: *\nDisallow: /docs/cranes/\n"}
    with serving(Site(pages=pages)) as site:
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl")
    docs = by_id(out)
    assert docs[f"{site.url}/docs/cranes/"]["status"] == "skipped" and docs[f"{site.url}/docs/cranes/"]["error"]["code"] == "robots"
    assert not any(p.startswith("/docs/cranes/") for p, _ in site.requests)
    assert docs[f"{site.url}/docs/leave.html"]["status"] == "published"


def test_one_page_named_without_crawl_honours_robots_txt_too(capsys, tmp_path):
    """robots.txt rules a page named alone as it rules a crawl's: disallowed, the page is not
    requested and fails with code ``robots``; a robots.txt that answers a server error says
    nothing, so nothing is fetched (RFC 9309)."""
    pages = {**site_pages(), "/robots.txt": b"User-agent: *\nDisallow: /docs/cranes/\n"}
    with serving(Site(pages=pages)) as site:
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/cranes/", f"{site.url}/docs/leave.html")
    docs = by_id(out)
    cranes = docs[f"{site.url}/docs/cranes/"]
    assert code == 1 and cranes["status"] == "failed" and cranes["error"]["code"] == "robots", cranes
    assert not any(p.startswith("/docs/cranes/") for p, _ in site.requests)
    assert docs[f"{site.url}/docs/leave.html"]["status"] == "published"
    record = open_local(tmp_path).documents.get_document("northpier", f"{site.url}/docs/cranes/")
    assert record.status.value == "failed" and "robots.txt" in record.error.message

    def unavailable(handler) -> None:
        handler.send_response(503)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with serving(Site(pages=site_pages())) as site:
        site.routes["/robots.txt"] = unavailable
        code, out = ingest(capsys, tmp_path / "down", f"{site.url}/docs/leave.html")
    (leave,) = out["documents"]
    assert code == 1 and leave["error"]["code"] == "fetch_failed" and "robots.txt answered 503" in leave["error"]["message"]
    assert [p for p, _ in site.requests] == ["/robots.txt"]


def test_a_failing_page_is_recorded_with_its_reason_and_the_crawl_goes_on(capsys, tmp_path):
    pages = site_pages()

    def broken(handler) -> None:
        handler.send_response(500)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with serving(Site(pages=pages)) as site:
        site.routes["/docs/leave.html"] = broken
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/", "--crawl")
    docs = by_id(out)
    assert code == 1 and docs[f"{site.url}/docs/leave.html"]["error"]["code"] == "http_status"
    assert docs[f"{site.url}/docs/cranes/"]["status"] == "published"
    record = open_local(tmp_path).documents.get_document("northpier", f"{site.url}/docs/leave.html")
    assert record.status.value == "failed" and "500" in record.error.message


def test_a_refused_url_fails_with_its_reason_and_fetches_nothing(capsys, tmp_path):
    with serving(Site(pages=site_pages())) as site:
        code = main(["--home", str(tmp_path), "ingest", f"{site.url}/docs/", "http://169.254.169.254/latest/meta-data/",
                     "file:///etc/passwd", "--tenant", "northpier", "--allow-roles", "staff", "--json"])
        out = json.loads(capsys.readouterr().out)
    assert code == 1 and site.requests == []
    codes = {d["document_id"]: d["error"]["code"] for d in out["documents"]}
    assert codes == {f"{site.url}/docs/": "url_refused", "http://169.254.169.254/latest/meta-data/": "url_refused",
                     "file:///etc/passwd": "url_refused"}


def test_pdf_and_markdown_are_sniffed_from_the_bytes(capsys, tmp_path):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Quay safety: hard hats are worn on every berth.")
    pages = {"/docs/safety": bytes(pdf.output()), "/docs/notes.md": b"# Notes\n\nThe rota office opens at nine.\n"}
    with serving(Site(pages=pages)) as site:  # served as text/html whatever they are: the bytes decide
        code, out = ingest(capsys, tmp_path, f"{site.url}/docs/safety", f"{site.url}/docs/notes.md")
    assert code == 0
    services = open_local(tmp_path)
    safety = services.documents.get_document("northpier", f"{site.url}/docs/safety")
    chunks = services.chunks.get_chunks("northpier", safety.document_id, safety.active_revision)
    assert "hard hats" in " ".join(c.text for c in chunks) and chunks[0].pages == [1]
    assert services.documents.get_document("northpier", f"{site.url}/docs/notes.md").title == "Notes"


@pytest.mark.parametrize("flags, message", [
    (["--crawl", "notes.md"], "--crawl follows the links of a URL"),
    (["--doc-id", "x", "http://127.0.0.1/"], "a web page's id and source are its URL"),
])
def test_flags_that_do_not_fit_pages_are_refused(capsys, tmp_path, flags, message):
    code = main(["--home", str(tmp_path), "ingest", *flags, "--tenant", "northpier", "--allow-roles", "staff", "--json"])
    assert code == 2 and message in json.loads(capsys.readouterr().out)["error"]["message"]
