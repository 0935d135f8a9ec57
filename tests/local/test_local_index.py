"""The embedded index's own files: a chunk's context and body are one lexical field, scored by
BM25 exactly as FTS5 scored it (SQLite's own FTS5 is the oracle); a home written in an earlier layout is rebuilt, its old folder gone; new
rows go into the lexical index together (one commit per ingest batch), never at the cost of
what a search finds or what a delete removes; and vectors are read in slices, each row kept
with its own access fields."""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np

from citewell.index.lexical import LAYOUT, analyse, term_counter, text_of
from citewell.index.sqlite import FLUSH_ROWS, SqliteSearchIndex
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity
from tests.conftest import make_services

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


VARIED = [
    chunk("moorings.md", "Mooring guide", "Check the mooring lines before the tide turns each day."),
    chunk("fees.md", "Harbour fees", "Mooring fees are charged daily; visiting yachts pay on arrival at the office."),
    chunk("relations.md", "Relations", "Relational databases hold the berthing records. Conditional bookings expire."),
    chunk("cafe.md", "Café hours", "The harbour café opens at 07:00 on weekdays and is naïve about tides."),
    chunk("long.md", "Operations manual",
          "Tidal windows, mooring assignments, pilotage requirements, berthing days, anchorage rules, "
          "dredging schedules and the harbour master's standing orders for vessels over 120 metres in length."),
    chunk("gate.md", "Gate settings", "Set gate_retry_count and retry_delay_ms in harbour_gate.conf for the 2nd gate."),
]
QUESTIONS = ["mooring fees", "tides days", "relational bookings", "cafe weekdays", "harbour vessels mooring lines",
             "berths opening", "gate retry delay", "2nd harbour gate"]


def fts5_scores(chunks: list[Chunk], question: str) -> dict[str, float]:
    """What FTS5's bm25 (the engine the lane replaced) gives each chunk for the question's words."""
    oracle = sqlite3.connect(":memory:")
    oracle.execute("CREATE VIRTUAL TABLE t USING fts5(words, tokenize='porter unicode61 remove_diacritics 2')")
    oracle.executemany("INSERT INTO t(rowid, words) VALUES (?, ?)",
                       [(n, f"{c.context}\n{c.text}") for n, c in enumerate(chunks)])
    match = " OR ".join(f'"{word}"' for word in question.split())
    rows = oracle.execute("SELECT rowid, -bm25(t) FROM t WHERE t MATCH ?", (match,)).fetchall()
    return {chunks[rowid].chunk_id: score for rowid, score in rows}


def test_the_lexical_lane_scores_each_chunk_as_fts5s_bm25_did_and_keeps_doing_so_as_rows_are_added(
        tmp_path: Path) -> None:
    # tantivy keeps a row's length in one byte; its candidates are scored again with exact lengths,
    # FTS5's idf and the Porter stemmer FTS5 used, so the ranking is FTS5's to the last digit. A
    # document indexed again or deleted leaves no dead row that tantivy's document frequency counts.
    index = SqliteSearchIndex(tmp_path / "index.db")
    every = VARIED + FILLER
    steps = [
        (lambda: load(index, VARIED), VARIED),
        (lambda: load(index, FILLER), every),
        (lambda: load(index, VARIED[:2]), every),  # two documents of a segment indexed again
        (lambda: index.delete_document("northpier", "relations.md"), [c for c in every if c.document_id != "relations.md"]),
    ]
    for step, loaded in steps:
        step()
        for question in QUESTIONS:
            expected = fts5_scores(loaded, question)
            found = {hit.chunk_id: hit.score for hit in index.lexical(question, STAFF, 50)}
            assert found.keys() == expected.keys(), question
            for chunk_id, score in expected.items():
                assert abs(found[chunk_id] - score) < 1e-9, (question, chunk_id)


def test_a_search_overtaken_by_another_threads_reload_leaves_no_stale_statistics_behind(tmp_path: Path) -> None:
    # One thread's search holds a searcher; rows are committed and another thread reloads before
    # the first scores its candidates. Figures counted on that older searcher must not be kept
    # as the newer index's.
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, VARIED)
    index.flush()
    lexicon = index._lexicon()
    lexicon.refresh()

    def overtaken(rowids: list[int]) -> dict[int, str]:
        load(SqliteSearchIndex(tmp_path / "index.db"), FILLER)  # another process's write
        SqliteSearchIndex(tmp_path / "index.db").flush()
        lexicon.refresh()  # another thread's search starting
        return {r: text_of(row["context"], row["body"]) for r, row in index._readable(rowids, STAFF).items()}

    lexicon.search(lexicon.terms("mooring fees"), "northpier", ["staff"], 10, overtaken)

    expected = fts5_scores(VARIED + FILLER, "mooring fees")
    found = {hit.chunk_id: hit.score for hit in index.lexical("mooring fees", STAFF, 50)}
    assert found.keys() == expected.keys()
    for chunk_id, score in expected.items():
        assert abs(found[chunk_id] - score) < 1e-9, chunk_id


