"""The lexical lane's engine: tantivy segments in a folder beside ``index.db``.

FTS5 computes bm25 for every match before it sorts (84 ms at 200k chunks); tantivy ranks in
Rust with top-k pruning. The access fields (tenant, roles, status) are indexed terms, and the
top k is computed over the caller's rows only: required terms of the ranked query, or, for a
caller who may read most rows, the same terms required of the rows the words alone ranked
first (see ``TantivyLexicon._ranked``).

A chunk's context (title, headings) and body are analysed as one text, as FTS5's bm25 saw a
row: one term frequency and one length per chunk (two fields scored apart count a word twice
when the title and body both hold it; SciFact's BM25 nDCG@10 fell from 0.694 to 0.656 that way).
Words are analysed here, in Python, as FTS5's ``porter unicode61 remove_diacritics 2`` did
(lowercased, diacritics folded, Porter-stemmed), and tantivy indexes the result split on
spaces. Tantivy keeps a chunk's length in one byte, so its BM25 is approximate: its pruned top
candidates are scored again with exact lengths and FTS5's idf, so every score returned is
FTS5's; which rows reach the top k at its edge still follows tantivy's order (at the lane's
depth of 50, SciFact's top 10 matched FTS5's in 191 of 200 queries), and SciFact's and
Cranfield's figures are FTS5's (docs/measurements.md). ``LAYOUT`` names the
folder of the current layout; a home with another layout is rebuilt and the old folder removed.

The rows themselves stay in ``index.db``, the source of truth: this index holds only their
rowid, access fields and analysed words (no stored text), and every hit is checked against
the table again. A deletion is made physical by rewriting each segment that held a removed
row (its live rows are indexed again from the table and the old segment is dropped whole),
so no term of removed text stays in a segment file.

``tantivy`` is imported here only, and this module only when a lexical search or write runs,
so commands that never touch the lane do not pay for it.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import tantivy

from citewell.terms import FUNCTION_WORDS, words

ANALYZER = "citewell_words"
LAYOUT = "tantivy-5"  # the index folder's name: changed with the schema or the analyser, so old homes rebuild
WRITER_HEAP = 64_000_000  # bytes: fewer, larger segments per write than tantivy's minimum
# The words ranked alone (block-max WAND) for a caller who may read most rows: this many times
# deeper than k over the caller's share, and at most ``PRUNED_MOST`` times k (a caller with a
# smaller share goes to the filtered query directly); not on an index of fewer rows than
# ``PRUNED_FROM``, where scoring every match costs no more than the check (at 50,000 chunks, 2.4
# against 2.8 ms a lane; at 200,001, 6.1 against 3.8).
PRUNED_DEPTH = 2
PRUNED_MOST = 8
PRUNED_FROM = 100_000
LONGEST_TERM = 40  # characters: longer runs (hashes, base64) are not words anyone searches for
K1, B = 1.2, 0.75  # FTS5's and Lucene's BM25 defaults
# A word as FTS5's unicode61 tokenizer cut it: letters and digits; an underscore separates
# (``max_retry_count`` is three words, found by a search for "retry").
TOKEN = re.compile(r"[^\W_]+")
# A segment's files: its id (32 hex digits) and a component (``.term``, ``.idx``, ``.store``; ``.N.del``).
_SEGMENT_FILE = re.compile(r"([0-9a-f]{32})\.[\w.]+")


@dataclass(frozen=True)
class LexicalRow:
    rowid: int
    tenant: str
    status: str
    roles: frozenset[str]
    context: str
    body: str


STEM_CACHE = 200_000  # words: a corpus's vocabulary, so a search stems only the words it has not met

_stemmers = threading.local()
_stems: dict[str, str] = {}  # a word (lowercased) -> its term, "" when the index skips it


def _fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


# Martin Porter's own C stemmer, which FTS5 ports, departs from the 1980 paper that snowball's
# "porter" follows in two rules of step 2: "logi" -> "log", and "bli" -> "ble" for the paper's
# "abli" -> "able". Without them "biology" and "biological", "possibly" and "possible" are two
# terms each, where FTS5 made one. The endings step 1 turns into a final "i":
_STEP1_TO_I = frozenset({"i", "y", "is", "ys", "ies", "ieds", "ied", "yed", "ying"})


def _measure(stem: str) -> int:
    """Porter's m: how many vowel-consonant sequences ``stem`` holds (y is a vowel after a consonant)."""
    vowels: list[bool] = []
    for i, c in enumerate(stem):
        vowels.append(c in "aeiou" or (c == "y" and i > 0 and not vowels[-1]))
    return sum(1 for a, b in zip(vowels, vowels[1:]) if a and not b)


