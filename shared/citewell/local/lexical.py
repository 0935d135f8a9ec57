"""The lexical lane's engine: tantivy segments in a folder beside ``index.db``.

FTS5 computes bm25 for every match before it sorts (84 ms at 200k chunks); tantivy ranks in
Rust with top-k pruning. The access fields (tenant, roles, status) are indexed terms in the
same boolean query as the words, so the top k is computed over the caller's rows only.

A chunk's context (title, headings) and body are indexed as one field, as FTS5's bm25 saw a row:
one term frequency and one length per chunk. Two fields scored apart count a word twice when
the title and body both hold it, and SciFact's BM25 nDCG@10 fell from 0.694 to 0.656 that way
(docs/measurements.md). ``LAYOUT`` names the folder of the current layout; a home with another
layout is rebuilt from the table and the old folder removed.

The rows themselves stay in ``index.db``, the source of truth: this index holds only their
rowid, access fields and analysed words (no stored text), and every hit is checked against
the table again. A deletion is made physical by rewriting each segment that held a removed
row (its live rows are indexed again from the table and the old segment is dropped whole),
so no term of removed text stays in a segment file.

``tantivy`` is imported here only, and this module only when a lexical search or write runs,
so commands that never touch the lane do not pay for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tantivy

from citewell.terms import FUNCTION_WORDS, words

ANALYZER = "citewell_en"
LAYOUT = "tantivy-2"  # the index folder's name: changed with the schema or the analyser, so old homes rebuild
WRITER_HEAP = 64_000_000  # bytes: fewer, larger segments per write than tantivy's minimum


@dataclass(frozen=True)
class LexicalRow:
    rowid: int
    tenant: str
    status: str
    roles: frozenset[str]
    context: str
    body: str


def _analyzer() -> tantivy.TextAnalyzer:
    """Words as FTS5's unicode61 tokenizer sees them, lowercased, diacritics folded, Porter2-stemmed."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("rowid", indexed=True, fast=True)
    for name in ("tenant", "role", "status"):
        builder.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("words", stored=False, tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


class TantivyLexicon:
    """One home's lexical index. Writers must hold ``index.db``'s write lock (tantivy allows
    one writer per folder, and the table's transaction serialises them across processes)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.schema = _schema()
        self.index = tantivy.Index(self.schema, path=str(folder), reuse=True)
        self.analyzer = _analyzer()
        self.index.register_tokenizer(ANALYZER, self.analyzer)

    # -- reads ---------------------------------------------------------------------------

    def terms(self, text: str) -> list[str]:
        """The question's content words (all of them if it has no other), analysed as the index is."""
        every = list(dict.fromkeys(words(text)))
        kept = [t for t in every if t not in FUNCTION_WORDS] or every
        return list(dict.fromkeys(t for w in kept for t in self.analyzer.analyze(w)))

    def refresh(self) -> None:
        """See the last committed state (another process's writes included)."""
        self.index.reload()

    def search(self, terms: Sequence[str], tenant: str, roles: Iterable[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` rows of the tenant, readable by one of ``roles`` and live: rowids and
        BM25 scores, best first. The access terms are required clauses of the ranked query."""
        roles = sorted(roles)
        if not terms or not roles or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        schema, Occur, Query = self.schema, tantivy.Occur, tantivy.Query
        matching = Query.boolean_query([(Occur.Should, Query.term_query(schema, "words", term)) for term in terms])
        # Roles as a disjunction of term queries, not a term-set query: the term set scores
        # through a bitset of every row and halves the lane's speed at 200k chunks.
        allowed = [
            Query.term_query(schema, "tenant", tenant),
            Query.boolean_query([(Occur.Should, Query.term_query(schema, "role", role)) for role in roles]),
            Query.term_query(schema, "status", "live"),
        ]
        query = Query.boolean_query(
            [(Occur.Must, matching)] + [(Occur.Must, Query.const_score_query(q, 0.0)) for q in allowed]
        )
        searcher = self.index.searcher()
        hits = searcher.search(query, limit=k, count=False).hits
        if not hits:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        rowids = searcher.fast_field_values("rowid", [address for _, address in hits])
        return np.array(rowids, dtype=np.int64), np.array([score for score, _ in hits], dtype=np.float64)

    # -- writes --------------------------------------------------------------------------

    def write(self, added: Iterable[LexicalRow], removed: Sequence[int] = ()) -> None:
        """Remove rows by rowid and add rows, in one commit."""
        writer = self.index.writer(WRITER_HEAP, 1)
        try:
            if removed:
                writer.delete_documents_by_query(tantivy.Query.term_set_query(self.schema, "rowid", list(removed)))
            for row in added:
                writer.add_document(self._document(row))
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()
        self.index.reload()

    def segments_holding(self, rowids: Sequence[int]) -> set[int]:
        """The searcher's ordinals of the segments that hold any of these rows (live ones)."""
        if not rowids:
            return set()
        searcher = self.index.searcher()
        query = tantivy.Query.term_set_query(self.schema, "rowid", list(rowids))
        return {address.segment_ord for _, address in searcher.search(query, limit=len(rowids), count=False).hits}

    def rows_in_segments(self, ordinals: set[int]) -> list[int]:
        """Every live rowid of these segments."""
        if not ordinals:
            return []
        searcher = self.index.searcher()
        hits = searcher.search(tantivy.Query.all_query(), limit=max(searcher.num_docs, 1), count=False).hits
        addresses = [address for _, address in hits if address.segment_ord in ordinals]
        return [int(r) for r in searcher.fast_field_values("rowid", addresses)] if addresses else []

    def collect_garbage(self) -> None:
        """Delete the files of segments no longer in the index (dropped or merged)."""
        writer = self.index.writer(WRITER_HEAP, 1)
        try:
            writer.garbage_collect_files()
        finally:
            writer.wait_merging_threads()

    def clear(self) -> None:
        writer = self.index.writer(WRITER_HEAP, 1)
        try:
            writer.delete_all_documents()
            writer.commit()
        finally:
            writer.wait_merging_threads()
        self.index.reload()

    def _document(self, row: LexicalRow) -> tantivy.Document:
        document = tantivy.Document()
        document.add_unsigned("rowid", row.rowid)
        document.add_text("tenant", row.tenant)
        document.add_text("status", row.status)
        for role in sorted(row.roles):
            document.add_text("role", role)
        document.add_text("words", row.context)  # two values of one field: one frequency, one length
        document.add_text("words", row.body)
        return document
