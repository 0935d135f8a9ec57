"""Web pages as ingest requests: a page fetched is a file read, then the same stages.

For each URL (one page, or a crawl's pages) the stored record decides what is sent and what
is written. A served page sends its validators (``If-None-Match``, ``If-Modified-Since``); a
304, or the same bytes as those served (a server without validators), under the same roles,
title and locale, is ``unchanged`` and writes nothing. A 304 under other roles re-ingests the
stored bytes. A page is *gone* only when the site itself says so: it answers 404 or 410, or a
crawl that read every link set within its limits (:attr:`Crawl.complete
<citewell.fetch.crawl.Crawl.complete>`) no longer reaches it. A crawl that could not read its
robots.txt or its first page, met a page it could not fetch, or was cut off by a limit calls
nothing gone for being unreached, and its :class:`CrawlReport` says why. A gone page is listed,
still served, and deleted with ``--prune``, as a file no longer in its folder. A link that
redirects out of the crawl's scope is ``skipped`` (``out_of_scope``). Any other failure (``url_refused``,
``fetch_failed``, ``certificate_refused``, ``too_large``, ``http_status``) is recorded as the page's failure through the
state machine (registered, then failed), the served revision staying served; the rest of the
crawl goes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel

from citewell.errors import CitewellError, NotFound, OutOfScope
from citewell.fetch.client import Fetcher, Page, said_gone
from citewell.fetch.crawl import MAX_CRAWL_DELAY, Crawl, Visit
from citewell.fetch.robots import fetch_page
from citewell.fetch.urls import Scope, filename_of, normalise
from citewell.ingest.registration import register_upload
from citewell.ingest.runner import IngestOutcome, OutcomeStatus
from citewell.ingest.stages import IngestRequest, record_failure
from citewell.interrupts import deferred
from citewell.keys import raw_key
from citewell.models.documents import Descriptive, Document, DocumentStatus, ErrorInfo, Fetched, descriptive
from citewell.services import Services


@dataclass(frozen=True)
class WebOptions:
    """The operator's flags for the pages: who may read them, and the crawl's limits."""

    tenant: str
    allowed_roles: frozenset[str]
    title: str | None = None
    described: Descriptive = field(default_factory=Descriptive)  # locale, tags, authority, ...: the operator's word
    replace: bool = True
    crawl: bool = False
    depth: int = 5
    max_pages: int = 500
    concurrency: int = 4
    delay: float = 0.1
    max_crawl_delay: float = MAX_CRAWL_DELAY  # the longest Crawl-delay of robots.txt honoured


class CrawlReport(BaseModel):
    """What one crawl could vouch for: ``complete`` when it read every link set within its limits, so
    that a stored page it did not reach has left the site; else ``unfinished`` says why none is
    called gone for that. ``notes``: what it changed of what the site asked (a Crawl-delay capped)."""

    root: str
    complete: bool
    unfinished: list[str]
    notes: list[str]


@dataclass
class WebRun:
    """Feeds the runner with the pages to ingest; keeps the outcomes settled without it
    (``unchanged``, failures, links left out) and the pages gone."""

    services: Services
    fetcher: Fetcher
    urls: list[str]
    options: WebOptions
    outcomes: list[IngestOutcome] = field(default_factory=list)
    gone: list[dict[str, object]] = field(default_factory=list)
    crawls: list[CrawlReport] = field(default_factory=list)
    requests_sent: int = 0
    prune: bool = False

    def requests(self) -> Iterator[IngestRequest]:
        for url in dict.fromkeys(self.urls):
            if self.options.crawl:
                yield from self._crawl(url)
            else:
                yield from self._one(url)

    def _one(self, url: str) -> Iterator[IngestRequest]:
        try:
            page_id = normalise(url)
        except CitewellError as error:
            self.outcomes.append(_outcome(url, "failed", error))
            return
        try:
            self.requests_sent += 1
            page = fetch_page(self.fetcher, page_id, self._known(page_id))
        except CitewellError as error:
            yield from self._failed(Visit(page_id, 0, error=error), named=True)
            return
        yield from self._fetched(page)

    def _crawl(self, root: str) -> Iterator[IngestRequest]:
        try:
            crawl = Crawl(self.fetcher, root, depth=self.options.depth, max_pages=self.options.max_pages,
                          concurrency=self.options.concurrency, delay=self.options.delay,
                          max_crawl_delay=self.options.max_crawl_delay, known=self._known,
                          stored=self._stored)
        except CitewellError as error:  # not a URL that is fetched
            self.outcomes.append(_outcome(root, "failed", error))
            return
        seen: set[str] = set()
        try:
            for visit in crawl:
                self.requests_sent += not visit.robots
                if not said_gone(visit.error):  # only the site's 404 or 410 leaves a page it linked unseen
                    seen.add(visit.url)
                if visit.robots:
                    self.outcomes.append(_outcome(visit.url, "skipped", None, "robots",
                                                  "robots.txt asks crawlers not to fetch this page"))
                elif visit.page is not None:
                    yield from self._fetched(visit.page)
                elif isinstance(visit.error, OutOfScope) and visit.depth > 0:  # a link that redirects off the site
                    self.outcomes.append(_outcome(visit.url, "skipped", visit.error))
                else:
                    yield from self._failed(visit, named=visit.depth == 0)
        except CitewellError as error:  # robots.txt unreadable, or refusing every crawler
            self.outcomes.append(_outcome(root, "failed", error))
        self.crawls.append(CrawlReport(root=normalise(root),
                                       complete=crawl.complete, unfinished=crawl.unfinished, notes=crawl.notes))
        if crawl.complete:
            self._left(crawl.scope, seen)

    def _known(self, page_id: str) -> Fetched | None:
        document = self.services.documents.get_document(self.options.tenant, page_id)
        return document.fetched if document is not None and document.active_revision else None

    def _stored(self, page_id: str) -> bytes | None:
        document = self.services.documents.get_document(self.options.tenant, page_id)
        if document is None or document.active_upload is None:
            return None
        try:
            return self.services.objects.get(raw_key(document.tenant, document.document_id, document.active_upload))
        except NotFound:
            return None

    def _fetched(self, page: Page) -> Iterator[IngestRequest]:
        document = self.services.documents.get_document(self.options.tenant, page.url)
        data = page.data
        if document is not None and self._same(document, page):
            self.outcomes.append(IngestOutcome(document_id=page.url, revision=document.active_revision,
                                               status="unchanged", chunks=document.chunk_count))
            return
        if page.status == "not_modified":  # other roles, title or state: the stored bytes go through the stages again
            data = self._stored(page.url) or b""
            if not data:
                page = self.fetcher.fetch(page.url)
                data = page.data
        yield IngestRequest(
            document_id=page.url, tenant=self.options.tenant, allowed_roles=self.options.allowed_roles, data=data,
            filename=filename_of(page.final_url), title=self.options.title, source=page.url,
            **descriptive(self.options.described), replace=self.options.replace, fetched=page.fetched,
        )

    def _same(self, document: Document, page: Page) -> bool:
        """Served, published, with these access fields, and the same bytes (a 304 or the same hash)."""
        o = self.options
        if document.status is not DocumentStatus.PUBLISHED or not document.active_revision or document.fetched is None:
            return False
        if document.allowed_roles != o.allowed_roles or descriptive(document) != descriptive(o.described):
            return False
        if o.title and document.title != o.title:
            return False
        return page.status == "not_modified" or (page.fetched is not None and page.fetched.sha256 == document.fetched.sha256)

    def _failed(self, visit: Visit, named: bool) -> Iterator[IngestRequest]:
        error = visit.error
        assert error is not None
        document = self.services.documents.get_document(self.options.tenant, visit.url)
        if said_gone(error):
            if document is not None:
                self._gone(document, f"answers {error.status}")
            else:  # nothing to be gone: a URL named that is not there fails; a broken link is left out
                self.outcomes.append(_outcome(visit.url, "failed" if named else "skipped", error))
            return
        with deferred():  # the intent and its failure, or neither
            try:
                upload = register_upload(self.services, document_id=visit.url, tenant=self.options.tenant,
                                         allowed_roles=self.options.allowed_roles, title=self.options.title,
                                         source=visit.url, filename=filename_of(visit.url), described=self.options.described,
                                         replace=self.options.replace)
            except CitewellError as refused:  # id_taken, or being deleted: the record stays as it is
                self.outcomes.append(_outcome(visit.url, "failed", refused))
                return
            info = record_failure(self.services, upload, error)
        self.outcomes.append(IngestOutcome(document_id=visit.url, revision=None, status="failed", chunks=0, error=info))
        return
        yield  # a generator: the failure is settled here, not by the runner

    def _left(self, scope: Scope, seen: set[str]) -> None:
        for document in self.services.documents.list_documents(self.options.tenant):
            if scope.holds(document.source) and document.source not in seen and document.document_id == document.source:
                self._gone(document, "is no longer linked from the site within the crawl's depth")

    def _gone(self, document: Document, reason: str) -> None:
        from citewell.deletion import delete_document

        pruned = False
        if self.prune:
            try:
                delete_document(self.services, document.tenant, document.document_id)
                pruned = True
            except NotFound:  # another process deleted it first
                pruned = True
        self.gone.append({"document_id": document.document_id, "source": document.source, "reason": reason,
                          "deleted": pruned})


def _outcome(url: str, status: OutcomeStatus, error: CitewellError | None, code: str | None = None,
             message: str | None = None) -> IngestOutcome:
    info = ErrorInfo(code=code or (error.code if error else "error"), message=message or (error.message if error else ""))
    return IngestOutcome(document_id=url, revision=None, status=status, chunks=0, error=info)