def _martin(stemmer: Any, word: str, stem: str) -> str:
    """``stem`` as FTS5's stemmer made it: the two rules applied where step 1 left "logi" or
    "bli" (the paper's stemmer then changes nothing more). Checked against FTS5 on the 44,802
    words of the SciFact, Cranfield and SQuAD texts and the embedder's vocabulary: all agree
    but "eed", which FTS5 alone stems to "e"."""
    if not stem.endswith(("logi", "bli")) or word[len(stem) - 1 :] not in _STEP1_TO_I:
        return stem
    if not word.startswith(stem[:-1]):
        return stem
    if stem.endswith("logi") and _measure(stem[:-4]) > 0:
        return stem[:-1]
    if stem.endswith("bli") and not stem.endswith("abli") and _measure(stem[:-3]) > 0:
        return str(stemmer.stemWord(stem[:-1] + "e"))  # steps 3 to 5 on "...ble", as FTS5 ran them
    return stem


def _term(word: str) -> str:
    """A lowercased word's term: diacritics folded and Porter-stemmed, as FTS5's ``porter
    unicode61 remove_diacritics 2`` made it (words under three letters are not stemmed)."""
    term = _stems.get(word)
    if term is None:
        folded = word if word.isascii() else _fold(word)
        if not 0 < len(folded) <= LONGEST_TERM:
            term = ""
        elif len(folded) < 3:
            term = folded
        else:
            stemmer = getattr(_stemmers, "porter", None)
            if stemmer is None:  # a stemmer object is not safe to share between threads
                import snowballstemmer  # the C stemmer (PyStemmer) when installed

                stemmer = _stemmers.porter = snowballstemmer.stemmer("porter")
            term = _martin(stemmer, folded, stemmer.stemWord(folded))
        if len(_stems) < STEM_CACHE:
            _stems[word] = term
    return term


def analyse(text: str) -> list[str]:
    """The terms of ``text`` as the index holds them, in order."""
    return [t for t in map(_term, TOKEN.findall(text.lower())) if t]


def term_counter(terms: Iterable[str]) -> Callable[[str], Counter[str]]:
    """How often each of ``terms`` occurs in a text, as :func:`analyse` would count it.

    Tokenising every candidate's whole text costs more than tantivy's search; instead each word
    that could yield a term is found by substring search. Porter stemming rewrites at most the
    last two letters of what it keeps, and a term of three letters or more begins with its
    word's first two (checked on the 41,471 words of the SciFact, Cranfield, SQuAD and answer-set
    texts, and in tests), so such a word starts with the term less two letters, two at least.
    Shorter terms ("ays" gives "ai"), and texts beyond ASCII (folding changes letters anywhere),
    take the whole-text path."""
    wanted = frozenset(terms)
    prefixes = sorted({term[: max(len(term) - 2, 2)] for term in wanted})

    def everywhere(text: str) -> Counter[str]:
        counts: Counter[str] = Counter()
        for word, times in Counter(TOKEN.findall(text.lower())).items():
            term = _term(word)
            if term in wanted:
                counts[term] += times
        return counts

    def found(text: str) -> Counter[str]:
        if not text.isascii():
            return everywhere(text)
        lowered = text.lower()
        started: set[int] = set()  # where a counted word begins
        counts: Counter[str] = Counter()
        for prefix in prefixes:
            at = lowered.find(prefix)
            while at != -1:
                before = lowered[at - 1] if at else " "
                if before.isalnum():  # inside a word
                    at = lowered.find(prefix, at + 1)
                    continue
                word = TOKEN.match(lowered, at)
                assert word is not None  # the prefix is made of letters and digits
                if at not in started:  # two prefixes can begin the same word
                    started.add(at)
                    term = _term(word.group())
                    if term in wanted:
                        counts[term] += 1
                at = lowered.find(prefix, word.end())
        return counts

    return found if all(len(term) > 2 for term in wanted) else everywhere


