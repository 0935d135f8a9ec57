"""The lexical index's files after deletes, as two processes write them: no segment file that
holds a deleted row's words outlives the compaction."""

from __future__ import annotations

from pathlib import Path

from citewell.index.lexical import LAYOUT, LexicalRow, TantivyLexicon
from tests.residue import tantivy_residue


def row(rowid: int, body: str) -> LexicalRow:
    return LexicalRow(rowid, "acme", "live", frozenset({"staff"}), "handbook", body)


def test_a_segment_another_process_wrote_is_collected_once_its_rows_are_deleted(tmp_path: Path) -> None:
    # Two handles on one folder are two processes: each keeps tantivy's list of its files as it
    # read it when it opened the index, and writes its own copy of that list back.
    folder = tmp_path / "lexical" / LAYOUT
    first = TantivyLexicon(folder)
    second = TantivyLexicon(folder)
    second.write([row(1, "the zorbflax valve is closed at night")])
    first.refresh()
    first.write([row(2, "the kitchen opens at eight")])
    first.write([], removed=[1])
    assert tantivy_residue(tmp_path, {"zorbflax"}), "the deleted row's segment is still on disk before the compaction"
    first.collect_garbage()
    assert tantivy_residue(tmp_path, {"zorbflax"}) == {}
    first.refresh()
    assert first.rows_in_segments({0, 1, 2}) == [2]  # the live row is untouched
