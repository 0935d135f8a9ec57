"""The ``citewell`` command on the embedded stores; ``citewell --help`` lists every subcommand.

Tenant and roles come from the operator's flags: the only trusted identity on one machine.
``--json`` prints machine-readable output on stdout; progress and errors go to stderr.
``login`` is the one command for AWS: a Cognito ID token for the deployed API.
``--home`` and ``--json`` may come before or after the command; given in both places, the value
after the command wins.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from citewell import __version__
from citewell.errors import CitewellError, InvalidInput, readable
from citewell.interrupts import interrupt_behind
from citewell.models import (
    Descriptive,
    Identity,
    Outcome,
    descriptive,
    validate_document_id,
    validate_name,
    validate_question,
    validate_tenant,
)

if TYPE_CHECKING:
    from datetime import date, datetime

    from citewell.filters import SearchFilter
    from citewell.ingest.runner import IngestOutcome
    from citewell.services import Services

DESCRIPTION = (
    "A permission-aware knowledge base that answers with citations, kept in a folder on this machine. "
    "Tenant and roles come from the flags, the operator's trusted identity."
)
TENANT_HELP = "the tenant (organisation) the documents belong to: letters, digits, '_', '.' or '-'"
ROLES_HELP = 'the caller\'s roles, comma-separated; "" means none, which finds nothing'
EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
_AWS_MODULES = {"boto3", "botocore", "opensearchpy", "aws_lambda_powertools"}  # the `aws` extra (a Bedrock generator)


def _roles(value: str) -> frozenset[str]:
    roles = frozenset(r.strip() for r in value.split(",") if r.strip())
    try:
        for role in roles:
            validate_name(role, "role")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return roles


def _allowed_roles(value: str) -> frozenset[str]:
    """The roles a document is readable by: at least one, or nobody could ever read it (a usage
    error before any file is read, not one failure per file)."""
    roles = _roles(value)
    if not roles:
        raise argparse.ArgumentTypeError("a document needs at least one allowed role, e.g. --allow-roles staff")
    return roles


def _argument(validate: Callable[[str], str]) -> Callable[[str], str]:
    """An argparse type from one of the model's validators: the same grammar, a usage error's message."""
    def check(value: str) -> str:
        try:
            return validate(value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return check


_tenant = _argument(validate_tenant)
_document_id = _argument(validate_document_id)


def _date(value: str) -> date:
    from datetime import date

    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a date is written YYYY-MM-DD, not {value!r}") from None


def _moment(value: str) -> datetime:
    """A day (its start, UTC) or an ISO 8601 time; without a zone, UTC."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a date or time is written YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM], not {value!r}") from None


def query_filter(args: argparse.Namespace) -> SearchFilter | None:
    """The search and ask flags that narrow what is read, as one filter (None when none was given)."""
    from pydantic import ValidationError

    from citewell.filters import SearchFilter

    try:
        found = SearchFilter(document_ids=frozenset(args.doc or ()), prefix=args.prefix, source=args.source,
                             tags=frozenset(args.tag or ()), locale=args.locale, effective_on=args.effective_on)
    except ValidationError as error:
        raise InvalidInput(readable(error)) from None
    return None if found.is_empty else found


def _filter_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("filters", "narrow what is read (inside both lanes, before ranking); each given must hold")
    group.add_argument("--doc", action="append", type=_document_id, metavar="ID", help="only this document (repeatable)")
    group.add_argument("--prefix", metavar="FOLDER/", help="only documents whose id is under this folder, e.g. policies/")
    group.add_argument("--source", help="only documents from exactly this source")
    group.add_argument("--tag", action="append", metavar="TAG", help="only documents carrying this tag (repeatable: all of them)")
    group.add_argument("--locale", help="only documents in this language (en also takes en-GB)")
    group.add_argument("--effective-on", type=_date, metavar="DATE",
                       help="only documents in effect on this day (YYYY-MM-DD, UTC)")


