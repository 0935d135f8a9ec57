"""Randomised crawls and re-crawls of a loopback site that fails at random, interleaved with
uploads, deletes and audits, checked after every step.

The site (:class:`FlakySite`, a real HTTP server on 127.0.0.1) holds pages under ``/docs/`` that
link to each other, and pages under ``/private/`` that hold :data:`SECRET` and that no crawl of
``/docs/`` may store; pages link out to them through every spelling a lenient server resolves
(``%2e%2e/``, ``..%2f``, ``..;/``, ``%252e``, backslashes). Each request may meet a transient
fault: a 500 or 503, a reply slower than the fetch's time limit, a reset connection, a redirect
inside the site or out of it, an encoding (gzip, deflate, a stack of two). Steps change the site
(a page added, removed so that it answers 404, unlinked; robots.txt absent, disallowing a page,
answering 503 or 403, asking a Crawl-delay past any clock; the fault rate; the site down and up
again), crawl it with and without ``--prune`` at a random depth and page limit, and inside a
crawl, between its pages, upload a file, delete a page or audit.

After each step (a *probe*):

- no page is gone from the index that the site served and linked (at any depth) both when the
  crawl began and when it ended, unless a delete asked for it: a transient failure, a page limit
  or a shallower depth may leave pages unseen, never removed;
- nothing outside the crawl's scope is stored: every page's id and source are under ``/docs/`` as
  a server resolves the path, and no chunk holds :data:`SECRET`;
- a file uploaded beside the crawls is never pruned by one;
- a crawl ends in outcomes, never in an exception that is not a typed error;
- a read-only audit finds nothing.

``tests/integrity/test_web_interleavings.py`` runs a seeded sample; ``make fuzz`` runs many more and
reports into BENCHMARKS.md.
"""

from __future__ import annotations

import dataclasses
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from benchmarks.report import write_block as replace_block
from citewell.audit import audit
from citewell.deletion import delete_document
from citewell.errors import CitewellError, NotFound
from citewell.fetch.client import Fetcher
from citewell.fetch.guard import Guard
from citewell.fetch.urls import Scope, normalise
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.ingest.web import WebOptions, WebRun
from citewell.services import Services

TENANT = "northpier"
ROLES = frozenset({"staff"})
SECRET = "vaultword"
FETCH_SECONDS = 0.5
LEAVING = ["%2e%2e/private/secret.html", "..%2fprivate/secret.html", "..;/private/secret.html",
           "%252e%252e/private/secret.html", "..%5cprivate/secret.html", "../private/secret.html",
           "/docs/%2e%2e/private/secret.html", ".%2E/private/secret.html"]
FAULTS = ("500", "503", "slow", "reset", "redirect-in", "redirect-out", "gzip", "deflate", "gzip, gzip")
ROBOTS = ("absent", "absent", "absent", "allow", "disallow", "disallow", "503", "403", "delay")
CHANGES = {"add": 3, "remove": 1, "unlink": 1, "link out": 1, "robots": 2, "faults": 2, "down": 1, "change text": 1}
WEB_START, WEB_END = "<!-- web-fuzz:start -->", "<!-- web-fuzz:end -->"
WORDS = ("berth", "gate", "crane", "ledger", "quay", "tide", "shift", "hull", "rota", "pier")


class Violation(AssertionError):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


