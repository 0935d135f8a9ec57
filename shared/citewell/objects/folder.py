"""ObjectStore on a local folder. Keys are relative paths; nothing escapes the root.

A put writes a ``.tmp-*`` file beside its target and renames it; a process killed between the
two leaves that file behind, so ``temporaries`` lists such files for the audit to remove.

A key's part longer than a file name may be (a long or non-Latin document id, percent-encoded:
a 44-character Japanese file name is 310 bytes) is stored as a chain of folders, each but the
last named with a trailing ``%``, which never ends a percent-encoded part. Parts that fit keep
their one folder, so homes written before this rule read as they did.
"""

from __future__ import annotations

import builtins
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from citewell.errors import HomeNotWritable, InvalidInput, NotFound
from citewell.objects import STREAM_BLOCK

TEMPORARY = ".tmp-"  # the name prefix of a put's file before its rename
_MORE = "%"  # ends each folder of a long part's chain but the last


class FolderObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise InvalidInput(f"{self.root} is a file, not the home's objects folder: move it out of the home") from None
        except OSError as error:
            raise HomeNotWritable(f"cannot make the objects folder {self.root}: {error.strerror}") from None
        try:
            self.name_bytes = os.pathconf(self.root, "PC_NAME_MAX")
        except (OSError, ValueError):
            self.name_bytes = 255

    def _path(self, key: str) -> Path:
        path = (self.root / "/".join(self._stored(part) for part in key.split("/"))).resolve()
        if self.root not in path.parents:
            raise InvalidInput(f"object key escapes the store: {key!r}")
        return path

    def _stored(self, part: str) -> str:
        """``part`` as one folder or file name, or as a chain of folders if it is too long."""
        if len(part.encode()) <= self.name_bytes:
            return part
        piece = self.name_bytes - len(_MORE)  # a key's parts are ASCII: a character is a byte
        pieces = [part[i : i + piece] for i in range(0, len(part), piece)]
        if pieces[-1] in (".", ".."):  # a name the file system reads as a step: take two more characters
            pieces[-2:] = [pieces[-2][:-2], pieces[-2][-2:] + pieces[-1]]
        return "/".join(p + _MORE for p in pieces[:-1]) + "/" + pieces[-1]

    def _key(self, path: Path) -> str:
        """The key a stored file holds: each chain joined back into its part."""
        parts, pending = [], ""
        for name in path.relative_to(self.root).parts:
            if name.endswith(_MORE):
                pending += name[: -len(_MORE)]
            else:
                parts.append(pending + name)
                pending = ""
        return "/".join(parts)

    def put(self, key: str, data: bytes) -> None:
        """Atomic: write a temporary file beside the target, then rename over it."""
        path = self._path(key)
        fd, tmp = self._temporary(path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def _temporary(folder: Path, attempts: int = 100) -> tuple[int, str]:
        """A new temporary file in ``folder``, made if missing. A delete beside us may prune the
        folder (or a parent) at any moment before the file exists in it, so make it again."""
        for _ in range(attempts - 1):
            try:
                folder.mkdir(parents=True, exist_ok=True)
                return tempfile.mkstemp(dir=folder, prefix=TEMPORARY)
            except (FileNotFoundError, FileExistsError):  # FileExistsError: removed before mkdir checked it
                continue
        folder.mkdir(parents=True, exist_ok=True)  # still failing: a file where a folder must be, not a race
        return tempfile.mkstemp(dir=folder, prefix=TEMPORARY)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise NotFound(f"no object {key!r}") from None

    def stream(self, key: str) -> Iterator[bytes]:
        try:
            file = self._path(key).open("rb")
        except FileNotFoundError:
            raise NotFound(f"no object {key!r}") from None
        return _blocks(file)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> int:
        """Removes an object, or a temporary named by ``temporaries``, and the folders it leaves
        empty: a folder is named after its document, so an empty one is a trace too."""
        path = self._path(key)
        if not path.is_file():
            return 0
        try:
            path.unlink()
        except FileNotFoundError:  # another deleter won the race
            return 0
        self._prune(path.parent)
        return 1

    def _prune(self, folder: Path) -> None:
        """Remove ``folder`` and its parents while they are empty, never the root."""
        while folder != self.root and self.root in folder.parents:
            try:
                folder.rmdir()
            except FileNotFoundError:  # another delete removed it first
                pass
            except OSError:  # not empty: a put or another object still lives there
                return
            folder = folder.parent

    def list(self, prefix: str) -> Iterator[str]:
        for path in self._files(prefix):
            if not path.name.startswith(TEMPORARY):
                yield self._key(path)

    def temporaries(self, prefix: str = "") -> builtins.list[tuple[str, float]]:
        """``(key, age in seconds)`` of each unfinished put under ``prefix``: a young one may
        still be renamed by a live writer, an old one is a killed write's raw bytes."""
        now = time.time()
        found: list[tuple[str, float]] = []
        for path in self._files(prefix):
            if path.name.startswith(TEMPORARY):
                try:
                    age = max(0.0, now - path.stat().st_mtime)
                except FileNotFoundError:  # renamed or removed since the walk
                    continue
                found.append((self._key(path), age))
        return found

    def _files(self, prefix: str) -> builtins.list[Path]:
        """Every file under ``prefix``, sorted. ``os.walk`` skips a folder that is missing or
        is removed while it walks (a deletion beside an audit), where ``rglob`` raises."""
        base = self._path(prefix) if prefix else self.root
        if base.is_file():
            return [base]
        found = [Path(folder) / name for folder, _, names in os.walk(base) for name in names]
        return sorted(path for path in found if path.is_file())


def _blocks(file: BinaryIO) -> Iterator[bytes]:
    """An open file's bytes, ``STREAM_BLOCK`` at a time; closed at the end or when dropped."""
    with file:
        while block := file.read(STREAM_BLOCK):
            yield block