def _analyzer() -> tantivy.TextAnalyzer:
    """Text already analysed by :func:`analyse`: its terms are separated by spaces."""
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()


@dataclass(frozen=True)
class Statistics:
    """What exact BM25 needs of the whole index: its row count and mean length in terms."""

    rows: int
    mean_length: float


def _whole_numbers(searcher: tantivy.Searcher, field: str, addresses: list[tantivy.DocAddress]) -> list[int]:
    """An unsigned fast field's values at ``addresses``: tantivy types them as any fast field's
    (int, float, bool or None), but every row of this schema holds its rowid and length."""
    return [int(cast(int, v)) for v in searcher.fast_field_values(field, addresses)]


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("rowid", indexed=True, fast=True)
    for name in ("tenant", "role", "status"):
        builder.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("words", stored=False, tokenizer_name=ANALYZER, index_option="freq")
    builder.add_unsigned_field("length", fast=True)  # terms in the row, exactly: the mean length's sum
    return builder.build()


def text_of(context: str, body: str) -> str:
    """The one text of a row that the index analyses and scores."""
    return f"{context}\n{body}"


class TantivyLexicon:
    """One home's lexical index. Writers must hold ``index.db``'s write lock (tantivy allows
    one writer per folder, and the table's transaction serialises them across processes)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.schema = _schema()
        self.index = tantivy.Index(self.schema, path=str(folder), reuse=True)
        self.index.register_tokenizer(ANALYZER, _analyzer())
        self._seen: tuple[int, int, int] | None = None
        self._statistics: Statistics | None = None
        self._lock = threading.Lock()

    # -- reads ---------------------------------------------------------------------------

    def terms(self, text: str) -> list[str]:
        """The question's content words (all of them if it has no other), analysed as the index is."""
        every = list(dict.fromkeys(words(text)))
        kept = [t for t in every if t not in FUNCTION_WORDS] or every
        return list(dict.fromkeys(analyse(" ".join(kept))))

    def refresh(self) -> None:
        """See the last committed state (another process's writes included)."""
        self.index.reload()

    def _searcher(self) -> tuple[tantivy.Searcher, Statistics]:
        """The last committed state and its statistics, counted on that state's own searcher.

        One lock orders the stat, the reload and the counting: a thread still holding an older
        searcher never counts for the newer index. The stat comes before the reload, so a
        commit landing in between makes the next search count again; this one counts again
        when its searcher holds another number of rows than the figures were counted on."""
        with self._lock:
            try:
                found = os.stat(self.folder / "meta.json")
                seen = (found.st_ino, found.st_mtime_ns, found.st_size)
            except FileNotFoundError:
                seen = None
            self.index.reload()
            searcher = self.index.searcher()
            if (seen is None or seen != self._seen or self._statistics is None
                    or searcher.num_docs != self._statistics.rows):
                total = searcher.aggregate(tantivy.Query.all_query(), {"terms": {"sum": {"field": "length"}}})
                rows = searcher.num_docs
                self._statistics = Statistics(rows, float(total["terms"]["value"] or 0.0) / max(rows, 1))
                self._seen = seen
            return searcher, self._statistics

    def search(
        self, terms: Sequence[str], tenant: str, roles: Iterable[str], k: int,
        texts: Callable[[list[int]], Mapping[int, str]], within: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` rows of the tenant, readable by one of ``roles`` and live: rowids and
        exact BM25 scores, best first, among ``within`` (rowids: a query filter's) when given.
        The top k is chosen among the caller's rows only (see :meth:`_ranked`); ``texts`` gives
        the candidates' words (context and body) to score them exactly."""
        roles = sorted(roles)
        if not terms or not roles or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        searcher, statistics = self._searcher()
        # tantivy's own top k, re-scored exactly: its one-byte lengths reorder rows but seldom
        # change which are in the top k (SciFact and Cranfield gave the same figures from 2k).
        hits = self._ranked(searcher, terms, tenant, roles, k, within)
        if not hits:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        rowids = _whole_numbers(searcher, "rowid", hits)
        lengths = _whole_numbers(searcher, "length", hits)
        found = texts(rowids)
        kept = [i for i, rowid in enumerate(rowids) if rowid in found]  # gone from the table since: not a hit
        scores = _bm25(searcher, statistics, terms, [found[rowids[i]] for i in kept], [lengths[i] for i in kept])
        ids = np.array([rowids[i] for i in kept], dtype=np.int64)
        best = np.lexsort((ids, -scores))[:k]
        return ids[best], scores[best]

    def _ranked(
        self, searcher: tantivy.Searcher, terms: Sequence[str], tenant: str, roles: Sequence[str], k: int,
        within: np.ndarray | None,
    ) -> list[tantivy.DocAddress]:
        """tantivy's best ``k`` of the caller's rows, best first.

        The access terms (and ``within``) as required clauses of the ranked query choose the top k
        among the caller's rows, but a boolean query with required clauses scores every row that
        holds a word (at 1M chunks, 15 of the lane's 21 ms): tantivy prunes with block-max WAND
        only a disjunction of terms alone. So when the caller may read most rows, the words alone
        are ranked first, ``PRUNED_DEPTH`` times deeper than the caller's share needs, and the
        caller's rows among them found in rank order (as many as are missing at a time) with the
        same access terms, required, on those rows only: when k are there (or the words matched
        no more rows than that), they are the caller's top k, since every row further down scores
        no more. Otherwise, and for a caller who may read a small share, the filtered query ranks."""
        schema, Occur, Query = self.schema, tantivy.Occur, tantivy.Query
        words = Query.boolean_query([(Occur.Should, Query.term_query(schema, "words", term)) for term in terms])
        # Roles as a disjunction of term queries, not a term-set query: the term set scores
        # through a bitset of every row and halves the lane's speed at 200k chunks.
        allowed = [
            Query.term_query(schema, "tenant", tenant),
            Query.boolean_query([(Occur.Should, Query.term_query(schema, "role", role)) for role in roles]),
            Query.term_query(schema, "status", "live"),
        ]
        filters = [(Occur.Must, Query.const_score_query(q, 0.0)) for q in allowed]
        if within is None:
            depth = self._pruned_depth(searcher, tenant, roles, k)
            if depth:
                ranked = [address for _, address in searcher.search(words, limit=depth, count=False).hits]
                if not ranked:
                    return []
                rowids, chosen, taken = _whole_numbers(searcher, "rowid", ranked), list[tantivy.DocAddress](), 0
                while taken < len(ranked) and len(chosen) < k:  # once when the caller may read them all
                    part = slice(taken, taken + k - len(chosen))
                    candidates = Query.term_set_query(schema, "rowid", rowids[part])
                    readable = searcher.search(Query.boolean_query([(Occur.Must, candidates), *filters]),
                                               limit=len(rowids[part]), count=False).hits
                    mine = {(a.segment_ord, a.doc) for _, a in readable}
                    chosen += [a for a in ranked[part] if (a.segment_ord, a.doc) in mine]
                    taken = part.stop
                if len(chosen) >= k or len(ranked) < depth:
                    return chosen[:k]
        else:
            filters.append((Occur.Must, Query.const_score_query(
                Query.term_set_query(schema, "rowid", [int(r) for r in within]), 0.0)))
        query = Query.boolean_query([(Occur.Must, words), *filters])
        return [address for _, address in searcher.search(query, limit=k, count=False).hits]

    @staticmethod
    def _pruned_depth(searcher: tantivy.Searcher, tenant: str, roles: Sequence[str], k: int) -> int:
        """How deep to rank the words alone for ``k`` of the caller's rows, 0 for the filtered
        query: the caller's share of the rows bounded from above by the rows of its tenant, of
        its roles and live ones (tantivy's term counts, which hold rows deleted but not yet
        merged away: an estimate, which only picks the way, never the rows)."""
        rows = searcher.num_docs
        if not rows or rows < PRUNED_FROM:
            return 0
        share = min(searcher.doc_freq("tenant", tenant), sum(searcher.doc_freq("role", r) for r in roles),
                    searcher.doc_freq("status", "live")) / rows
        depth = math.ceil(PRUNED_DEPTH * k / share) if share > 0 else 0
        return depth if 0 < depth <= PRUNED_MOST * k else 0

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
        self.refresh()

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
        return _whole_numbers(searcher, "rowid", addresses) if addresses else []

    def collect_garbage(self) -> None:
        """Delete the files of segments no longer in the index (dropped or merged). The caller
        holds the home's write lock, so no writer is adding a segment meanwhile.

        Tantivy collects only the files its list (``.managed.json``) names, and each process keeps
        that list as it read it at open and writes its own copy back: a segment another process
        wrote after this one opened drops off the list and is never collected, its words on disk
        after its rows were deleted. So every segment file that ``meta.json`` does not name goes too.
        """
        writer = self.index.writer(WRITER_HEAP, 1)
        try:
            writer.garbage_collect_files()
        finally:
            writer.wait_merging_threads()
        self._remove_unlisted_segments()

    def _remove_unlisted_segments(self) -> None:
        segments = json.loads((self.folder / "meta.json").read_text())["segments"]
        listed = {segment["segment_id"].replace("-", "") for segment in segments}
        for path in self.folder.iterdir():
            found = _SEGMENT_FILE.fullmatch(path.name)
            if found and found.group(1) not in listed:
                path.unlink(missing_ok=True)

    def clear(self) -> None:
        writer = self.index.writer(WRITER_HEAP, 1)
        try:
            writer.delete_all_documents()
            writer.commit()
        finally:
            writer.wait_merging_threads()
        self.refresh()

    def _document(self, row: LexicalRow) -> tantivy.Document:
        document = tantivy.Document()
        document.add_unsigned("rowid", row.rowid)
        document.add_text("tenant", row.tenant)
        document.add_text("status", row.status)
        for role in sorted(row.roles):
            document.add_text("role", role)
        analysed = analyse(text_of(row.context, row.body))
        document.add_text("words", " ".join(analysed))
        document.add_unsigned("length", len(analysed))
        return document


def _bm25(
    searcher: tantivy.Searcher, statistics: Statistics, terms: Sequence[str], texts: Sequence[str], lengths: Sequence[int]
) -> np.ndarray:
    """Okapi BM25 as FTS5 computes it: idf ln((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    idf = {}
    for term in terms:
        having = searcher.doc_freq("words", term)
        idf[term] = max(math.log((statistics.rows - having + 0.5) / (having + 0.5)), 1e-6)
    scores = np.zeros(len(texts), dtype=np.float64)
    count = term_counter(terms)
    for i, (text, length) in enumerate(zip(texts, lengths)):
        counts = count(text)
        norm = K1 * (1 - B + B * length / max(statistics.mean_length, 1e-9))
        scores[i] = sum(idf[t] * f * (K1 + 1) / (f + norm) for t in terms if (f := counts.get(t, 0)))
    return scores
