"""What an ingest of paths takes in: files with their default ids, and what it leaves out, said.

One rule for links: a path named on the command line is taken as given (a link there is what
the operator asked for), and inside a folder no symbolic link is followed, to a file or to a
folder, so a walk never leaves the folder given and never loops. Each link left out, and
anything that is not a regular file (a pipe, a socket, a device), is reported as ``skipped``
with its reason; hidden files and folders (a name starting with '.') are left out as
documented, without a line each.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from citewell.ingest.runner import IngestOutcome
from citewell.models import ErrorInfo


@dataclass(frozen=True)
class Found:
    """A file to ingest under ``document_id``, or (``outcome`` set) a path reported instead."""

    path: Path
    document_id: str
    outcome: IngestOutcome | None = None


def _left_out(document_id: str, status: str, code: str, message: str) -> IngestOutcome:
    return IngestOutcome(document_id=document_id, revision=None, status=status, chunks=0,  # type: ignore[arg-type]
                         error=ErrorInfo(code=code, message=message))


def _link(path: Path, document_id: str) -> Found:
    target = os.readlink(path)
    return Found(path, document_id, _left_out(
        document_id, "skipped", "symlink",
        f"{path} is a symbolic link to {target}; links inside a folder are not followed: ingest the target itself",
    ))


def walk(paths: list[Path]) -> list[Found]:
    """A folder's files by their path from the folder, the folder's own name included
    (``teamA/README.md`` and ``teamB/README.md`` stay two documents); a file by its name; a
    path that does not exist as one failed item (``not_found``)."""
    found: list[Found] = []
    for path in paths:
        if path.is_dir():
            found.extend(_folder(path))
        elif path.is_file():
            found.append(Found(path, path.name))
        elif not path.exists():
            found.append(Found(path, str(path), _left_out(str(path), "failed", "not_found", f"no such file or folder: {path}")))
        else:
            found.append(Found(path, path.name, _left_out(path.name, "skipped", "not_a_file", f"{path} is not a regular file")))
    return found


def _folder(root: Path) -> list[Found]:
    name = PurePosixPath(os.path.abspath(root)).name  # as given: '.' is the working folder's name, a link its own
    found = []
    for top, folders, files in os.walk(root, followlinks=False):
        here = Path(top)
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for entry in [*(here / f for f in folders if (here / f).is_symlink()),
                      *(here / f for f in files if not f.startswith("."))]:
            document_id = PurePosixPath(name, entry.relative_to(root).as_posix()).as_posix()
            if entry.is_symlink():
                found.append(_link(entry, document_id))
            elif entry.is_file():
                found.append(Found(entry, document_id))
            else:
                found.append(Found(entry, document_id, _left_out(
                    document_id, "skipped", "not_a_file", f"{entry} is not a regular file (a pipe, socket or device)")))
    return sorted(found, key=lambda f: f.document_id)
