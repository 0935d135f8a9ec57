"""A site's pages, breadth first from a root, within its scope and limits.

The scope is the root's scheme, host, port and path prefix (:class:`~citewell.fetch.urls.Scope`),
held by every link and every redirect's target; ``depth`` counts links followed from the root
(0: the root alone); ``max_pages`` caps the fetches. robots.txt is read once through the same
guarded fetcher and honoured (:mod:`citewell.fetch.robots`: a missing one allows everything; one
that answers 401 or 403 allows nothing, and one that answers a server error or nothing at all
says nothing, so the crawl ends there). Its Crawl-delay is honoured up to :data:`MAX_CRAWL_DELAY`.
Politeness: at most ``concurrency`` requests in flight, and request starts at least ``delay``
seconds apart.

A page the server says is unchanged (304) has no body; its links come from the bytes stored
when it was last fetched, which the caller hands back through ``stored``.

Afterwards :attr:`Crawl.unfinished` says why pages the crawl did not see may still be on the
site: a page that could not be fetched or read for its links, a limit that cut links off. Only a
crawl with none of these (``complete``) read every link set within its depth, so only then has a
stored page it did not reach left the site.
"""

from __future__ import annotations

import math
import threading
import time
import urllib.robotparser
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import httpx

from citewell.errors import CitewellError, FetchFailed
from citewell.fetch.client import USER_AGENT, Fetcher, Page, said_gone
from citewell.fetch.robots import allowed, read_robots
from citewell.fetch.urls import Scope, filename_of, normalise, parse_url
from citewell.models.documents import Fetched

