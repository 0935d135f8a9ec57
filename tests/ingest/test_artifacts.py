"""The chunks artifact: written as JSON Lines, read back a page at a time from a folder store's
stream, an artifact written whole before the format still read, and one that holds less than its
header says refused."""

from __future__ import annotations

import pytest

from citewell.ingest.artifacts import ArtifactDamaged, ChunksArtifact, chunks_lines, read_chunks
from citewell.models.chunks import Chunk
from citewell.objects import STREAM_BLOCK
from citewell.objects.folder import FolderObjectStore

KEY = "chunks/northpier/guide.md/u1.json"


def chunk(n: int, text: str) -> Chunk:
    return Chunk(chunk_id=f"guide.md#0#{n}", document_id="guide.md", tenant="northpier", allowed_roles=frozenset({"staff"}),
                 revision="r1", title="Guide", section_index=0, index=n, heading_path=["Leave"], start=0, end=len(text),
                 body_start=0, text=text)


def artifact(count: int, text: str = "Line one.\nLine two, after a newline.") -> ChunksArtifact:
    return ChunksArtifact(revision="r1", content_sha256="c" * 64, encoding="utf-8",
                          chunks=[chunk(n, f"{n}: {text}") for n in range(count)])


def test_the_artifact_reads_back_page_by_page_across_blocks(tmp_path):
    store = FolderObjectStore(tmp_path)
    written = artifact(7, "x" * (STREAM_BLOCK // 3))  # records that span the stream's blocks
    store.put(KEY, chunks_lines(written))
    header, pages = read_chunks(store, KEY, 3)
    assert (header.revision, header.content_sha256, header.encoding, header.chunks) == ("r1", "c" * 64, "utf-8", 7)
    read = list(pages)
    assert [len(p) for p in read] == [3, 3, 1] and [c for p in read for c in p] == written.chunks


def test_an_artifact_written_whole_before_json_lines_is_read(tmp_path):
    store = FolderObjectStore(tmp_path)
    written = artifact(5)
    store.put(KEY, written.model_dump_json().encode())
    header, pages = read_chunks(store, KEY, 2)
    assert header.chunks == 5 and [c for p in pages for c in p] == written.chunks


def test_an_artifact_short_of_its_header_is_refused(tmp_path):
    store = FolderObjectStore(tmp_path)
    lines = chunks_lines(artifact(4)).splitlines(keepends=True)
    store.put(KEY, b"".join(lines[:-1]))  # the last record lost
    _, pages = read_chunks(store, KEY, 10)
    with pytest.raises(ArtifactDamaged, match="holds 3 chunks, its header says 4"):
        list(pages)
    store.put(KEY, b"")
    with pytest.raises(ArtifactDamaged, match="empty"):
        read_chunks(store, KEY, 10)