@dataclass
class FlakySite:
    """The site's truth (pages, links, robots.txt) and its faults, drawn per request from ``rng``."""

    rng: random.Random
    pages: dict[str, list[str]] = field(default_factory=dict)  # path under /docs/ -> its links
    texts: dict[str, str] = field(default_factory=dict)
    robots: str = "absent"
    disallowed: str = ""
    fault_rate: float = 0.0
    port: int = 0
    served: Counter[str] = field(default_factory=Counter)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def root(self) -> str:
        return f"{self.url}/docs/"

    def reachable(self) -> set[str]:
        """The document ids of the pages served and linked from the root, at any depth."""
        seen, frontier = {"/docs/"}, ["/docs/"]
        while frontier:
            path = frontier.pop()
            for link in self.pages.get(path, []):
                target = httpx.URL(f"{self.url}{path}").join(link).raw_path.decode().split("?")[0]
                if target in self.pages and target not in seen:
                    seen.add(target)
                    frontier.append(target)
        return {normalise(f"{self.url}{p}") for p in seen if p in self.pages}

    # -- serving --

    def start(self) -> None:
        site = self

        class Answer(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - the standard library's name
                site.answer(self)

            def log_message(self, *_: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Answer)
        server.daemon_threads = True
        server.handle_error = lambda *_: None  # type: ignore[method-assign]  # a reset or a fetch given up: expected here
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def down(self) -> bool:
        return self._server is None

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?", 1)[0]
        with self._lock:
            fault = self.rng.choice(FAULTS) if self.rng.random() < self.fault_rate else None
            robots, disallowed = self.robots, self.disallowed
            links, text = self.pages.get(path), self.texts.get(path, "")
        self.served[fault or "ok"] += 1
        if path == "/robots.txt":
            if robots in ("503", "403"):
                return _send(handler, int(robots), b"")
            if robots == "absent":
                return _send(handler, 404, b"")
            rules = {"allow": "Allow: /\n", "disallow": f"Disallow: {disallowed}\n",
                     "delay": "Crawl-delay: 99999999999999999999\n"}[robots]
            return _send(handler, 200, f"User-agent: *\n{rules}".encode(), "text/plain")
        if path.startswith("/private/"):
            return _send(handler, 200, _html("Private", f"The {SECRET} of the vault is kept here.", []))
        if fault in ("500", "503"):
            return _send(handler, int(fault), b"busy")
        if fault == "slow":
            time.sleep(FETCH_SECONDS + 0.2)
        if fault == "reset":  # an RST instead of an answer
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.close_connection = True
            return
        if fault == "redirect-in" and "?" not in handler.path:
            return _send(handler, 302, b"", extra={"Location": f"{path}?moved=1"})
        if fault == "redirect-out":
            return _send(handler, 302, b"", extra={"Location": "/private/secret.html"})
        if links is None:
            return _send(handler, 404, b"")
        body = _html(path, text, links)
        coding = fault if fault in ("gzip", "deflate", "gzip, gzip") else None
        if coding:
            from tests.hostile_replies import encode

            for one in coding.split(", "):
                body = encode(body, one)
        return _send(handler, 200, body, extra={"Content-Encoding": coding} if coding else None)


def _html(title: str, text: str, links: list[str]) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{text}</p>{anchors}</body></html>".encode()


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str = "text/html",
          extra: dict[str, str] | None = None) -> None:
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)
    except OSError:  # the fetcher gave up on a slow reply: as it should
        pass


