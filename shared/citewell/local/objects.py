"""ObjectStore on a local folder. Keys are relative paths; nothing escapes the root."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from citewell.errors import InvalidInput, NotFound


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
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise NotFound(f"no object {key!r}") from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> int:
        path = self._path(key)
        if not path.is_file():
            return 0
        path.unlink()
        return 1

    def list(self, prefix: str) -> Iterator[str]:
        base = self._path(prefix) if prefix else self.root
        candidates = [base] if base.is_file() else (p for p in base.rglob("*") if p.is_file())
        for path in sorted(candidates):
            if not path.name.startswith(".tmp-"):
                yield path.relative_to(self.root).as_posix()
