"""The embedded lexical lane's index layout: a chunk's context and body are one field (as FTS5's
bm25 scored a row), and a home written in an earlier layout is rebuilt, its old folder gone."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from citewell.local.index import SqliteSearchIndex
from citewell.local.lexical import LAYOUT
from citewell.models import Chunk, Identity

MODEL = "all-MiniLM-L6-v2-int8-onnx@1.0.0:384"
STAFF = Identity(tenant="northpier", roles=frozenset({"staff"}))


def chunk(doc: str, title: str, text: str) -> Chunk:
    return Chunk(chunk_id=f"{doc}#0#0", document_id=doc, tenant="northpier", allowed_roles=frozenset({"staff"}),
                 revision="r1", title=title, section_index=0, index=0, heading_path=[], start=0, end=len(text),
                 body_start=0, text=text)


FILLER = [chunk(f"filler-{n}.md", "Handbook", f"Staff guidance number {n} on leave, pay and rotas for the depot.")
          for n in range(8)]


def load(index: SqliteSearchIndex, chunks: list[Chunk]) -> None:
    index.upsert(chunks, np.eye(len(chunks), 384, dtype=np.float32), MODEL)


def test_a_word_in_title_and_body_counts_once_per_chunk_not_once_per_field(tmp_path: Path) -> None:
    # Scored as two fields, the title's rare 'mooring' and the body's add up to more than a
    # body that names it three times; scored as one field (FTS5's way), three beats two.
    titled = chunk("titled.md", "Mooring guide", "Check the mooring lines before the tide turns each day.")
    repeated = chunk("repeated.md", "Harbour guide", "Mooring lines, mooring posts and mooring fees are listed here.")
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, [*FILLER, titled, repeated])

    hits = index.lexical("mooring", STAFF, 5)

    assert [h.document_id for h in hits] == ["repeated.md", "titled.md"]


def test_a_home_in_an_earlier_layout_is_rebuilt_and_its_old_folder_removed(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, [*FILLER, chunk("moorings.md", "Moorings", "Berth 4 takes vessels up to 120 metres.")])
    lexical = tmp_path / "lexical"
    # The earlier layout: its folder name and a mark without the layout in it.
    os.replace(lexical / LAYOUT, lexical / "tantivy")
    (lexical / "synced").write_text((lexical / "synced").read_text().split(":")[1])

    reopened = SqliteSearchIndex(tmp_path / "index.db")
    hits = reopened.lexical("berth vessels", STAFF, 3)

    assert [h.document_id for h in hits] == ["moorings.md"]
    assert sorted(p.name for p in lexical.iterdir() if p.is_dir()) == [LAYOUT]
    assert (lexical / "synced").read_text().startswith(f"{LAYOUT}:")
    # Written again after the rebuild: still one index, and a deleted document leaves it.
    reopened.delete_document("northpier", "moorings.md")
    assert reopened.lexical("berth vessels", STAFF, 3) == []
