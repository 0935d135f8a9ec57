"""A crawl follows the links of XHTML pages (issue 48), served as ``application/xhtml+xml``
under any name, on a real loopback site; a feed or other XML is no page whose links are followed."""

from __future__ import annotations

from benchmarks.loopback_site import Site, serving
from citewell.fetch.client import Fetcher
from citewell.fetch.crawl import Crawl
from citewell.fetch.guard import Guard
from citewell.parsers import parse


def xhtml(title: str, text: str, links: list[str]) -> bytes:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
            f'"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">'
            f'<head><title>{title}</title><script type="text/javascript" src="nav.js"/></head>'
            f"<body><h1>{title}</h1><p>{text}</p><ul>{anchors}</ul></body></html>").encode()


ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Port news</title><entry><title>Gate</title>
<content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><a href="hidden.html">the gate</a></div></content>
</entry></feed>"""


def served_as(body: bytes, content_type: str):
    def send(handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return send


def test_a_crawl_follows_the_links_of_xhtml_pages_whatever_their_names():
    site = Site()
    routes = {
        "/docs/": xhtml("Handbook", "The handbook of the port.", ["leave", "cranes.xhtml", "news.xml"]),
        "/docs/leave": xhtml("Annual leave", "Staff receive 27 days of paid annual leave.", ["gate.html"]),
        "/docs/cranes.xhtml": xhtml("Cranes", "Error E1027 means the crane lost its heartbeat.", []),
        "/docs/gate.html": xhtml("Gate", "The east gate closes at ten.", []),
    }
    for path, body in routes.items():
        site.routes[path] = served_as(body, "application/xhtml+xml; charset=utf-8")
    site.routes["/docs/news.xml"] = served_as(ATOM, "application/atom+xml")
    site.routes["/docs/hidden.html"] = served_as(xhtml("Hidden", "Only the feed links here.", []), "text/html")
    with serving(site), Fetcher(Guard.of(["127.0.0.1/32"])) as fetcher:
        crawl = Crawl(fetcher, f"{site.url}/docs/", delay=0)
        pages = {visit.url.split("/docs/", 1)[1]: visit.page for visit in crawl if visit.page is not None}
    assert set(pages) == {"", "leave", "cranes.xhtml", "news.xml", "gate.html"}  # not hidden.html: a feed is no page
    assert crawl.complete
    leave = parse(pages["leave"].data, "leave")
    assert leave.mime == "text/html" and leave.title == "Annual leave"
    assert leave.text == "Annual leave\n\nStaff receive 27 days of paid annual leave.\n\ngate.html"
