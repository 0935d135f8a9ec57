"""What an ingest of paths takes in: files with their default ids, and what it leaves out, said.

One rule for links: a path named on the command line is taken as given (a link there is what
the operator asked for), and inside a folder no symbolic link is followed, to a file or to a
folder, so a walk never leaves the folder given and never loops. Each link left out, and
anything that is not a regular file (a pipe, a socket, a device), is reported as ``skipped``
with its reason; hidden files and folders (a name starting with '.') are left out as
documented, without a line each. A folder that cannot be listed, or a name in one that cannot
be looked at (permissions), is a ``failed`` item (``unreadable``), never left out in silence.

A file's path becomes its id as it is, but for what an id may not hold: '#', '\\' and control
characters become '-', bytes that are not UTF-8 become U+FFFD ("Meeting #3.docx" is
"Meeting -3.docx"). A path that still makes no id (too long) fails alone, naming --doc-id.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from citewell.ingest.runner import IngestOutcome, OutcomeStatus
from citewell.models.documents import ErrorInfo
from citewell.models.values import validate_document_id

_NOT_IN_ID = re.compile(r"[#\\\x00-\x1f\x7f]")
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # nothing there to read (Path.exists() is False)


def shown(path: Path | str) -> str:
    """A path as text: a name's bytes that are not UTF-8 (kept by Python as surrogates, which
    no JSON or database takes) become U+FFFD."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def id_for(path: str) -> str:
    return _NOT_IN_ID.sub("-", shown(path))


@dataclass(frozen=True)
class Found:
    """A file to ingest under ``document_id``, or (``outcome`` set) a path reported instead."""

    path: Path
    document_id: str
    outcome: IngestOutcome | None = None


def _left_out(document_id: str, status: OutcomeStatus, code: str, message: str) -> IngestOutcome:
    return IngestOutcome(document_id=document_id, revision=None, status=status, chunks=0,
                         error=ErrorInfo(code=code, message=message))


def _link(path: Path, document_id: str) -> Found:
    try:
        target = shown(os.readlink(path))
    except OSError as error:  # /proc's links to other processes' files, say
        target = f"a target it may not read ({error.strerror})"
    return Found(path, document_id, _left_out(
        document_id, "skipped", "symlink",
        f"{shown(path)} is a symbolic link to {target}; links inside a folder are not followed: ingest the target itself",
    ))


def _checked(found: Found) -> Found:
    """A file whose id is still not an id is reported, not ingested; the others go on."""
    if found.outcome is not None:
        return found
    try:
        validate_document_id(found.document_id)
    except ValueError as error:
        return Found(found.path, found.document_id, _left_out(
            found.document_id, "failed", "invalid_input", f"{shown(found.path)}: {error}; ingest it alone with --doc-id"))
    return found


def walk(paths: list[Path]) -> list[Found]:
    """A folder's files by their path from the folder, the folder's own name included
    (``teamA/README.md`` and ``teamB/README.md`` stay two documents); a file by its name; a
    path that does not exist as one failed item (``not_found``), one the system will not let
    us look at as one failed item (``unreadable``)."""
    found: list[Found] = []
    for path in dict.fromkeys(paths):  # a path given twice is one path
        found.extend(_named(path))
    unique = list({(_real(f.path), f.document_id): f for f in found}.values())  # one folder named twice
    return _apart([_checked(f) for f in unique])


def _named(path: Path) -> list[Found]:
    """A path given on the command line: a folder walked, a file (a link followed) taken, or
    the reason it is neither. ``os.stat`` rather than ``Path.is_dir``, which raises on EACCES."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno in _ABSENT:
            return [Found(path, shown(path), _missing(path))]
        return [Found(path, shown(path), read_failure(shown(path), path, error))]
    if stat.S_ISDIR(mode):
        return _folder(path)
    if stat.S_ISREG(mode):
        return [Found(path, id_for(path.name))]
    return [Found(path, shown(path.name), _left_out(shown(path.name), "skipped", "not_a_file",
                                                    f"{shown(path)} is not a regular file"))]


def read_failure(document_id: str, path: Path, error: OSError, folder: bool = False) -> IngestOutcome:
    """A path that could not be read: ``not_found`` when it went away after it was listed (the
    code a missing path named on the command line has), else ``unreadable`` with the system's
    reason (permissions, an I/O error)."""
    if error.errno in _ABSENT:
        return _left_out(document_id, "failed", "not_found",
                         f"no such file or folder: {shown(path)} (removed or renamed since it was listed)")
    left_out = "; the files in it were left out" if folder else ""
    return _left_out(document_id, "failed", "unreadable",
                     f"{shown(path)} could not be {'listed' if folder else 'read'}: {error.strerror or error}{left_out}")


def still_a_file(path: Path) -> bool:
    """Whether ``path`` is still a regular file; ``OSError`` when that cannot be known (EACCES on
    a folder of its path): what cannot be seen is not gone."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError as error:
        if error.errno in _ABSENT:
            return False
        raise


