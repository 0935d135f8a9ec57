"""Section-first chunking under a token budget, with sentence-aligned overlap.

Sections are never mixed in one chunk. Inside a section, blocks (paragraphs, list items,
records) are packed greedily; a block over budget is cut at sentence boundaries, a sentence
over budget at word boundaries, and a word over budget (a long unbroken line) by characters.
Spans tile the extracted text, so each chunk's body (the part after its overlap)
concatenates back into the text exactly.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from citewell.models.chunks import Chunk
from citewell.models.documents import Document
from citewell.models.parsed import Block, BlockKind, ParsedDocument
from citewell.ports import TokenCounter
from citewell.settings import DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP_TOKENS

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_OVERLAP_TOKENS", "Chunker", "ChunkingConfig"]
_WORD_BREAK = re.compile(r"\S+\s*")
# Characters handed to the token counter per call. A tokenizer holds about 150 bytes per
# character it encodes at once, so a document on one line, counted whole, cost 150 times
# its size in memory; in windows, the cost no longer grows with the document.
MEASURE_WINDOW = 16_384


@dataclass(frozen=True)
class ChunkingConfig:
    max_tokens: int = DEFAULT_MAX_TOKENS
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS

    def __post_init__(self) -> None:
        if self.max_tokens < 8 or not 0 <= self.overlap_tokens < self.max_tokens // 2:
            raise ValueError("max_tokens must be at least 8 and overlap_tokens under half of it")


REPORT_EVERY = 65_536  # characters between two progress reports


@dataclass(frozen=True)
class _Span:
    """``tokens`` is exact within the budget; over it, a lower bound still over it (see
    :meth:`Chunker._measure`), since a span over budget is split and its count not used again."""

    start: int
    end: int
    tokens: int


@lru_cache(maxsize=1)
def _segmenter() -> Any:  # pysbd's Segmenter (the package ships no types)
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


# Where chunking of the current document has got to (a character offset), for a progress
# display: a 20 MB file takes minutes here. Per context, as servers chunk in several threads.
_reached: ContextVar[Callable[[int], None] | None] = ContextVar("chunking_reached", default=None)


def _reach(offset: int) -> None:
    report = _reached.get()
    if report is not None:
        report(offset)


SENTENCE_WINDOW = 2000  # pysbd's time grows with the square of its input: feed it windows


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentences of ``text[start:end]`` as absolute spans that tile it (pysbd boundaries).

    Long spans are segmented a window at a time: the last sentence of a window is carried
    into the next one, so boundaries are the ones pysbd finds with whole sentences around
    them, and the cost stays linear in the length. A line break inside a paragraph is read
    as a space (hard-wrapped text), so no sentence starts at a wrap; one before a list item
    still ends the line's sentence.
    """
    end = len(text) if end is None else end
    starts: list[int] = []
    position = start
    while position < end:
        stop = end if end - position <= SENTENCE_WINDOW else _space_before(text, position, position + SENTENCE_WINDOW)
        found = _pysbd_starts(text, position, stop)
        _reach(stop)
        if stop == end:
            starts.extend(found)
            break
        if len(found) > 1:
            starts.extend(found[:-1])
            position = found[-1]  # the window's last sentence may go on: segment it again
        else:  # one sentence longer than the window: it is over any budget and will be cut by words
            starts.extend(found)
            position = stop
    return _tile(starts, start, end)


def _cut_after_space(text: str, start: int, end: int) -> int:
    """Where the window from ``start`` ends: after its last space or line break, else after
    the first one past it (a run without whitespace is not cut), else at ``end``."""
    if end - start <= MEASURE_WINDOW:
        return end
    high = start + MEASURE_WINDOW
    cut = max(text.rfind(" ", start, high), text.rfind("\n", start, high))
    if cut < 0:
        ahead = [i for i in (text.find(" ", high, end), text.find("\n", high, end)) if i >= 0]
        cut = min(ahead) if ahead else end - 1
    return cut + 1


def _space_before(text: str, low: int, high: int) -> int:
    cut = text.rfind(" ", low + 1, high)
    return cut + 1 if cut > low else high


# A line break between two lines of a paragraph is a hard wrap, not a sentence end, unless
# the next line opens a list item. Replaced by a space (same length, so offsets hold).
_SOFT_WRAP = re.compile(r"(?<=\S)([ \t]*)\n(?=[ \t]*(?!(?:[-*+\u2022]|\d{1,3}[.)]|\(?[a-z]\))\s)\S)")


def _unwrap(piece: str) -> str:
    return _SOFT_WRAP.sub(lambda m: m.group(1) + " ", piece) if "\n" in piece else piece


