"""A crawl of a site served on loopback, then a re-crawl with nothing changed.

``python -m benchmarks.crawl --home DIR [--pages 200] [--concurrency 4] [--delay 0]``

The site (:mod:`benchmarks.loopback_site`) is an index, ten sections and their pages, each an
HTML page of a heading, a sentence and links, answering with an ETag and Last-Modified. The
crawl runs as ``citewell ingest URL --crawl`` does (:class:`citewell.ingest.web.WebRun` into the
runner) into an empty home, the model loaded before the clock starts. The report gives pages
per second of each crawl, the stage seconds of the first, and of the re-crawl the requests by
kind (conditional or not) and what it wrote: the records' versions, uploads and objects before
and after, which must not move.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.homes import fresh_home
from benchmarks.loopback_site import Site, generated, serving
from citewell.fetch.client import Fetcher
from citewell.fetch.guard import Guard
from citewell.ingest.runner import StageClock, ingest
from citewell.ingest.web import WebOptions, WebRun
from citewell.services import Services

TENANT = "bench"


def _writes(services: Services) -> dict[str, int]:
    documents = services.documents.list_documents(TENANT)
    return {
        "record_versions": sum(d.version for d in documents),
        "uploads": sum(len(services.uploads.list_uploads(TENANT, d.document_id)) for d in documents),
        "objects": sum(1 for _ in services.objects.list("")),
    }


def _crawl(services: Services, site: Site, options: WebOptions) -> dict[str, object]:
    site.requests.clear()
    clock = StageClock()
    started = time.perf_counter()
    with Fetcher(Guard.of(["127.0.0.1/32"]), max_bytes=services.max_bytes) as fetcher:
        run = WebRun(services, fetcher, [f"{site.url}/docs/"], options)
        outcomes = ingest(services, run.requests(), clock=clock) + run.outcomes
    seconds = time.perf_counter() - started
    pages = [headers for path, headers in site.requests if path != "/robots.txt"]
    statuses: dict[str, int] = {}
    for outcome in outcomes:
        statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
    return {
        "seconds": round(seconds, 3), "pages": len(outcomes), "pages_per_second": round(len(outcomes) / seconds, 1),
        "statuses": statuses, "requests": len(pages),
        "conditional_requests": sum("if-none-match" in h or "if-modified-since" in h for h in pages),
        "stages": {name: round(s, 3) for name, s in clock.seconds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    services = fresh_home(args.home)
    services.embedder.embed(["the model loads before the clock starts"])
    options = WebOptions(tenant=TENANT, allowed_roles=frozenset({"staff"}), crawl=True, depth=5,
                         max_pages=args.pages * 2, concurrency=args.concurrency, delay=args.delay)
    with serving(Site(pages=generated(args.pages))) as site:
        first = _crawl(services, site, options)
        before = _writes(services)
        again = _crawl(services, site, options)
        after = _writes(services)
    print(json.dumps({
        "site_pages": args.pages, "concurrency": args.concurrency, "delay": args.delay,
        "first": first, "recrawl": {**again, "writes_before": before, "writes_after": after,
                                    "wrote_nothing": before == after},
    }))


if __name__ == "__main__":
    main()
