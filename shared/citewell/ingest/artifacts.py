"""The chunk stage's artifact, which the embed stage reads: JSON Lines, so it is read a page at a time.

The first line is a :class:`ChunksHeader` (the revision, its text's hash, the encoding and how
many chunks follow), then one chunk record a line (a record's text has its newlines escaped, so
a line is a record). A reader streams the object (:meth:`~citewell.ports.ObjectStore.stream`) and
holds one page of chunks, whatever the revision's length: a 50 MB text's 47,663 chunks held whole,
with the object's bytes and each chunk's embedding text, came to several times the text.

An artifact written whole before this format (one JSON object with a ``chunks`` list: a message
in flight across a deploy) is still read, whole, as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from pydantic import BaseModel

from citewell.interrupts import deferred
from citewell.models.chunks import Chunk
from citewell.ports import ObjectStore


class ChunksArtifact(BaseModel):
    """What the chunk stage made of an upload: its revision's chunks, in reading order."""

    revision: str
    content_sha256: str
    chunks: list[Chunk]
    encoding: str | None = None


class ChunksHeader(BaseModel):
    """The artifact's first line: everything but the chunks, and how many follow."""

    revision: str
    content_sha256: str
    encoding: str | None = None
    chunks: int


class ArtifactDamaged(Exception):
    """The artifact holds other than its header says (fewer chunks, or none of its lines): not
    acted on, so the stage's message is delivered again."""


def chunks_lines(artifact: ChunksArtifact) -> bytes:
    """The artifact as it is stored, with Ctrl-C held until it is written (pydantic turns a
    KeyboardInterrupt raised inside its serializer into a serialization error)."""
    header = ChunksHeader(revision=artifact.revision, content_sha256=artifact.content_sha256,
                          encoding=artifact.encoding, chunks=len(artifact.chunks))
    with deferred():
        return "\n".join([header.model_dump_json(), *(c.record_json() for c in artifact.chunks), ""]).encode()


def read_chunks(objects: ObjectStore, key: str, page: int) -> tuple[ChunksHeader, Iterator[list[Chunk]]]:
    """The artifact's header, read now (NotFound when there is none), and its chunks, ``page`` at a
    time as they are asked for, the object read as far as they need."""
    lines = _lines(objects.stream(key))
    first = next(lines, None)
    if first is None:
        raise ArtifactDamaged(f"the chunks artifact {key!r} is empty")
    found = json.loads(first)
    if isinstance(found, dict) and isinstance(found.get("chunks"), list):  # written whole, before JSON Lines
        whole = ChunksArtifact.model_validate(found)
        header = ChunksHeader(revision=whole.revision, content_sha256=whole.content_sha256, encoding=whole.encoding,
                              chunks=len(whole.chunks))
        return header, iter([whole.chunks[n : n + page] for n in range(0, len(whole.chunks), page)])
    header = ChunksHeader.model_validate(found)
    return header, _pages(key, header, lines, page)


def _pages(key: str, header: ChunksHeader, lines: Iterator[bytes], page: int) -> Iterator[list[Chunk]]:
    count, held = 0, []
    for line in lines:
        held.append(Chunk.model_validate_json(line))
        if len(held) == page:
            count += page
            yield held
            held = []
    count += len(held)
    if held:
        yield held
    if count != header.chunks:
        raise ArtifactDamaged(f"the chunks artifact {key!r} holds {count} chunks, its header says {header.chunks}")


def _lines(blocks: Iterable[bytes]) -> Iterator[bytes]:
    """The non-empty lines of a stream of blocks (a line may span blocks), without their ends."""
    part: list[bytes] = []
    for block in blocks:
        start = 0
        while (end := block.find(b"\n", start)) != -1:
            line = b"".join([*part, block[start:end]]) if part else block[start:end]
            part = []
            if line.strip():
                yield line
            start = end + 1
        if start < len(block):
            part.append(block[start:])
    if part and (line := b"".join(part)).strip():
        yield line
