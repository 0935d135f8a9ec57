"""The ``citewell`` process (``python -m citewell``): Ctrl-C at any moment ends it with one line and 130.

Two gaps of the interpreter are closed here, outside :mod:`citewell.cli`, which loads pydantic and
the models (a few hundred milliseconds on a cold disk):

- a Ctrl-C while those modules load would print a traceback from deep inside an import, or be
  swallowed by an import lock's callback and let the command run on; while they load, SIGINT is
  only noted, and honoured once they are in;
- a Ctrl-C that lands inside ``exec`` or ``eval`` of a string (dataclasses and named tuples build
  their methods that way, so any module loaded mid-command) marks the interpreter, and CPython
  3.11 run with ``-m`` then ends the process by SIGINT at exit, though the command caught it and
  cleaned up. After an interrupt the process exits at once with the code the command returned;
  every store's write has ended by then.

And once the command has returned, SIGINT is ignored: a Ctrl-C as the output appears would
otherwise end the exit in a traceback, a thread's "Exception ignored", or a death by the signal
(-2) with nothing said, though the command had finished (12 of 12 tries hit one of these).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a writer whose reader left


def main() -> None:
    noted: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)

    heard = signal.getsignal(signal.SIGINT) is signal.default_int_handler  # not ignored (a background job)
    if heard:
        signal.signal(signal.SIGINT, note)
    from citewell import cli

    if heard:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            code = cli.interrupted(sys.argv[1:]) if noted else cli.main()
        except KeyboardInterrupt:  # it landed as the command returned, its output written
            print("citewell: interrupted", file=sys.stderr)
            code = cli.EXIT_INTERRUPTED
        if heard:
            _stop_hearing_ctrl_c()
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        code = EXIT_BROKEN_PIPE
    if code == cli.EXIT_INTERRUPTED:
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _stop_hearing_ctrl_c() -> None:
    """The command has ended and its output is written: a Ctrl-C now could only cut the exit into
    a traceback or a death by the signal, so from here SIGINT is ignored."""
    while True:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            return
        except (KeyboardInterrupt, OSError):  # one landed as this ran ("ignored due to race condition")
            continue


if __name__ == "__main__":
    main()