def test_a_commit_between_the_stat_and_the_reload_is_counted_on_the_searcher_that_scores(tmp_path: Path) -> None:
    # A commit lands after a search has read meta.json's stat but before it reloads: the stat
    # says "unchanged" while the searcher is the newer one. Its figures must be counted on that
    # searcher; the older row count beside the newer document frequencies gave a negative log
    # (a 503 under load while an ingest ran).
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, VARIED)
    index.flush()
    index.lexical("mooring fees", STAFF, 50)  # figures counted for VARIED
    load(index, FILLER)
    index.flush()
    lexicon = index._lexicon()
    stat = os.stat(lexicon.folder / "meta.json")
    lexicon._seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)  # the stat that raced the commit

    expected = fts5_scores(VARIED + FILLER, "mooring fees")
    found = {hit.chunk_id: hit.score for hit in index.lexical("mooring fees", STAFF, 50)}
    assert found.keys() == expected.keys()
    for chunk_id, score in expected.items():
        assert abs(found[chunk_id] - score) < 1e-9, chunk_id


def test_words_are_cut_folded_and_stemmed_as_fts5s_porter_unicode61_tokenizer_did() -> None:
    oracle = sqlite3.connect(":memory:")
    oracle.execute("CREATE VIRTUAL TABLE t USING fts5(words, tokenize='porter unicode61 remove_diacritics 2')")
    oracle.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(t, 'instance')")
    for text in ("snake_case_name, __init__ and GATE_RETRY_COUNT", "p53 il-6 2019 1st 3.14 x2 ٣٤٥",
                 "Café naïve Ångström élan", "Relational bookings expire; conditional hoping hopping",
                 "biology biological technologies possibly possible flexibly responsibly assemblies apologie"):
        oracle.execute("DELETE FROM t")
        oracle.execute("INSERT INTO t(rowid, words) VALUES (1, ?)", (text,))
        assert analyse(text) == [r[0] for r in oracle.execute("SELECT term FROM terms ORDER BY offset")], text


def test_counting_a_questions_terms_by_their_prefixes_agrees_with_analysing_the_whole_text() -> None:
    from citewell.samples import texts as samples

    ascii = ("days ays keys ties dies eyes happy happily sensibility ability relational conditional generalization "
             "hoping hopping agreed feed lying sky oscillators a an at by 6 il-6 p53 elan naive snake_case_name _days "
             "biology biological technologies possibly possible flexibly responsibly assemblies")
    beyond = "Élan naïve über café x² ﬁle days elan naive cafe"  # folded letters anywhere in a word
    texts = [ascii, beyond, samples.NORTHPIER_HANDBOOK, samples.BLUEFEN_HANDBOOK, samples.RUNBOOK_HTML, samples.ERROR_CODES_CSV]
    for text in texts:
        analysed = analyse(text)
        every = sorted(set(analysed))
        for start in range(0, len(every), 7):  # questions of seven terms, long and short ones mixed
            terms = every[start : start + 7]
            assert term_counter(terms)(text) == Counter(t for t in analysed if t in terms), terms
        for term in every:  # and each alone, so no other term's prefix finds its words for it
            assert term_counter([term])(text)[term] == analysed.count(term), term


def test_a_home_in_an_earlier_layout_is_rebuilt_and_its_old_folder_removed(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, [*FILLER, chunk("moorings.md", "Moorings", "Berth 4 takes vessels up to 120 metres.")])
    index.flush()
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


def lexical_writes(home: Path) -> int:
    """How many commits the lexical index has had: counted in index.db's own meta table."""
    row = sqlite3.connect(home / "index.db").execute("SELECT value FROM meta WHERE key = 'lexicon'").fetchone()
    return int(row[0]) if row else 0


def test_a_lexical_folder_removed_by_hand_is_rebuilt_by_the_next_search(tmp_path: Path) -> None:
    import shutil

    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, [*FILLER, chunk("moorings.md", "Moorings", "Berth 4 takes vessels up to 120 metres.")])
    index.flush()
    shutil.rmtree(tmp_path / "lexical" / LAYOUT)  # the mark still says the index is current

    reopened = SqliteSearchIndex(tmp_path / "index.db")
    assert [h.document_id for h in reopened.lexical("berth vessels", STAFF, 5)] == ["moorings.md"]


