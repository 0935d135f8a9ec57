"""A crawl's politeness on a real loopback site: never more requests in flight than its
concurrency, request starts at least its delay apart, and robots.txt's Crawl-delay when longer."""

from __future__ import annotations

import threading
import time

from benchmarks.loopback_site import Site, page, serving
from citewell.fetch.client import Fetcher
from citewell.fetch.crawl import Crawl
from citewell.fetch.guard import Guard

LEAVES = [f"p{n}.html" for n in range(8)]


class Watch:
    """Each request's start time and the most requests the site held at once."""

    def __init__(self, site: Site, pause: float) -> None:
        self.starts: list[float] = []
        self.most = self.now = 0
        self._lock = threading.Lock()
        for name in LEAVES:
            site.routes[f"/docs/{name}"] = self._slow(page(name, f"Leaf {name}."), pause)

    def _slow(self, body: bytes, pause: float):
        def answer(handler) -> None:
            with self._lock:
                self.starts.append(time.monotonic())
                self.now += 1
                self.most = max(self.most, self.now)
            time.sleep(pause)
            with self._lock:
                self.now -= 1
            handler.send_response(200)
            handler.send_header("Content-Type", "text/html")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        return answer

    def gaps(self) -> list[float]:
        ordered = sorted(self.starts)
        return [b - a for a, b in zip(ordered, ordered[1:])]


def crawl(site: Site, **limits) -> list[str]:
    with Fetcher(Guard.of(["127.0.0.1/32"])) as fetcher:
        return [visit.url for visit in Crawl(fetcher, f"{site.url}/docs/", **limits) if visit.page is not None]


def test_no_more_requests_in_flight_than_the_concurrency():
    with serving(Site(pages={"/docs/": page("Index", "All leaves.", LEAVES)})) as site:
        watch = Watch(site, pause=0.3)
        fetched = crawl(site, concurrency=2, delay=0)
    assert len(fetched) == 9 and len(watch.starts) == 8
    assert watch.most == 2  # two at once, never three


def test_request_starts_keep_the_delay_and_a_longer_crawl_delay_from_robots():
    with serving(Site(pages={"/docs/": page("Index", "All leaves.", LEAVES[:4])})) as site:
        watch = Watch(site, pause=0)
        crawl(site, concurrency=4, delay=0.25)
        assert len(watch.starts) == 4 and min(watch.gaps()) >= 0.24, watch.gaps()
    robots = {"/docs/": page("Index", "All leaves.", LEAVES[:3]), "/robots.txt": b"User-agent: *\nCrawl-delay: 1\n"}
    with serving(Site(pages=robots)) as site:
        watch = Watch(site, pause=0)
        crawl(site, concurrency=4, delay=0)
        assert len(watch.starts) == 3 and min(watch.gaps()) >= 0.99, watch.gaps()
