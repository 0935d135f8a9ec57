"""robots.txt, read through the same guarded fetcher as the pages it rules, for a crawl and for
one page alike.

A missing robots.txt (404, another 4xx) allows everything; one that answers 401 or 403 allows
nothing, and one that answers a server error or nothing at all says nothing, so no page is
fetched (RFC 9309 asks a crawler to assume the whole site disallowed then). Rules are read with
the standard library's parser for citewell's user agent.
"""

from __future__ import annotations

import urllib.robotparser

from citewell.errors import CitewellError, FetchFailed, HttpStatus, RobotsDisallowed, UrlRefused
from citewell.fetch.client import USER_AGENT, Fetcher, Page
from citewell.fetch.urls import normalise
from citewell.models.documents import Fetched


def read_robots(fetcher: Fetcher, url: str) -> urllib.robotparser.RobotFileParser:
    """The rules of ``url``'s site; :class:`FetchFailed` when robots.txt says nothing (a server
    error, no answer) or allows no crawler (401, 403)."""
    parser = urllib.robotparser.RobotFileParser()
    page_id = normalise(url)  # UrlRefused for what is not a URL citewell fetches; its path starts with "/"
    origin = page_id[: page_id.index("/", page_id.index("//") + 2)]
    try:
        page = fetcher.fetch(f"{origin}/robots.txt")
        parser.parse(page.data.decode("utf-8", "replace").splitlines())
    except HttpStatus as error:
        if error.status in (401, 403):
            raise FetchFailed(f"{origin}/robots.txt answered {error.status}: the site allows no crawler, "
                              "so no page was fetched") from None
        if error.status >= 500:
            raise FetchFailed(f"{origin}/robots.txt answered {error.status}: until it can be read no page is "
                              "fetched, and none is called gone") from None
        parser.allow_all = True  # type: ignore[attr-defined]  # as read() sets it; typeshed omits the attribute
    except UrlRefused:
        raise
    except CitewellError as error:  # no answer, or too large: nothing is known to be allowed
        raise FetchFailed(f"{origin}/robots.txt could not be read ({error.message}): no page was fetched, "
                          "and none is called gone") from None
    return parser


def allowed(robots: urllib.robotparser.RobotFileParser, url: str) -> bool:
    return robots.can_fetch(USER_AGENT, normalise(url))


def fetch_page(fetcher: Fetcher, url: str, known: Fetched | None = None) -> Page:
    """One page named by its URL, as its site's robots.txt allows: :class:`RobotsDisallowed` when
    it does not, and robots.txt's own failures as :func:`read_robots` says, the page not fetched."""
    if not allowed(read_robots(fetcher, url), url):
        raise RobotsDisallowed(f"robots.txt asks crawlers not to fetch {url}: it was not fetched")
    return fetcher.fetch(url, known)
