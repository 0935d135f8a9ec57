"""A site's pages, breadth first from a root, within its scope and limits.

The scope is the root's scheme, host, port and path prefix (:class:`~citewell.fetch.urls.Scope`);
``depth`` counts links followed from the root (0: the root alone); ``max_pages`` caps the
fetches. robots.txt is read once through the same guarded fetcher and honoured with the
standard library's parser (a missing one allows everything; 401, 403, a server error or no
answer allow nothing, as RFC 9309 says), its Crawl-delay included. Politeness: at most
``concurrency`` requests in flight, and request starts at least ``delay`` seconds apart.

A page the server says is unchanged (304) has no body; its links come from the bytes stored
when it was last fetched, which the caller hands back through ``stored``.
"""

from __future__ import annotations

import threading
import time
import urllib.robotparser
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import httpx

from citewell.errors import CitewellError, FetchFailed, HttpStatus, UrlRefused
from citewell.fetch.client import USER_AGENT, Fetcher, Page
from citewell.fetch.urls import Scope, filename_of, normalise, parse_url
from citewell.models import Fetched

DEFAULT_DEPTH = 5
DEFAULT_MAX_PAGES = 500
DEFAULT_CONCURRENCY = 4
DEFAULT_DELAY = 0.1


@dataclass(frozen=True)
class Visit:
    """One URL's turn: the page, or the typed error its fetch met (``robots``: not fetched)."""

    url: str
    depth: int
    page: Page | None = None
    error: CitewellError | None = None
    robots: bool = False


@dataclass
class Crawl:
    """Iterate for the visits; afterwards ``complete`` says whether every in-scope link within
    the depth was visited (False: the page limit stopped it), so pages not seen have left the site."""

    fetcher: Fetcher
    root: str
    depth: int = DEFAULT_DEPTH
    max_pages: int = DEFAULT_MAX_PAGES
    concurrency: int = DEFAULT_CONCURRENCY
    delay: float = DEFAULT_DELAY
    known: Callable[[str], Fetched | None] = lambda url: None
    stored: Callable[[str], bytes | None] = lambda url: None
    complete: bool = field(default=False, init=False)
    scope: Scope = field(init=False)

    def __post_init__(self) -> None:
        self.scope = Scope.of(self.root)
        self._next_start = 0.0
        self._pace = threading.Lock()

    def __iter__(self) -> Iterator[Visit]:
        root = normalise(self.root)
        robots = self._robots(root)
        delay = max(self.delay, float(robots.crawl_delay(USER_AGENT) or 0))
        queued: dict[str, int] = {root: 0}  # every URL ever queued, with its depth
        frontier = [root]
        fetched = 0
        self.complete = False
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency), thread_name_prefix="citewell-fetch") as pool:
            running: dict[Future[Page], tuple[str, int]] = {}
            try:
                while frontier or running:
                    while frontier and len(running) < max(1, self.concurrency) and fetched < self.max_pages:
                        url = frontier.pop(0)
                        if not robots.can_fetch(USER_AGENT, url):
                            yield Visit(url, queued[url], robots=True)
                            continue
                        running[pool.submit(self._paced, url, self.known(url), delay)] = (url, queued[url])
                        fetched += 1
                    if not running:
                        break
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        url, depth = running.pop(future)
                        try:
                            page = future.result()
                        except CitewellError as error:
                            yield Visit(url, depth, error=error)
                            continue
                        yield Visit(url, depth, page=page)
                        if depth < self.depth:
                            for link in self._links(page):
                                if link not in queued:
                                    queued[link] = depth + 1
                                    frontier.append(link)
            finally:
                for future in running:
                    future.cancel()
        self.complete = not frontier

    def _paced(self, url: str, known: Fetched | None, delay: float) -> Page:
        with self._pace:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + delay
        if start > now:
            time.sleep(start - now)
        return self.fetcher.fetch(url, known)

    def _robots(self, root: str) -> urllib.robotparser.RobotFileParser:
        parser = urllib.robotparser.RobotFileParser()
        origin = root[: root.index("/", root.index("//") + 2)]
        try:
            page = self.fetcher.fetch(f"{origin}/robots.txt")
            parser.parse(page.data.decode("utf-8", "replace").splitlines())
        except HttpStatus as error:
            if error.status in (401, 403) or error.status >= 500:
                parser.disallow_all = True
            else:
                parser.allow_all = True
        except UrlRefused:
            raise
        except CitewellError:  # no answer, or too large: nothing is known to be allowed
            parser.disallow_all = True
        return parser

    def _links(self, page: Page) -> list[str]:
        data = page.data if page.status == "fetched" else self.stored(page.url)
        if not data:
            return []
        from citewell.parsers.sniff import Kind, detect

        try:
            if detect(data, filename_of(page.final_url)) is not Kind.HTML:
                return []
        except CitewellError:
            return []
        from selectolax.lexbor import LexborHTMLParser

        tree = LexborHTMLParser(data)
        base = httpx.URL(page.final_url)
        found = tree.css_first("base[href]")
        if found is not None:
            try:
                base = base.join(found.attributes.get("href") or "")
            except (httpx.InvalidURL, ValueError):
                pass
        links = []
        for anchor in tree.css("a[href]"):
            href = (anchor.attributes.get("href") or "").strip()
            if not href or anchor.attributes.get("download") is not None:
                continue
            try:
                link = normalise(parse_url(str(base.join(href))))
            except (CitewellError, httpx.InvalidURL, ValueError):
                continue  # mailto:, javascript:, a broken href: not a page of this site
            if self.scope.holds(link):
                links.append(link)
        return list(dict.fromkeys(links))


__all__ = ["Crawl", "FetchFailed", "Visit"]