def _k(value: str) -> int:
    if not value.strip().isascii() or not value.strip().isdigit() or not 1 <= int(value) <= 100:
        raise argparse.ArgumentTypeError(f"--k takes a whole number from 1 to 100, not {value!r}")
    return int(value)


def _port(value: str) -> int:
    if not value.strip().isdigit() or not 0 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"--port takes a port number from 0 to 65535, not {value!r}")
    return int(value)


def _ttl(value: str) -> int:
    from citewell.serve.tokens import parse_ttl

    try:
        return parse_ttl(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _subject(value: str) -> str:
    subject = value.strip()
    if not subject or len(subject) > 256 or not subject.isprintable():
        raise argparse.ArgumentTypeError("a subject is 1 to 256 printable characters")
    return subject


LANE_NAMES = ("bm25", "vector", "hybrid")  # citewell.search.LANE_CHOICES, named here so --help imports no engine
LANES_HELP = "comma-separated retrieval lanes: bm25 (words), vector (meaning), hybrid (both, fused)"


def _lanes(value: str) -> tuple[str, ...]:
    lanes = tuple(dict.fromkeys(lane.strip() for lane in value.split(",") if lane.strip()))
    if not lanes or set(lanes) - set(LANE_NAMES):
        raise argparse.ArgumentTypeError(f"--lanes takes any of {', '.join(LANE_NAMES)}, not {value!r}")
    return lanes


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


def _home(value: str) -> Path:
    if not value.strip():
        raise argparse.ArgumentTypeError("--home is empty: name the home folder, or leave --home out for the default")
    return Path(value)


def _conversation(value: str) -> str:
    from citewell.models import validate_token

    try:
        return validate_token(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--conversation takes the conversation id an ask printed (32 hex digits), not {value!r}") from None


def _since(value: str) -> datetime:
    try:
        found = datetime.fromisoformat(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--since takes an ISO date or time such as 2026-01-31 or 2026-01-31T09:00, not {value!r}") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _question(value: str) -> str:
    try:
        return validate_question(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


ANYWHERE_DEFAULTS = {"home": None, "json": False}  # the options taken before or after the command, when given nowhere


def _parser(json_errors: bool = False) -> argparse.ArgumentParser:
    class Parser(argparse.ArgumentParser):
        """Usage errors as the other errors are: one line on stderr, and JSON on stdout with --json."""

        def error(self, message: str) -> NoReturn:
            if json_errors:
                print(json.dumps({"error": {"code": "usage", "message": message}}))
            self.exit(EXIT_ERROR, f"{self.prog}: {message}\n")

    # The options a person may type before or after the command, defined once for both places. Each
    # place sets one only when it is given (SUPPRESS): the command's own parse comes last, so a value
    # after the command wins, and main() starts from ANYWHERE_DEFAULTS for the ones given nowhere.
    common = Parser(add_help=False)
    common.add_argument("--home", type=_home, metavar="DIR", default=argparse.SUPPRESS,
                        help="data folder (default: $CITEWELL_HOME or the per-user data folder); before or after "
                             "the command, and after it wins when both are given")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON on stdout")

    parser = Parser(prog="citewell", description=DESCRIPTION, parents=[common])
    parser.add_argument("--version", action="version", version=f"citewell {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    p = sub.add_parser("ingest", parents=[common], help="add or update documents")
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

    p = sub.add_parser("search", parents=[common], help="hybrid search under an identity")
    p.add_argument("question", type=_question, help="what to look for, in words")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help=ROLES_HELP)
    p.add_argument("--k", type=_k, default=10, help="how many hits, 1 to 100 (default: 10)")
    p.add_argument("--lanes", type=_lanes, default=("hybrid",), help=f"{LANES_HELP} (default: hybrid)")
    _filter_flags(p)

    p = sub.add_parser("ask", parents=[common], help="a cited answer, or an honest refusal")
    p.add_argument("question", type=_question, help="the question, in words")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help=ROLES_HELP)
    p.add_argument("--mixed-locales", action="store_true",
                   help="take evidence in every language (default: only the best passage's language)")
    p.add_argument("--conversation", type=_conversation, metavar="ID",
                   help="follow up in this conversation (the id an earlier ask printed); without it, one starts")
    _filter_flags(p)

    p = sub.add_parser("feedback", parents=[common], help="answers askers marked unhelpful, for an operator to label")
    p.add_argument("--tenant", type=_tenant, help="only this tenant's feedback (default: every tenant's)")
    p.add_argument("--since", type=_since, metavar="WHEN", help="only feedback from then on: an ISO date or time (UTC)")
    p.add_argument("--export", type=Path, metavar="FILE",
                   help="write them as answer-set JSON lines (question, identity, cited documents) to label for eval-answers")

    p = sub.add_parser("eval-answers", parents=[common], help="answer quality on a labelled question set (JSONL)")
    p.add_argument("questions", type=Path, help="JSONL: id, question, tenant, roles, refuse, category, split, "
                   "expected_documents, must_contain, must_not_contain")
    p.add_argument("--split", help="only the questions of this split (default: all)")

    p = sub.add_parser("citations", parents=[common], help="what a recorded answer rested on")
    p.add_argument("answer_id", help="the answer id that ask printed")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles,
                   help="the reader's roles: an answer shows only to a reader who may read every document it cites")

    p = sub.add_parser("delete", parents=[common], help="delete a document and every trace of it")
    p.add_argument("document_id", type=_document_id, help="the document's id, as ingest and docs print it")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)

    p = sub.add_parser("audit", parents=[common], help="check records, artifacts, index and caches agree")
    p.add_argument("--repair", action="store_true", help="fix what can safely be fixed")

    p = sub.add_parser("serve", parents=[common], help="the HTTP API and the web page on this machine")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: this machine only)")
    p.add_argument("--port", type=_port, default=8000, help="the port to listen on (default: 8000)")
    p.add_argument("--demo", action="store_true", help="hand out tokens of the demo's identities at /demo/identities")
    p.add_argument("--grace", type=float, help="seconds uploads in flight may take to finish on SIGTERM "
                   "(default: $CITEWELL_GRACE_SECONDS or 30)")

    p = sub.add_parser("token", parents=[common], help="a bearer token for citewell serve, signed with the home's key")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help='comma-separated roles; "" means none')
    p.add_argument("--ttl", type=_ttl, default="8h", help="lifetime: 90s, 15m, 8h, 7d (at most 30d)")
    p.add_argument("--subject", type=_subject, help="who the token speaks for (a user's name or id): tokens with the "
                   "same subject, tenant and roles share conversations; default: a new subject of its own")

    p = sub.add_parser("login", parents=[common], help="an ID token for citewell on AWS, from its Cognito user pool")
    p.add_argument("--client-id", required=True, help="the user pool's app client: the stack's ClientId output")
    p.add_argument("--username", required=True, help="the user's name in the pool: the email address it was created with")
    p.add_argument("--region", help="the stack's region (default: $AWS_REGION, $AWS_DEFAULT_REGION or the AWS profile's)")
    p.add_argument("--password-stdin", action="store_true",
                   help="read the password from stdin, and on a first sign-in the new password from the next line "
                        "(default: ask on the terminal)")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="write the ID token to FILE, readable by this user only, instead of printing it")

    p = sub.add_parser("read", parents=[common],
                       help="a document's current text, whole or one section, within the evidence budget")
    p.add_argument("document_id", type=_document_id, help="the document's id, as ingest and docs print it")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)
    p.add_argument("--roles", required=True, type=_roles, help=ROLES_HELP)
    p.add_argument("--section", metavar="ID", help="one section: the section_id a search hit or citation carries")

    p = sub.add_parser("docs", parents=[common], help="list a tenant's documents")
    p.add_argument("--tenant", required=True, type=_tenant, help=TENANT_HELP)

    p = sub.add_parser("eval", parents=[common], help="retrieval quality on a BEIR-layout folder")
    p.add_argument("dataset", type=Path, help="a folder with corpus.jsonl[.gz], queries.jsonl and qrels/SPLIT.tsv")
    p.add_argument("--split", default="test", help="which qrels/SPLIT.tsv judges the run (default: test)")
    p.add_argument("--lanes", type=_lanes, default=LANE_NAMES,
                   help=f"{LANES_HELP}; each is scored on its own (default: all three)")
    return parser


