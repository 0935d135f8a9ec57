"""The ``citewell`` command on the embedded stores; ``citewell --help`` lists every subcommand.

Tenant and roles come from the operator's flags: the only trusted identity on one machine.
``--json`` prints machine-readable output on stdout; progress and errors go to stderr.
``login`` is the one command for AWS: a Cognito ID token for the deployed API.
``--home`` and ``--json`` may come before or after the command; given in both places, the value
after the command wins.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from citewell import __version__
from citewell.cli import ask, audit, documents, evaluation, feedback, ingest, login, mcp, search, serve
from citewell.cli.common import EXIT_ERROR, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from citewell.errors import CitewellError, readable
from citewell.interrupts import interrupt_behind

__all__ = ["COMMANDS", "EXIT_ERROR", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "interrupted", "main"]

DESCRIPTION = (
    "A permission-aware knowledge base that answers with citations, kept in a folder on this machine. "
    "Tenant and roles come from the flags, the operator's trusted identity."
)
_AWS_MODULES = {"boto3", "botocore", "opensearchpy", "aws_lambda_powertools"}  # the `aws` extra (a Bedrock generator)


def _home(value: str) -> Path:
    if not value.strip():
        raise argparse.ArgumentTypeError("--home is empty: name the home folder, or leave --home out for the default")
    return Path(value)


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
    command = functools.partial(sub.add_parser, parents=[common])
    for add in (ingest.add_ingest, search.add_search, ask.add_ask, feedback.add_feedback, evaluation.add_eval_answers,
                ask.add_citations, documents.add_delete, audit.add_audit, serve.add_serve, serve.add_token, mcp.add_mcp,
                login.add_login, documents.add_read, documents.add_docs, evaluation.add_eval):  # the order --help lists them in
        add(command)
    return parser


COMMANDS = {
    "ingest": ingest.cmd_ingest, "search": search.cmd_search, "ask": ask.cmd_ask, "feedback": feedback.cmd_feedback,
    "eval-answers": evaluation.cmd_eval_answers, "citations": ask.cmd_citations, "delete": documents.cmd_delete,
    "audit": audit.cmd_audit, "read": documents.cmd_read, "docs": documents.cmd_docs, "eval": evaluation.cmd_eval,
    "serve": serve.cmd_serve, "token": serve.cmd_token, "mcp": mcp.cmd_mcp, "login": login.cmd_login,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args, writing = None, False
    try:
        args = _parser(json_errors="--json" in argv).parse_args(argv, argparse.Namespace(**ANYWHERE_DEFAULTS))
        from citewell.settings import settings

        settings()  # a bad CITEWELL_* variable fails every command at once, by name
        payload, code = COMMANDS[args.command](args)
        writing = True
        if args.json:
            print(json.dumps(payload, ensure_ascii=False))
        elif args.command == "login":
            login.show_login(payload)
        else:
            from citewell.render import render

            render(args.command, payload)
    except KeyboardInterrupt as interrupt:
        if writing:  # the command had ended: its output is cut, not followed by a second answer
            print("citewell: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
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
