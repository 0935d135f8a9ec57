"""``citewell ingest``: add or update documents from files, folders and web pages."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citewell.cli.common import EXIT_FAILED, EXIT_OK, TENANT_HELP, AddCommand, _roles, _tenant
from citewell.errors import InvalidInput, readable
from citewell.models.documents import Descriptive, descriptive

if TYPE_CHECKING:
    from datetime import datetime

    from citewell.ingest.runner import IngestOutcome
    from citewell.services import Services


def _allowed_roles(value: str) -> frozenset[str]:
    """The roles a document is readable by: at least one, or nobody could ever read it (a usage
    error before any file is read, not one failure per file)."""
    roles = _roles(value)
    if not roles:
        raise argparse.ArgumentTypeError("a document needs at least one allowed role, e.g. --allow-roles staff")
    return roles


def _moment(value: str) -> datetime:
    """A day (its start, UTC) or an ISO 8601 time; without a zone, UTC."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a date or time is written YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM], not {value!r}") from None


def _count(flag: str, least: int) -> Callable[[str], int]:
    def check(value: str) -> int:
        if not value.strip().isascii() or not value.strip().isdigit() or int(value) < least:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number from {least}, not {value!r}")
        return int(value)

    return check


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 60:
        raise argparse.ArgumentTypeError(f"--delay takes a number of seconds from 0 to 60, not {value!r}")
    return seconds