def cmd_ingest(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.fetch.urls import looks_like_url
    from citewell.ingest.runner import ingest
    from citewell.ingest.stages import IngestRequest
    from citewell.ingest.walk import read_failure, shown, walk
    from citewell.progress import IngestDisplay
    from citewell.services import open_local

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


def cmd_search(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.search import LANE_CHOICES, search
    from citewell.services import open_local

    lanes = tuple(dict.fromkeys(lane for name in args.lanes for lane in LANE_CHOICES[name]))
    identity = Identity(tenant=args.tenant, roles=args.roles)
    services = open_local(args.home, existing=True)
    result = search(services, identity, args.question, k=args.k, lanes=lanes, filters=query_filter(args))
    payload = result.model_dump(mode="json")
    if not result.hits:
        payload["operator_note"] = operator_note(services, identity)
    return payload, EXIT_OK


def cmd_ask(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.asking import answer_turn
    from citewell.services import open_local

    services = open_local(args.home, existing=True)
    identity = Identity(tenant=args.tenant, roles=args.roles)
    filters = query_filter(args)
    answer = answer_turn(services, identity, args.question, args.conversation, filters=filters,
                         mixed_locales=args.mixed_locales)
    payload = answer.model_dump(mode="json")
    if answer.outcome is Outcome.NOT_FOUND:
        # "nothing is about this" is said of what was read: under filters, only what they let through
        payload["operator_note"] = operator_note(services, identity) or (
            "only the documents the filters let through were read (--doc, --prefix, --source, --tag, --locale, --effective-on)"
            if filters is not None else None)
    return payload, EXIT_OK


def operator_note(services: Services, identity: Identity) -> str | None:
    """Why nothing was found, when the cause is the caller's scope: a tenant with no documents
    (a mistyped ``--tenant``) or roles no document allows. For the operator's CLI only: the API
    never says it, as it would tell a caller what exists beyond what they may read."""
    served = [d for d in services.documents.list_documents(identity.tenant) if d.active_revision]
    if not served:
        tenants = sorted({d.tenant for d in services.documents.all_documents() if d.active_revision})
        known = f"; tenants with documents here: {', '.join(tenants)}" if tenants else "; this home has no documents"
        return f"tenant {identity.tenant!r} has no documents{known}"
    in_use = sorted(set().union(*(d.allowed_roles for d in served)))
    if identity.roles & set(in_use):
        return None
    asked = f"the roles {', '.join(sorted(identity.roles))}" if identity.roles else "a caller without roles"
    return f"no document of tenant {identity.tenant!r} allows {asked}; roles its documents allow: {', '.join(in_use)}"


def cmd_eval_answers(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.answers.config import evidence_budget, generator_from_env
    from citewell.evaluation.answers import asker, evaluate, load_cases
    from citewell.services import open_local

    cases = load_cases(args.questions, args.split)
    services = open_local(args.home, existing=True)
    generator = generator_from_env(services)
    report = evaluate(cases, asker(services, cases, generator, evidence_budget()), generator=generator.name)
    return report.model_dump(mode="json"), EXIT_OK


def cmd_feedback(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.conversations import unhelpful
    from citewell.services import open_local

    found = unhelpful(open_local(args.home, existing=True), args.since, args.tenant)
    items: list[dict[str, Any]] = [{
        "answer_id": record.answer_id, "conversation_id": conversation.conversation_id, "tenant": conversation.tenant,
        "subject": conversation.subject, "roles": conversation.roles, "asked": turn.asked, "question": turn.question,
        "answer": record.answer, "outcome": record.outcome.value, "comment": turn.feedback.comment if turn.feedback else None,
        "at": (turn.feedback.at if turn.feedback else turn.at).isoformat(),
        "citations": [c.model_dump(mode="json") for c in record.citations if not c.deleted],
    } for conversation, turn, record in found]
    payload: dict[str, Any] = {"unhelpful": items}
    if args.export is not None:
        lines = [json.dumps({
            "id": f"feedback-{item['answer_id'][:12]}", "split": "feedback", "category": "feedback",
            "question": item["question"], "tenant": item["tenant"], "roles": item["roles"],
            "expected_documents": sorted({c["document_id"] for c in item["citations"]}),
            "must_contain": [], "must_not_contain": [], "refuse": False,
        }, ensure_ascii=False) for item in items]
        try:
            args.export.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        except OSError as error:
            raise InvalidInput(f"cannot write {args.export}: {error.strerror}") from None
        payload["exported"] = {"file": str(args.export), "questions": len(lines)}
    return payload, EXIT_OK


def cmd_citations(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.answers.service import recorded_citations
    from citewell.services import open_local

    identity = Identity(tenant=args.tenant, roles=args.roles)
    record = recorded_citations(open_local(args.home, existing=True), identity, args.answer_id)
    return record.model_dump(mode="json"), EXIT_OK


def cmd_delete(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.deletion import delete_document
    from citewell.services import open_local

    report = delete_document(open_local(args.home, existing=True), args.tenant, args.document_id)
    for line in report.pending:
        print(f"citewell: pending: {line}", file=sys.stderr)
    return report.model_dump(), EXIT_FAILED if report.pending else EXIT_OK


def cmd_audit(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.audit import audit
    from citewell.services import open_local

    report = audit(open_local(args.home, existing=True), repair=args.repair)
    return report.model_dump(), EXIT_OK if report.ok else EXIT_FAILED


def cmd_read(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """Refused over the evidence budget (``CITEWELL_EVIDENCE_CHARS``), never cut."""
    from citewell.answers.config import evidence_budget
    from citewell.reads import read
    from citewell.services import open_local

    identity = Identity(tenant=args.tenant, roles=args.roles)
    snapshot = read(open_local(args.home, existing=True), identity, args.document_id, evidence_budget(), args.section)
    return snapshot.model_dump(mode="json"), EXIT_OK


DOCS_PAGE = 500


def cmd_docs(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.services import open_local

    records = open_local(args.home, existing=True).documents
    documents: list[dict[str, Any]] = []
    after: str | None = None
    while True:  # page by page, by key, as the API lists: a tenant of 100,000 records is never one read
        page = records.page_documents(args.tenant, DOCS_PAGE, after)
        documents += [d.model_dump(mode="json") for d in page.documents]
        if (after := page.after) is None:
            return {"documents": documents}, EXIT_OK


def cmd_eval(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.evaluation.retrieval import document_run, ingest_corpus, load_qrels, load_queries, score
    from citewell.progress import IngestDisplay
    from citewell.search import LANE_CHOICES
    from citewell.services import default_home, open_local

    lanes = args.lanes
    qrels = load_qrels(args.dataset, args.split)
    queries = load_queries(args.dataset, qrels)
    home = args.home or default_home() / "eval" / args.dataset.resolve().name
    services = open_local(home)
    with IngestDisplay(None, enabled=not args.json) as display:
        stats = ingest_corpus(services, args.dataset, progress=display)
    results = [score(qrels, document_run(services, queries, LANE_CHOICES[lane]), lane) for lane in lanes]
    payload = {
        "dataset": str(args.dataset), "split": args.split, "home": str(home),
        "ingest": stats.model_dump(), "lanes": [r.model_dump() for r in results],
    }
    return payload, EXIT_OK


def cmd_serve(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.serve.server import serve
    from citewell.serve.settings import ServeSettings
    from citewell.services import default_home

    settings = ServeSettings.from_env()
    if args.grace is not None:
        settings = settings.model_copy(update={"grace_seconds": args.grace})
    serve((args.home or default_home()).expanduser(), host=args.host, port=args.port, demo=args.demo, settings=settings)
    return {}, EXIT_OK


def cmd_token(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from citewell.serve.settings import ServeSettings
    from citewell.serve.tokens import home_key, mint
    from citewell.services import default_home

    settings = ServeSettings.from_env()
    if settings.external_issuer:
        raise InvalidInput("citewell serve is configured for an external issuer (CITEWELL_JWT_*): "
                           "tokens come from that issuer, not from the home's key")
    key = home_key((args.home or default_home()).expanduser())
    token = mint(key, tenant=args.tenant, roles=args.roles, ttl_seconds=args.ttl, tenant_claim=settings.tenant_claim,
                 roles_claim=settings.roles_claim, subject=args.subject)
    return {"token": token, "tenant": args.tenant, "roles": sorted(args.roles), "expires_in": args.ttl}, EXIT_OK


def cmd_login(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """USER_PASSWORD_AUTH against the stack's user pool; a first sign-in replaces the temporary password."""
    from citewell.api.settings import ApiSettings
    from citewell.aws.login import claims, client, region_or_default, sign_in

    if args.password_stdin:
        def password() -> str:
            return _stdin_line("no password on stdin")

        def new_password() -> str:
            return _stdin_line("no new password on stdin: a first sign-in reads it from the line after the password")
    else:
        import getpass

        def password() -> str:
            return getpass.getpass(f"Password for {args.username}: ")

        def new_password() -> str:
            chosen = getpass.getpass("First sign-in: choose a new password: ")
            if getpass.getpass("The new password again: ") != chosen:
                raise InvalidInput("the two new passwords differ")
            return chosen

    region = region_or_default(args.region)
    given = password()
    if not given:
        raise InvalidInput("the password is empty")
    result = sign_in(client(region), args.client_id, args.username, given, new_password)
    token = result["IdToken"]
    settings = ApiSettings.from_env()
    found = claims(token)
    roles = found.get(settings.roles_claim) or []
    who = {"username": args.username, "tenant": found.get(settings.tenant_claim),
           "roles": sorted(roles if isinstance(roles, list) else [roles]), "expires_in": result.get("ExpiresIn")}
    if args.out is None:
        return {"id_token": token, **who}, EXIT_OK
    _write_private(args.out, token + "\n")
    return {"written": str(args.out), **who}, EXIT_OK


def _stdin_line(missing: str) -> str:
    line = sys.stdin.readline()
    if not line.strip("\r\n"):
        raise InvalidInput(missing)
    return line.rstrip("\r\n")


def _write_private(path: Path, text: str) -> None:
    """Mode 0600 from the first byte, also over a file that was readable by others."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        os.fchmod(fd, 0o600)
        file.write(text)


def _show_login(payload: dict[str, Any]) -> None:
    """Without rich (the `local` extra): login runs where only the `aws` extra is installed. The
    token alone on stdout (TOKEN=$(citewell login ...)), who signed in on stderr."""
    from citewell.terminal import printable

    if "id_token" in payload:
        print(payload["id_token"])
    where = f"; written to {payload['written']}" if "written" in payload else ""
    print(printable(f"citewell: signed in as {payload['username']} (tenant {payload['tenant'] or 'none'}, roles "
                    f"{','.join(payload['roles']) or 'none'}); the ID token is valid {payload['expires_in']} s{where}"),
          file=sys.stderr)


COMMANDS = {
    "ingest": cmd_ingest, "search": cmd_search, "ask": cmd_ask, "feedback": cmd_feedback, "eval-answers": cmd_eval_answers,
    "citations": cmd_citations, "delete": cmd_delete, "audit": cmd_audit, "read": cmd_read, "docs": cmd_docs, "eval": cmd_eval,
    "serve": cmd_serve, "token": cmd_token, "login": cmd_login,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = None
    try:
        args = _parser(json_errors="--json" in argv).parse_args(argv, argparse.Namespace(**ANYWHERE_DEFAULTS))
        from citewell.settings import settings

        settings()  # a bad CITEWELL_* variable fails every command at once, by name
        payload, code = COMMANDS[args.command](args)
        if args.json:
            print(json.dumps(payload, ensure_ascii=False))
        elif args.command == "login":
            _show_login(payload)
        else:
            from citewell.render import render

            render(args.command, payload)
    except KeyboardInterrupt as interrupt:
        return interrupted(argv, interrupt, args)
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] == "citewell":
            raise  # our own module missing is a broken install or a bug, not a missing extra
        extra = "aws" if (error.name or "").partition(".")[0] in _AWS_MODULES else "local"
        return _error(_as_json(argv, args), {"code": "missing_extra", "message": (
            f"a package this command needs is not installed (no module {error.name!r}): pip install 'citewell[{extra}]'")})
    except (CitewellError, ValueError) as error:
        info = error.as_dict() if isinstance(error, CitewellError) else {"code": "invalid_input", "message": _message(error)}
        return _error(_as_json(argv, args), info)
    except Exception as error:
        if (behind := interrupt_behind(error)) is None:
            raise
        return interrupted(argv, behind, args)
    return code


def _as_json(argv: Sequence[str], args: argparse.Namespace | None) -> bool:
    """Whether errors go out as JSON too: ``--json``, read from ``argv`` when the command line was
    not read yet (``args`` None)."""
    return args.json if args is not None else "--json" in argv


def _error(as_json: bool, info: dict[str, str]) -> int:
    """One line on stderr, and the error as JSON on stdout with --json."""
    if as_json:
        print(json.dumps({"error": info}))
    from citewell.terminal import printable

    print(f"citewell: {printable(info['message'])}", file=sys.stderr)
    return EXIT_ERROR


def interrupted(argv: Sequence[str], interrupt: KeyboardInterrupt | None = None, args: argparse.Namespace | None = None) -> int:
    """Ctrl-C: one line, and with --json what an ingest got done; never a traceback.

    Without ``args`` the command line was not read yet, and ``--json`` is looked for in ``argv``.
    """
    as_json = _as_json(argv, args)
    message = "interrupted"
    outcomes = getattr(interrupt, "outcomes", None)
    if outcomes is not None:
        published = sum(o.status in ("published", "unchanged") for o in outcomes)
        stopped = sum(o.error is not None and o.error.code == "interrupted" for o in outcomes)
        words_only = sum(o.vectors_pending > 0 for o in outcomes)
        message = (f"interrupted: {published} documents published or unchanged, {stopped} stopped before publishing "
                   "(marked failed: interrupted; any earlier revision is still served)"
                   + (f"; {words_only} published documents are found by words until their vectors are made" if words_only else "")
                   + "; run the same ingest again")
    if as_json:
        documents = {"documents": [o.model_dump(mode="json") for o in outcomes]} if outcomes is not None else {}
        print(json.dumps({**documents, "error": {"code": "interrupted", "message": message}}, ensure_ascii=False))
    print(f"citewell: {message}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _message(error: ValueError) -> str:
    """A validation error in words for people, without pydantic's framing."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        return readable(error)
    return str(error).removeprefix("Value error, ")