class WebInterleaver:
    """One seeded run: a site, a home, and the steps between them."""

    def __init__(self, services: Services, seed: int) -> None:
        self.services, self.seed = services, seed
        self.rng = random.Random(seed)
        self.site = FlakySite(random.Random(seed * 7919 + 1), fault_rate=self.rng.choice([0.05, 0.1, 0.2, 0.3]))
        self.ops: Counter[str] = Counter()
        self.probes = 0
        self.notes: set[str] = set()  # files uploaded beside the crawls
        self.deleted: set[str] = set()  # pages a delete asked for, since the crawl began
        self.site.start()
        for n in range(6):
            self._add_page(f"/docs/p{n}.html")

    def close(self) -> None:
        self.site.stop()

    # -- the site's changes --

    def _add_page(self, path: str) -> None:
        words = " ".join(self.rng.sample(WORDS, 4))
        self.site.texts[path] = f"Page {path} is about the {words} of the port."
        self.site.pages[path] = []
        linking = self.rng.choice([p for p in self.site.pages if p != path] or ["/docs/"])
        self.site.pages.setdefault("/docs/", [])
        self.site.pages[linking].append(path.removeprefix("/docs/"))

    def change_site(self) -> None:
        what = "up" if self.site.down and self.rng.random() < 0.5 else self.rng.choices(*zip(*CHANGES.items()))[0]
        pages = [p for p in self.site.pages if p != "/docs/"]
        self.ops[f"site: {what}"] += 1
        with self.site._lock:
            if what == "add":
                self._add_page(f"/docs/p{len(self.site.texts)}.html")
            elif what == "remove" and pages:
                del self.site.pages[self.rng.choice(pages)]  # answers 404 from now on
            elif what == "unlink" and pages:
                name = self.rng.choice(pages).removeprefix("/docs/")
                for links in self.site.pages.values():
                    while name in links:
                        links.remove(name)
            elif what == "link out":
                self.site.pages[self.rng.choice(list(self.site.pages))].append(self.rng.choice(LEAVING))
            elif what == "robots":
                self.site.robots = self.rng.choice(ROBOTS)
                self.site.disallowed = self.rng.choice(pages or ["/docs/"])
            elif what == "faults":
                self.site.fault_rate = self.rng.choice([0.0, 0.1, 0.2, 0.3, 0.5])
            elif what == "change text" and pages:
                page = self.rng.choice(pages)
                self.site.texts[page] = self.site.texts[page] + " Revised."
        if what == "down" and not self.site.down:
            self.site.stop()
        elif what == "up" and self.site.down:
            self.site.start()

    # -- operations on the home --

    def upload(self) -> None:
        name = f"notes/n{self.rng.randrange(4)}.md"
        text = f"# Note\n\nThe {' '.join(self.rng.sample(WORDS, 3))} note.\n"
        ingest(self.services, [IngestRequest(document_id=name, tenant=TENANT, allowed_roles=ROLES, data=text.encode(),
                                             filename="note.md", source=f"file:///{name}")])
        self.notes.add(name)
        self.ops["upload a file"] += 1

    def delete(self) -> None:
        pages = [d.document_id for d in self.services.documents.list_documents(TENANT) if d.document_id.startswith("http")]
        if not pages:
            return
        page = self.rng.choice(pages)
        try:
            delete_document(self.services, TENANT, page)
        except NotFound:
            return
        self.deleted.add(page)
        self.ops["delete a page"] += 1

    def run_audit(self, inside: bool = False) -> None:
        """A read-only audit; inside a crawl a page published by words whose vectors come after its
        batch is in flight, not a finding."""
        self.ops["audit"] += 1
        findings = [f for f in audit(self.services).findings if not (inside and f.kind == "vectors_pending")]
        if findings:
            raise Violation("audit", "; ".join(f"{f.kind}: {f.detail}" for f in findings)[:500])

    def audit_inside(self) -> None:
        self.run_audit(inside=True)

    def crawl(self) -> None:
        prune = self.rng.random() < 0.7
        depth = self.rng.choice([1, 2, 3, 5, 5])
        max_pages = self.rng.choice([3, 50, 50, 50])
        self.ops["crawl --prune" if prune else "crawl"] += 1
        before = {d.document_id for d in self.services.documents.list_documents(TENANT)}
        served_before = self.site.reachable() if not self.site.down else set()
        self.deleted = set()
        options = {"tenant": TENANT, "allowed_roles": ROLES, "crawl": True, "depth": depth, "max_pages": max_pages,
                   "concurrency": 1, "delay": 0.0}
        if "max_crawl_delay" in {f.name for f in dataclasses.fields(WebOptions)}:
            options["max_crawl_delay"] = 0.01
        with Fetcher(Guard.of(["127.0.0.1/32"]), seconds=FETCH_SECONDS) as fetcher:
            run = WebRun(self.services, fetcher, [self.site.root], WebOptions(**options), prune=prune)
            try:
                ingest(self.services, self._interleaved(run.requests()))
            except Violation:
                raise
            except CitewellError:
                pass  # a typed error is an outcome (an id being deleted, say), not a crash
            except Exception as error:
                raise Violation("crash", f"the crawl raised {type(error).__name__}: {error}") from error
        served_after = self.site.reachable() if not self.site.down else set()
        kept = {d.document_id for d in self.services.documents.list_documents(TENANT)}
        lost = (before & served_before & served_after) - self.deleted - kept
        if lost:
            reports = getattr(run, "crawls", [])
            raise Violation("served page removed", f"{sorted(lost)} are still served and linked, yet gone after a crawl "
                            f"(prune {prune}, depth {depth}, max pages {max_pages}, robots {self.site.robots}, "
                            f"faults {self.site.fault_rate}); gone: {run.gone}; reports: {reports}")

    def _interleaved(self, requests: Iterator[IngestRequest]) -> Iterator[IngestRequest]:
        for request in requests:
            if self.rng.random() < 0.15:
                inside = self.rng.choice([self.upload, self.delete, self.audit_inside, self.change_site])
                self.ops[f"inside a crawl: {inside.__name__}"] += 1
                inside()
            yield request

    # -- the checks --

    def check(self) -> None:
        scope = Scope.of(self.site.root)
        documents = self.services.documents.list_documents(TENANT)
        for document in documents:
            if document.document_id.startswith("http") and not (scope.holds(normalise(document.document_id))
                                                                  and scope.holds(normalise(document.source))):
                raise Violation("out of scope", f"{document.document_id} (source {document.source}) is stored")
            if document.active_revision:
                chunks = self.services.chunks.get_chunks(TENANT, document.document_id, document.active_revision)
                if any(SECRET in chunk.text for chunk in chunks):
                    raise Violation("out of scope", f"{document.document_id} holds the private page's text")
        missing = self.notes - {d.document_id for d in documents}
        if missing:
            raise Violation("file pruned", f"{sorted(missing)} were uploaded beside the crawls and are gone")
        self.run_audit()

    def run(self, steps: int, on_probe: Callable[[int], None] | None = None) -> int:
        try:
            for _ in range(steps):
                step = self.rng.choices([self.crawl, self.change_site, self.upload, self.delete, self.run_audit],
                                        weights=[5, 4, 1, 1, 1])[0]
                step()
                self.check()
                self.probes += 1
                if on_probe is not None:
                    on_probe(self.probes)
        finally:
            self.close()
        return self.probes