DEFAULT_DEPTH = 5
DEFAULT_MAX_PAGES = 500
DEFAULT_CONCURRENCY = 4
DEFAULT_DELAY = 0.1
MAX_CRAWL_DELAY = 10.0  # seconds: a site asking for more would hold a 500-page crawl for over an hour


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
    """Iterate for the visits; afterwards ``unfinished`` lists why pages not seen may still be on
    the site, and ``complete`` (none) says that pages not seen have left it. ``notes`` says what the
    crawl changed of what the site asked (a Crawl-delay capped)."""

    fetcher: Fetcher
    root: str
    depth: int = DEFAULT_DEPTH
    max_pages: int = DEFAULT_MAX_PAGES
    concurrency: int = DEFAULT_CONCURRENCY
    delay: float = DEFAULT_DELAY
    max_crawl_delay: float = MAX_CRAWL_DELAY
    known: Callable[[str], Fetched | None] = lambda url: None
    stored: Callable[[str], bytes | None] = lambda url: None
    unfinished: list[str] = field(default_factory=lambda: ["it has not run"], init=False)
    notes: list[str] = field(default_factory=list, init=False)
    scope: Scope = field(init=False)

    def __post_init__(self) -> None:
        self.scope = Scope.of(self.root)
        self._next_start = 0.0
        self._pace = threading.Lock()

    @property
    def complete(self) -> bool:
        return not self.unfinished

    def __iter__(self) -> Iterator[Visit]:
        self.unfinished, self.notes = ["it did not end"], []
        root = normalise(self.root)
        robots = read_robots(self.fetcher, root)
        delay = max(self.delay, self._crawl_delay(robots))
        queued: dict[str, int] = {root: 0}  # every URL ever queued, with its depth
        frontier = [root]
        fetched = 0
        hidden = cut = unread = 0  # pages robots.txt kept from us; pages whose links the depth cut; links unknown
        failed: list[Visit] = []  # pages past the first whose fetch failed, not by the site's word that they are gone
        root_visit: Visit | None = None
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency), thread_name_prefix="citewell-fetch") as pool:
            running: dict[Future[Page], tuple[str, int]] = {}
            try:
                while frontier or running:
                    while frontier and len(running) < max(1, self.concurrency) and fetched < self.max_pages:
                        url = frontier.pop(0)
                        if not allowed(robots, url):
                            visit = Visit(url, queued[url], robots=True)
                            if url == root:
                                root_visit = visit
                            else:
                                hidden += 1
                            yield visit
                            continue
                        running[pool.submit(self._paced, url, self.known(url), delay)] = (url, queued[url])
                        fetched += 1
                    if not running:
                        break
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        url, depth = running.pop(future)
                        try:
                            visit = Visit(url, depth, page=future.result())
                        except CitewellError as error:
                            visit = Visit(url, depth, error=error)
                        if url == root:
                            root_visit = visit
                        elif visit.error is not None and not said_gone(visit.error):  # a redirect out of scope too
                            failed.append(visit)
                        yield visit
                        if visit.page is None:
                            continue
                        links = self._links(visit.page)
                        if links is None:
                            unread += 1
                            continue
                        new = [link for link in links if link not in queued]
                        if depth >= self.depth:
                            cut += bool(new)
                            continue
                        for link in new:
                            queued[link] = depth + 1
                            frontier.append(link)
            finally:
                for future in running:
                    future.cancel()
        self.unfinished = _why_unfinished(root_visit, failed, hidden, cut, unread, len(frontier), self)

    def _crawl_delay(self, robots: urllib.robotparser.RobotFileParser) -> float:
        asked = robots.crawl_delay(USER_AGENT)
        if asked is None:
            return 0.0
        try:
            wanted = float(asked)
        except (OverflowError, ValueError):
            wanted = math.inf
        if not 0 <= wanted <= self.max_crawl_delay:
            self.notes.append(f"robots.txt asks for a Crawl-delay of {asked} seconds; "
                              f"{self.max_crawl_delay:g} seconds, the most a crawl waits, were kept")
            return self.max_crawl_delay if wanted > 0 else 0.0
        return wanted

    def _paced(self, url: str, known: Fetched | None, delay: float) -> Page:
        with self._pace:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + delay
        if start > now:
            time.sleep(start - now)
        return self.fetcher.fetch(url, known, within=self.scope)

    def _links(self, page: Page) -> list[str] | None:
        """The page's in-scope links; None when they cannot be known (a 304 whose stored copy is gone)."""
        data = page.data if page.status == "fetched" else self.stored(page.url)
        if data is None:
            return None
        if not data:
            return []
        from citewell.parsers.sniff import Kind, detect

        try:
            if detect(data, filename_of(page.final_url)) is not Kind.HTML:
                return []
        except CitewellError:
            return []
        from citewell.parsers.html import html_tree  # XHTML too, whatever its Content-Type said

        tree = html_tree(data)
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


def _why_unfinished(root: Visit | None, failed: list[Visit], hidden: int, cut: int, unread: int, left: int,
                    crawl: Crawl) -> list[str]:
    why = []
    if root is None or root.page is None:
        answer = ("robots.txt disallows it" if root is None or root.robots
                  else root.error.message if root.error is not None else "it was not fetched")
        why.append(f"its first page was not read ({answer}), so no link of the site was followed")
    if failed:
        shown = failed[0].error.message if failed[0].error is not None else failed[0].url
        why.append(f"{_pages(len(failed))} could not be fetched or left the crawl's scope, so their links are unknown "
                   f"(first: {shown})")
    if hidden:
        why.append(f"robots.txt kept {_pages(hidden)} from being read, "
                   "so their links are unknown")
    if unread:
        why.append(f"{_pages(unread)} answered 304 and their stored copy is missing, so their links are unknown")
    if left:
        why.append(f"it stopped at its limit of {crawl.max_pages} pages with {left} links not followed")
    if cut:
        why.append(f"{_pages(cut)} at its depth limit of {crawl.depth} link to pages it did not follow")
    return why


def _pages(count: int) -> str:
    return f"{count} page{'' if count == 1 else 's'}"


__all__ = ["Crawl", "FetchFailed", "Visit"]
