"""ObjectStore on a local folder. Keys are relative paths; nothing escapes the root.

A put writes a ``.tmp-*`` file beside its target and renames it; a process killed between the
two leaves that file behind, so ``temporaries`` lists such files for the audit to remove.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from citewell.errors import InvalidInput, NotFound

TEMPORARY = ".tmp-"  # the name prefix of a put's file before its rename


class FolderObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root not in path.parents:
            raise InvalidInput(f"object key escapes the store: {key!r}")
        return path

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
                yield path.relative_to(self.root).as_posix()

    def temporaries(self, prefix: str = "") -> list[tuple[str, float]]:
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
                found.append((path.relative_to(self.root).as_posix(), age))
        return found

    def _files(self, prefix: str) -> list[Path]:
        """Every file under ``prefix``, sorted. ``os.walk`` skips a folder that is missing or
        is removed while it walks (a deletion beside an audit), where ``rglob`` raises."""
        base = self._path(prefix) if prefix else self.root
        if base.is_file():
            return [base]
        found = [Path(folder) / name for folder, _, names in os.walk(base) for name in names]
        return sorted(path for path in found if path.is_file())