def _pysbd_starts(text: str, start: int, end: int) -> list[int]:
    """Sentence starts in ``text[start:end]``. pysbd's processor is called directly: its
    ``segment`` maps sentences back with one regex per sentence over the whole input,
    which costs as much again as the segmentation."""
    piece = _unwrap(text[start:end])
    starts, cursor = [], 0
    for sentence in _segmenter().processor(piece).process() or []:
        stripped = sentence.replace("\r", "\n").strip()
        if not stripped:
            continue
        found = piece.find(stripped, cursor)
        if found < 0:
            continue
        starts.append(start + found)
        cursor = found + len(stripped)
    return starts


def _tile(starts: list[int], start: int, end: int) -> list[tuple[int, int]]:
    cuts = sorted({start, *(s for s in starts if start < s < end)})
    return list(zip(cuts, cuts[1:] + [end]))


_SERIES = {BlockKind.LIST_ITEM, BlockKind.TABLE_ROW, BlockKind.RECORD}


def _block_at(blocks: Sequence[Block], starts: list[int], offset: int) -> Block | None:
    i = bisect_right(starts, offset) - 1
    return blocks[i] if i >= 0 and blocks[i].start <= offset < blocks[i].end else None


def _continues(text: str, blocks: Sequence[Block], starts: list[int], start: int, end: int, next_body: int) -> bool:
    """Whether what a chunk ends in goes on in the next one: a list, table or set of records
    whose items run on, or an introduction ending in a colon. (Prose cut between sentences
    does not count: its overlap carries the context.) Looks only at the characters around
    the cut, so the cost per chunk does not grow with the document."""
    last = end - 1
    while last >= start and text[last].isspace():
        last -= 1
    if last >= start and text[last] == ":":
        return True
    first = next_body
    while first < len(text) and text[first].isspace():
        first += 1
    before, after = _block_at(blocks, starts, last), _block_at(blocks, starts, first)
    return before is not None and after is not None and before.kind in _SERIES and after.kind is before.kind


def _starts(covered: Sequence[Block], start: int, field: str) -> list[tuple[int, int]]:
    """Where each page (or row) of the blocks a chunk covers begins, as ``(offset into the chunk's
    text, value)``: an entry where the value changes. Empty when the chunk holds at most one value,
    which its ``pages`` (or ``rows``) say exactly: most PDF chunks sit on one page and pay nothing."""
    found: list[tuple[int, int]] = []
    for block in covered:
        value = getattr(block, field)
        if value is not None and (not found or found[-1][1] != value):
            found.append((max(0, block.start - start), value))
    return found if len({v for _, v in found}) > 1 else []