def check_failure(document_id: str, path: Path | str, error: OSError) -> IngestOutcome:
    """A document whose file could not be checked for (``still_a_file`` raised): kept, said why."""
    return _left_out(document_id, "failed", "unreadable", f"{shown(path)} could not be checked: {error.strerror or error}; "
                                                           "the document was kept, not listed as gone nor pruned")


def _missing(path: Path) -> IngestOutcome:
    """A path named that reaches no file: a link that loops (ELOOP) or leads nowhere is said as
    such, since the name itself is there to see."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return _left_out(shown(path), "failed", "symlink_loop",
                             f"{shown(path)} is a symbolic link that loops back on itself: it never reaches a file")
    if path.is_symlink():
        return _left_out(shown(path), "failed", "not_found",
                         f"{shown(path)} is a symbolic link to {shown(os.readlink(path))}, which does not exist")
    return _left_out(shown(path), "failed", "not_found", f"no such file or folder: {shown(path)}")


def _real(path: Path) -> str:
    try:
        return os.path.realpath(path)
    except OSError:  # a link it may not read (/proc's): it is reported as skipped, by its own path
        return str(path)


def _apart(found: list[Found]) -> list[Found]:
    """Files that would become one document ("a#1.md" and "a-1.md") each fail, naming the id;
    the rest of the batch goes on."""
    paths: dict[str, list[Path]] = {}
    for f in found:
        if f.outcome is None:
            paths.setdefault(f.document_id, []).append(f.path)
    return [f if f.outcome is not None or len(paths[f.document_id]) == 1 else Found(f.path, f.document_id, _left_out(
        f.document_id, "failed", "id_clash", f"{len(paths[f.document_id])} files become the document id {f.document_id} "
        f"({', '.join(shown(p) for p in paths[f.document_id])}): ingest each alone with --doc-id")) for f in found]


def _folder(root: Path) -> list[Found]:
    """Every file under ``root``; a folder in it that cannot be listed is a failed item
    (``os.walk`` would skip it without a word)."""
    name = PurePosixPath(os.path.abspath(root)).name  # as given: '.' is the working folder's name, a link its own
    found = []

    def unlisted(error: OSError) -> None:
        folder = Path(error.filename or root)
        document_id = _id_in(name, root, folder)
        found.append(Found(folder, document_id, read_failure(document_id, folder, error, folder=True)))

    for top, folders, files in os.walk(root, onerror=unlisted, followlinks=False):
        here = Path(top)
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for entry in [*(here / f for f in folders if _is_link(here / f)),
                      *(here / f for f in files if not f.startswith("."))]:
            found.append(_entry(entry, _id_in(name, root, entry)))
    return sorted(found, key=lambda f: f.document_id)


def _id_in(name: str, root: Path, path: Path) -> str:
    return id_for(PurePosixPath(name, path.relative_to(root).as_posix()).as_posix())


def _is_link(path: Path) -> bool:
    """False when it cannot be looked at: a folder is then entered, and reported if it cannot be."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _entry(path: Path, document_id: str) -> Found:
    """One name a folder lists: a file to ingest, or a link, a pipe or a name that cannot be
    looked at (a folder that may be listed but not entered), reported."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as error:
        return Found(path, document_id, read_failure(document_id, path, error))
    if stat.S_ISLNK(mode):
        return _link(path, document_id)
    if stat.S_ISREG(mode):
        return Found(path, document_id)
    return Found(path, document_id, _left_out(
        document_id, "skipped", "not_a_file", f"{shown(path)} is not a regular file (a pipe, socket or device)"))