def _allowed(value: str) -> str:
    from citewell.settings import allow_entry

    try:
        return allow_entry(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_ingest(command: AddCommand) -> None:
    """The arguments of ``citewell ingest``."""
    p = command("ingest", help="add or update documents")
    p.add_argument("paths", nargs="+", metavar="PATH_OR_URL",
                   help="files and folders to ingest (folders are walked, hidden files skipped), "
                        "or http(s) URLs of web pages")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--allow-roles", required=True, type=_allowed_roles, help="comma-separated roles that may read them")
    p.add_argument("--doc-id", help="document id (one file only; default: the path relative to the folder)")
    p.add_argument("--title", help="title (one file only; default: from the document)")
    p.add_argument("--locale", default="en", help="language of the documents, recorded on them (default: en)")
    p.add_argument("--source", help="where it came from (one file only; default: the file's path)")
    p.add_argument("--tag", action="append", metavar="TAG", help="a free tag recorded on the documents (repeatable)")
    p.add_argument("--trust-tier", choices=["primary", "secondary", "tertiary"],
                   help="how close the source is to what it describes: the rule itself, a report on it, a summary")
    p.add_argument("--authority", action="store_true", help="an authoritative source: its hits weigh 1.1 times in fusion")
    p.add_argument("--effective-from", type=_moment, metavar="DATE",
                   help="not served before this day or time (YYYY-MM-DD or ISO 8601; UTC without a zone)")
    p.add_argument("--effective-until", type=_moment, metavar="DATE", help="not served from this day or time on")
    p.add_argument("--replace", action="store_true",
                   help="replace a document of the same id that came from another source or with other roles "
                        "(without it, such a file fails with id_taken and the document stays as it is)")
    p.add_argument("--prune", action="store_true",
                   help="delete the tenant's documents that came from a folder given here and are no longer in it, "
                        "and pages that answer 404 or 410 or left a crawled site "
                        "(without it, they are listed as gone and still served)")
    p.add_argument("--crawl", action="store_true",
                   help="follow a URL's links within its site: the same scheme, host and path prefix")
    p.add_argument("--depth", type=_count("--depth", 0), default=5,
                   help="with --crawl: how many links from the URL to follow (default: 5; 0 is the page alone)")
    p.add_argument("--max-pages", type=_count("--max-pages", 1), default=500,
                   help="with --crawl: at most this many pages fetched (default: 500)")
    p.add_argument("--concurrency", type=_count("--concurrency", 1), default=4,
                   help="with --crawl: at most this many requests in flight (default: 4)")
    p.add_argument("--delay", type=_seconds, default=0.1,
                   help="with --crawl: seconds between request starts, or robots.txt's Crawl-delay if longer (default: 0.1)")
    p.add_argument("--allow-host", action="append", type=_allowed, default=[], metavar="HOST_OR_CIDR",
                   help="let fetches reach this host name or address range although it is loopback, private or "
                        "link-local (refused otherwise); repeatable, added to $CITEWELL_FETCH_ALLOW")


def cmd_ingest(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deployments import open_local
    from citewell.fetch.urls import looks_like_url
    from citewell.ingest.runner import ingest
    from citewell.ingest.stages import IngestRequest
    from citewell.ingest.walk import read_failure, shown, walk
    from citewell.progress import IngestDisplay

    urls = [p for p in args.paths if looks_like_url(p)]
    args.paths = [Path(p) for p in args.paths if not looks_like_url(p)]
    if args.crawl and not urls:
        raise InvalidInput("--crawl follows the links of a URL: name one (https://...)")
    found = walk(args.paths)
    # Smallest first: a folder's small files are searchable in seconds, not after a large one is parsed.
    files = sorted(((f.path, f.document_id) for f in found if f.outcome is None), key=lambda item: _size(item[0]))
    missing = [f.outcome for f in found if f.outcome is not None]  # not found, or left out with the reason
    if urls and (args.doc_id or args.source):
        raise InvalidInput("a web page's id and source are its URL: --doc-id and --source are for one file")
    if len(files) != 1 and (args.doc_id or args.source):
        raise InvalidInput("--doc-id, --title and --source need exactly one file")
    if len(files) + len(urls) != 1 and args.title or (args.title and args.crawl):
        raise InvalidInput("--title needs exactly one file or one page (not a crawl)")
    ids = [args.doc_id or doc_id for _, doc_id in files]
    described = _described(args)
    services = open_local(args.home)
    unreadable: list[IngestOutcome] = []

    def requests() -> Iterator[IngestRequest]:
        for (file, _), doc_id in zip(files, ids):
            try:
                data = file.read_bytes()
            except OSError as error:  # gone since the walk, or not readable (/proc, permissions): that file fails
                unreadable.append(read_failure(doc_id, file, error))
                continue
            yield IngestRequest(
                document_id=doc_id, tenant=args.tenant, allowed_roles=args.allow_roles, data=data,
                filename=shown(file.name), title=args.title, source=args.source or file.resolve().as_uri(),
                replace=args.replace, **descriptive(described),
            )
        if web is not None:
            yield from web.requests()

    web = _web_run(services, args, urls, described) if urls else None
    try:
        with IngestDisplay(len(files) if not urls else None, enabled=not args.json) as display:
            outcomes = missing + ingest(services, requests(), progress=display)
    finally:
        if web is not None:
            web.fetcher.close()
    gone, unchecked = _gone(services, args, {f.document_id for f in found})
    outcomes += unreadable + (web.outcomes if web is not None else []) + unchecked
    payload: dict[str, Any] = {"documents": [o.model_dump(mode="json") for o in outcomes]}
    gone += web.gone if web is not None else []
    if gone:
        payload["gone"] = gone
    if web is not None and web.crawls:
        payload["crawls"] = [c.model_dump(mode="json") for c in web.crawls]
    failed = any(o.status in ("failed", "superseded") or o.pending or o.vectors_pending for o in outcomes)
    return payload, EXIT_FAILED if failed else EXIT_OK


def _described(args: argparse.Namespace) -> Descriptive:
    from pydantic import ValidationError

    try:
        return Descriptive(locale=args.locale, tags=frozenset(args.tag or ()), trust_tier=args.trust_tier,
                           authority=args.authority, effective_from=args.effective_from, effective_until=args.effective_until)
    except ValidationError as error:
        raise InvalidInput(readable(error)) from None


def _web_run(services: Services, args: argparse.Namespace, urls: list[str], described: Descriptive) -> Any:
    """The pages' requests and outcomes (:mod:`citewell.ingest.web`), fetched through the guard
    with the operator's allow-list: the flags and ``CITEWELL_FETCH_ALLOW``."""
    from citewell.fetch.client import Fetcher
    from citewell.ingest.web import WebOptions, WebRun
    from citewell.settings import settings

    config = settings()
    fetcher = Fetcher.configured(config, services.max_bytes, tuple(args.allow_host))
    options = WebOptions(tenant=args.tenant, allowed_roles=args.allow_roles, title=args.title, described=described,
                         replace=args.replace, crawl=args.crawl, depth=args.depth, max_pages=args.max_pages,
                         concurrency=args.concurrency, delay=args.delay)
    return WebRun(services, fetcher, urls, options, prune=args.prune)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # unreadable: it fails when read, in its turn
        return 0


def _gone(services: Services, args: argparse.Namespace, seen: set[str]) -> tuple[list[dict[str, Any]], list[IngestOutcome]]:
    """The tenant's documents ingested from a folder given now whose file is no longer there (it
    was renamed, moved or removed): still served unless ``--prune`` deletes them. A file that
    cannot be checked (a folder on its path that may not be entered) is not gone: it is kept,
    never pruned, and returned as a failed item saying why."""
    from citewell.deletion import delete_document
    from citewell.errors import NotFound
    from citewell.ingest.walk import check_failure

    folders = [path.resolve().as_uri() + "/" for path in args.paths if os.path.isdir(path)]
    if not folders:
        return [], []
    gone, unchecked = [], []
    for document in services.documents.list_documents(args.tenant):
        if document.document_id in seen or not any(document.source.startswith(folder) for folder in folders):
            continue
        try:
            if _still_there(document.source):  # ingested on its own ("ingest teamA/README.md"): its file is here
                continue
        except OSError as error:
            unchecked.append(check_failure(document.document_id, _source_path(document.source) or document.source, error))
            continue
        if args.prune:
            try:
                delete_document(services, args.tenant, document.document_id)
            except NotFound:  # another process deleted it first
                pass
        gone.append({"document_id": document.document_id, "source": document.source, "deleted": bool(args.prune)})
    return gone, unchecked


def _source_path(source: str) -> Path | None:
    """The file a ``file:`` source names; None for any other source."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(source)
    return Path(unquote(parts.path, errors="surrogateescape")) if parts.scheme == "file" else None


def _still_there(source: str) -> bool:
    """Whether the file a ``file:`` source names is still a file (``OSError`` when that cannot be known)."""
    from citewell.ingest.walk import still_a_file

    path = _source_path(source)
    return path is not None and still_a_file(path)