class Chunker:
    """Turns one parsed revision into chunks; access fields come from the upload being published."""

    def __init__(self, count_tokens: TokenCounter, config: ChunkingConfig | None = None) -> None:
        self.count_tokens = count_tokens
        self.config = config or ChunkingConfig()

    def chunk(self, parsed: ParsedDocument, document: Document, revision: str,
              progress: Callable[[int, int], None] | None = None) -> list[Chunk]:
        """``progress(done, total)`` hears, in characters of the text, how far chunking has got."""
        if progress is None:
            return self._chunk(parsed, document, revision)
        total, furthest = len(parsed.text), [0]

        def reached(offset: int) -> None:
            if offset > furthest[0] + REPORT_EVERY or offset >= total:
                furthest[0] = offset
                progress(min(offset, total), total)

        token = _reached.set(reached)
        try:
            found = self._chunk(parsed, document, revision)
        finally:
            _reached.reset(token)
        progress(total, total)
        return found

    def _chunk(self, parsed: ParsedDocument, document: Document, revision: str) -> list[Chunk]:
        text = parsed.text
        blocks = parsed.blocks  # in text order and disjoint, so starts and ends are both sorted
        starts, ends = [b.start for b in blocks], [b.end for b in blocks]
        chunks: list[Chunk] = []
        for section_index, section in enumerate(parsed.sections):
            inside = starts[bisect_right(starts, section.start) : bisect_left(starts, section.end)]
            spans = self._bounded(text, _tile(inside, section.start, section.end))
            packed = self._pack(spans)
            for index, (start, body_start, end) in enumerate(packed):
                covered = blocks[bisect_right(ends, start) : bisect_left(starts, end)]
                following = packed[index + 1][1] if index + 1 < len(packed) else None
                chunks.append(
                    Chunk(
                        chunk_id=Chunk.make_id(document.document_id, section_index, index),
                        document_id=document.document_id,
                        tenant=document.tenant,
                        allowed_roles=document.allowed_roles,
                        revision=revision,
                        title=document.title,
                        section_index=section_index,
                        index=index,
                        heading_path=section.heading_path,
                        start=start,
                        end=end,
                        body_start=body_start,
                        text=text[start:end],
                        pages=sorted({b.page for b in covered if b.page is not None}),
                        sheet=next((b.sheet for b in covered if b.sheet), None),
                        rows=[b.row for b in covered if b.row is not None],
                        continues=following is not None and _continues(text, blocks, starts, start, end, following),
                        page_starts=_starts(covered, start, "page"),
                        row_starts=_starts(covered, start, "row"),
                        ocr_confidence=min((b.ocr_confidence for b in covered if b.ocr_confidence is not None),
                                           default=None),
                    )
                )
        return chunks

    # -- splitting: every span ends up within budget --------------------------------------

    def _measure(self, text: str, bounds: Sequence[tuple[int, int]]) -> list[_Span]:
        """Token counts of the spans, a window of characters per call to the counter; a span
        longer than the window is counted by :meth:`_count_long`."""
        out: list[_Span] = []
        group: list[tuple[int, int]] = []  # spans counted in the next call, together within the window

        def flush() -> None:
            counts = self.count_tokens([text[s:e] for s, e in group]) if group else []
            out.extend(_Span(s, e, n) for (s, e), n in zip(group, counts))
            if group:
                _reach(group[-1][1])
            group.clear()

        for start, end in bounds:
            if end - start > MEASURE_WINDOW:
                flush()
                out.append(_Span(start, end, self._count_long(text, start, end)))
                continue
            if group and end - group[0][0] > MEASURE_WINDOW:  # spans come in text order: this covers their lengths
                flush()
            group.append((start, end))
        flush()
        return out

    def _count_long(self, text: str, start: int, end: int) -> int:
        """Counts a window at a time, cut after a space or line break, until past the budget.

        The tokenizer splits words at whitespace and encodes each word alone, so what a cut
        after whitespace leaves before it never counts more than the whole: past the budget
        there, the span is over budget, and that is all the caller needs. A span that stays
        within it is counted again whole, exactly."""
        limit, total, position = self.config.max_tokens, 0, start
        while position < end:
            stop = _cut_after_space(text, position, end)
            total += self.count_tokens([text[position:stop]])[0]
            if total > limit:
                return total
            position = stop
        return self.count_tokens([text[start:end]])[0]

    def _bounded(self, text: str, bounds: list[tuple[int, int]]) -> list[_Span]:
        limit = self.config.max_tokens
        out: list[_Span] = []
        for span in self._measure(text, bounds):
            if span.tokens <= limit:
                out.append(span)
                continue
            sentences = sentence_spans(text, span.start, span.end)
            if len(sentences) > 1:
                out.extend(self._bounded(text, sentences))
            else:
                out.extend(self._words(text, span))
        return out

    def _words(self, text: str, span: _Span) -> list[_Span]:
        """A sentence over budget: pack whole words; a single word over budget is cut by characters."""
        limit = self.config.max_tokens
        words = [(m.start(), m.end()) for m in _WORD_BREAK.finditer(text, span.start, span.end)]
        if not words or words[0][0] != span.start:
            words.insert(0, (span.start, words[0][0] if words else span.end))
        measured = self._measure(text, words)
        out: list[_Span] = []
        for word in measured:
            if word.tokens > limit:
                out.extend(self._characters(text, word))
            else:
                out.append(word)
        return self._merge(out)

    def _characters(self, text: str, span: _Span) -> list[_Span]:
        size = max(1, self.config.max_tokens // 2)
        while True:
            bounds = [(s, min(s + size, span.end)) for s in range(span.start, span.end, size)]
            pieces = self._measure(text, bounds)
            if all(p.tokens <= self.config.max_tokens for p in pieces) or size == 1:
                return pieces
            size //= 2

    def _merge(self, spans: list[_Span]) -> list[_Span]:
        """Rejoin adjacent small spans (words) into runs within budget."""
        merged: list[_Span] = []
        for span in spans:
            if merged and merged[-1].tokens + span.tokens <= self.config.max_tokens:
                last = merged[-1]
                merged[-1] = _Span(last.start, span.end, last.tokens + span.tokens)
            else:
                merged.append(span)
        return merged

    # -- packing: greedy, with whole-span overlap ------------------------------------------

    def _pack(self, spans: list[_Span]) -> list[tuple[int, int, int]]:
        """Returns ``(start, body_start, end)`` per chunk."""
        limit, overlap = self.config.max_tokens, self.config.overlap_tokens
        chunks: list[tuple[int, int, int]] = []
        current: list[_Span] = []
        carried = 0  # how many spans at the head of ``current`` repeat the previous chunk
        for span in spans:
            if current and sum(s.tokens for s in current) + span.tokens > limit:
                chunks.append((current[0].start, current[carried].start, current[-1].end))
                tail: list[_Span] = []
                for prev in reversed(current[carried:]):
                    if sum(s.tokens for s in tail) + prev.tokens > overlap:
                        break
                    tail.insert(0, prev)
                while tail and sum(s.tokens for s in tail) + span.tokens > limit:
                    tail.pop(0)
                current, carried = tail, len(tail)
            current.append(span)
        if current:
            chunks.append((current[0].start, current[carried].start, current[-1].end))
        return chunks