def test_an_ingest_batch_writes_the_lexical_index_once_and_a_search_finds_every_document(tmp_path: Path, embedder) -> None:
    services = make_services(tmp_path, embedder)
    requests = [IngestRequest(document_id=f"berth-{n}.md", tenant="northpier", allowed_roles=frozenset({"staff"}),
                              data=f"# Berth {n}\n\nBerth {n} takes tankers up to {100 + n} metres.\n".encode(),
                              filename=f"berth-{n}.md") for n in range(12)]

    outcomes = ingest(services, requests)

    assert {o.status for o in outcomes} == {"published"}
    assert lexical_writes(tmp_path) == 1  # one commit for twelve documents, not twelve
    for n in (0, 7, 11):
        assert services.index.lexical(f"{100 + n} metres", STAFF, 1)[0].document_id == f"berth-{n}.md"


def test_rows_not_yet_in_the_lexical_index_are_written_by_the_next_search(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, FILLER)
    before = lexical_writes(tmp_path)

    load(index, [chunk("moorings.md", "Moorings", "Berth 4 takes vessels up to 120 metres.")])
    assert lexical_writes(tmp_path) == before  # published to the table, waiting for the index

    assert [h.document_id for h in SqliteSearchIndex(tmp_path / "index.db").lexical("berth vessels", STAFF, 3)] == [
        "moorings.md"]
    assert lexical_writes(tmp_path) == before + 1


def test_the_lexical_index_is_written_once_enough_rows_wait(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "index.db")
    rows = [chunk(f"note-{n}.md", "Notes", f"Note {n} on the tide tables.") for n in range(FLUSH_ROWS)]
    load(index, rows[: FLUSH_ROWS - 1])
    assert lexical_writes(tmp_path) == 0
    load(index, rows[FLUSH_ROWS - 1 :])
    assert lexical_writes(tmp_path) == 1


def test_a_document_deleted_before_it_reached_the_lexical_index_leaves_no_byte_behind(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, FILLER)
    index.lexical("leave", STAFF, 1)  # the filler is in the lexical index
    load(index, [chunk("secret.md", "Secret", "The quillaby codeword opens the east gate.")])

    index.delete_document("northpier", "secret.md")
    assert index.compact(removed=True)

    assert index.lexical("quillaby codeword", STAFF, 3) == []
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"quillaby" not in path.read_bytes(), path


def test_a_revision_indexed_again_replaces_its_rows_in_the_lexical_index_even_when_it_must_be_rebuilt(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "index.db")
    moorings = chunk("moorings.md", "Moorings", "Berth 4 takes vessels up to 120 metres.")
    load(index, [*FILLER, moorings])
    index.flush()
    (tmp_path / "lexical" / "synced").write_text("dirty")  # a write died: the next one rebuilds first

    load(index, [moorings])  # the same revision again (a redelivered message)

    hits = index.lexical("berth vessels metres", STAFF, 5)
    assert [h.document_id for h in hits] == ["moorings.md"]
    from citewell.index.lexical import TantivyLexicon

    lexicon = TantivyLexicon(tmp_path / "lexical" / LAYOUT)
    lexicon.refresh()
    assert lexicon.index.searcher().num_docs == len(FILLER) + 1  # no row of the first indexing left behind


def test_vectors_read_in_slices_keep_each_row_with_its_tenant_roles_and_vector(tmp_path: Path, monkeypatch) -> None:
    from citewell.index import vectors as vector_rows

    monkeypatch.setattr(vector_rows, "LOAD_SLICE", 3)  # ten rows over four slices
    index = SqliteSearchIndex(tmp_path / "index.db")
    rows = [chunk(f"note-{n}.md", "Notes", f"Note {n}.") for n in range(10)]
    rows = [r.model_copy(update={"tenant": "bluefen"}) if n % 3 == 0 else r for n, r in enumerate(rows)]
    vectors = np.eye(10, 384, dtype=np.float32)
    index.upsert(rows, vectors, MODEL)
    bluefen = Identity(tenant="bluefen", roles=frozenset({"staff"}))

    for n, row in enumerate(rows):
        caller, other = (bluefen, STAFF) if row.tenant == "bluefen" else (STAFF, bluefen)
        assert [h.document_id for h in index.vector(vectors[n], MODEL, caller, 1)] == [row.document_id]
        assert row.document_id not in [h.document_id for h in index.vector(vectors[n], MODEL, other, 10)]