def web_block(probes: int, runs: int, seconds: float, failures: list[str], command: str, ops: Counter[str]) -> str:
    lines = [WEB_START, "## Web interleavings (`make fuzz`)", "",
             f"`{command}` on {time.strftime('%Y-%m-%d', time.gmtime())}: {probes:,} probes in {runs} seeded runs "
             f"({seconds / 60:.1f} minutes) against a loopback site that fails at random (500, 503, replies past the "
             "time limit, resets, redirects in and out of the site, gzip, deflate and stacked encodings, the site "
             "down), whose pages are added, removed, unlinked and linked out of the crawl's prefix by every spelling a "
             "server resolves, and whose robots.txt comes and goes (503, 403, a page disallowed, a Crawl-delay past "
             "any clock); crawls with and without --prune at random depths and page limits, with uploads, deletes, "
             "audits and site changes between their pages. A probe is one step followed by every check in "
             "`tests/web_interleavings.py`: no page served and linked before and after a crawl is gone, nothing "
             "outside the crawl's scope is stored, no uploaded file is pruned, no crawl raises, a read-only audit "
             "finds nothing.", "",
             "Operations run: " + ", ".join(f"{name} {count:,}" for name, count in sorted(ops.items())) + ".", "",
             f"Failures: {len(failures)}.", ""]
    lines += [f"- {f}" for f in failures] + ([""] if failures else [])
    return "\n".join(lines + [WEB_END])


def seeded_runs(target: int, first_seed: int, steps: int) -> tuple[int, int, list[str], Counter[str]]:
    import tempfile

    from citewell.embedders.minilm import MiniLMEmbedder
    from tests.conftest import make_services

    embedder = MiniLMEmbedder()
    probes, runs, failures, ops = 0, 0, [], Counter[str]()
    seed = first_seed
    while probes < target:
        with tempfile.TemporaryDirectory() as folder:
            fuzz = WebInterleaver(make_services(Path(folder), embedder), seed)
            try:
                fuzz.run(steps)
            except Exception as error:  # a violation, or a crash: both are failures to report
                failures.append(f"seed {seed}, probe {fuzz.probes}: {type(error).__name__}: {error}"[:1200])
            probes += fuzz.probes + (fuzz.probes < steps)  # the failing step was a probe too
            ops += fuzz.ops
        runs += 1
        print(f"web seed {seed}: {probes} probes, {runs} runs, {len(failures)} failures", flush=True)
        seed += 1
    return probes, runs, failures, ops


def main(argv: list[str] | None = None) -> int:
    """``make fuzz``'s web part: seeded runs until at least ``--probes`` probes, reported into BENCHMARKS.md."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--probes", type=int, default=2_000)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    parser.add_argument("--no-report", action="store_true", help="print the failures; leave BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    started = time.monotonic()
    probes, runs, failures, ops = seeded_runs(args.probes, args.first_seed, args.steps)
    for failure in failures:
        print(failure)
    if not args.no_report:
        command = f"python -m tests.web_interleavings --probes {args.probes}"
        replace_block(args.out, web_block(probes, runs, time.monotonic() - started, failures, command, ops),
                      WEB_START, WEB_END)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
