"""A real HTTP site on 127.0.0.1 (the standard library's threaded server): the crawl benchmark's
site and the web-source tests' servers. Pages answer with an ETag and Last-Modified and honour
If-None-Match / If-Modified-Since with 304; every request is recorded with its headers."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Handler = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Site:
    """``pages``: path (with query) -> bytes; ``routes``: path -> a handler answering in its own way."""

    pages: dict[str, bytes] = field(default_factory=dict)
    routes: dict[str, Handler] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    validators: bool = True  # False: a server that sends no ETag nor Last-Modified
    port: int = 0
    modified: str = field(default_factory=lambda: formatdate(usegmt=True))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def etag(self, path: str) -> str:
        return '"' + hashlib.sha256(self.pages[path]).hexdigest()[:16] + '"'

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path
        self.requests.append((path, {k.lower(): v for k, v in handler.headers.items()}))
        if path in self.routes:
            self.routes[path](handler)
            return
        if path not in self.pages:
            handler.send_response(404)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        etag = self.etag(path)
        if self.validators and (handler.headers.get("If-None-Match") == etag
                                or (handler.headers.get("If-None-Match") is None
                                    and handler.headers.get("If-Modified-Since") == self.modified)):
            handler.send_response(304)
            handler.send_header("ETag", etag)
            handler.end_headers()
            return
        body = self.pages[path]
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(body)))
        if self.validators:
            handler.send_header("ETag", etag)
            handler.send_header("Last-Modified", self.modified)
        handler.end_headers()
        handler.wfile.write(body)


@contextmanager
def serving(site: Site) -> Iterator[Site]:
    """The site listening on 127.0.0.1 on a free port until the block ends."""

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            site.answer(self)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    server.daemon_threads = True
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()


def page(title: str, text: str, links: list[str] = ()) -> bytes:  # type: ignore[assignment]
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{text}</p><ul>{anchors}</ul></body></html>").encode()


def generated(pages: int) -> dict[str, bytes]:
    """A site of ``pages`` pages under /docs/: an index linking ten sections, each linking its pages."""
    per = max(1, (pages - 11) // 10 + 1)
    site: dict[str, bytes] = {}
    names = [f"/docs/s{s}/p{p}.html" for s in range(10) for p in range(per)][: max(0, pages - 11)]
    sections = {s: [n for n in names if n.startswith(f"/docs/s{s}/")] for s in range(10)}
    site["/docs/"] = page("Handbook index", "The handbook's sections.", [f"s{s}/" for s in range(10)])
    for s, members in sections.items():
        site[f"/docs/s{s}/"] = page(f"Section {s}", f"Section {s} covers topic {s} of the handbook.",
                                    [m.rsplit("/", 1)[1] for m in members] + ["../"])
    for number, name in enumerate(names):
        site[name] = page(f"Page {number}", f"Page {number} says that shift {number} starts at {number % 24}:00 "
                          f"and the duty engineer for crane {number} is on call.", ["../", "../../docs/"])
    return site