CRASH_AFTER_LEXICAL_COMMIT = """
import os, sys
from pathlib import Path
from citewell.index import lexical
from citewell.index.sqlite import SqliteSearchIndex

write = lexical.TantivyLexicon.write

def write_then_die(self, *args, **kwargs):
    write(self, *args, **kwargs)
    os._exit(9)  # killed between the lexical commit and the table's commit

lexical.TantivyLexicon.write = write_then_die
SqliteSearchIndex(Path(sys.argv[1])).delete_document("northpier", "moorings.md")
"""


def test_a_delete_killed_between_the_lexical_commit_and_the_tables_is_repaired_by_the_next_search(tmp_path: Path) -> None:
    import subprocess
    import sys

    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, [*FILLER, chunk("moorings.md", "Moorings", "Berth 4 takes vessels up to 120 metres.")])
    index.flush()

    died = subprocess.run([sys.executable, "-c", CRASH_AFTER_LEXICAL_COMMIT, str(tmp_path / "index.db")], check=False)
    assert died.returncode == 9
    assert index.count("northpier", "moorings.md", "r1") == 1  # the table's delete never committed

    hits = SqliteSearchIndex(tmp_path / "index.db").lexical("berth vessels", STAFF, 3)
    assert [h.document_id for h in hits] == ["moorings.md"]


def test_rows_a_lane_still_holds_but_the_table_no_longer_gives_the_caller_are_never_returned(tmp_path: Path) -> None:
    # The lanes' own copies (tantivy's index, the vector rows in memory) can trail the table: the
    # table decides. Here the table is changed behind both copies' backs.
    index = SqliteSearchIndex(tmp_path / "index.db")
    load(index, VARIED)
    index.flush()
    query = np.eye(len(VARIED), 384, dtype=np.float32)[1]  # fees.md's vector
    assert "fees.md" in {h.document_id for h in index.lexical("mooring fees", STAFF, 10)}
    assert index.vector(query, MODEL, STAFF, 1)[0].document_id == "fees.md"
    with sqlite3.connect(tmp_path / "index.db") as table:
        table.execute("DELETE FROM chunk_roles WHERE chunk_rowid = (SELECT rowid FROM chunks WHERE document_id = 'fees.md')")
        table.execute("INSERT INTO chunk_roles (role, chunk_rowid) SELECT 'hr', rowid FROM chunks WHERE document_id = 'moorings.md'")
        table.execute("DELETE FROM chunk_roles WHERE role = 'staff' AND chunk_rowid = (SELECT rowid FROM chunks WHERE document_id = 'moorings.md')")
    for hits in (index.lexical("mooring fees", STAFF, 10), index.vector(query, MODEL, STAFF, 10)):
        assert not {"fees.md", "moorings.md"} & {h.document_id for h in hits}
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_looking_for_rows_that_wait_for_vectors_costs_the_waiting_rows_not_the_corpus(tmp_path: Path) -> None:
    """Every search asks how many of the caller's documents still wait for vectors. Left to the
    planner, that join walked every row of the caller's tenant to probe for waiting ones: 4 s a
    search at 1M chunks (benchmarks.filter_speed). Counted in SQLite's virtual-machine steps,
    not in time: the work must not grow with the corpus."""

    def steps(index: SqliteSearchIndex, call) -> int:  # type: ignore[no-untyped-def]
        counted = [0]

        def tick() -> int:
            counted[0] += 1
            return 0

        index.conn.set_progress_handler(tick, 10)
        try:
            call()
        finally:
            index.conn.set_progress_handler(None, 10)
        return counted[0]

    small, large = SqliteSearchIndex(tmp_path / "small.db"), SqliteSearchIndex(tmp_path / "large.db")
    load(small, [chunk(f"doc-{n}.md", "Handbook", f"Depot note {n}.") for n in range(10)])
    for start in range(0, 3000, 500):
        load(large, [chunk(f"doc-{n}.md", "Handbook", f"Depot note {n}.") for n in range(start, start + 500)])
    for index in (small, large):
        assert index.vectorless_documents(STAFF) == 0 and index.vectorless() == []
    few, many = steps(small, lambda: small.vectorless_documents(STAFF)), steps(large, lambda: large.vectorless_documents(STAFF))
    assert many <= few + 5, (few, many)
    few, many = steps(small, small.vectorless), steps(large, large.vectorless)
    assert many <= few + 5, (few, many)
