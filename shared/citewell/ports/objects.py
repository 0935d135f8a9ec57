"""The object store port: raw uploads and stage artifacts, by key."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Protocol, runtime_checkable


class ObjectStore(Protocol):
    """Raw uploads and stage artifacts, by key."""

    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def stream(self, key: str) -> Iterator[bytes]:
        """The object's bytes in blocks of at most ``citewell.objects.STREAM_BLOCK``, read as they
        are asked for, so a reader of a large artifact holds one block, not the object. NotFound
        when there is none, raised by this call, before any block."""
        ...
    def exists(self, key: str) -> bool: ...
    def delete(self, key: str) -> int: ...
    def list(self, prefix: str) -> Iterator[str]: ...
    def temporaries(self, prefix: str = "") -> builtins.list[tuple[str, float]]:
        """Unfinished writes under ``prefix`` (a killed process leaves them) and their age in
        seconds; ``delete`` removes one."""
        ...


@runtime_checkable
class SizedObjects(ObjectStore, Protocol):
    """An object store that tells an object's length without reading it (S3's HeadObject), so a
    stage refuses an oversized upload before a byte of it is in memory."""

    def size(self, key: str) -> int | None:
        """The object's length in bytes; None when there is none."""
        ...


@runtime_checkable
class ChainedObjects(ObjectStore, Protocol):
    """An object store whose writes under ``raw/`` start the ingestion chain by themselves (S3,
    whose notifications the stack points at the parse queue). Whoever wants an upload ingested
    there stores its bytes and leaves the stages to the chain; running them as well would run
    them twice."""

    def copy(self, source: str, key: str) -> None:
        """Copy the object at ``source`` to ``key`` inside the store, without reading its bytes
        here; NotFound when ``source`` is gone."""
        ...
