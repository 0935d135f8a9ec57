"""Chunk offsets, budgets and boundaries, as properties over generated documents."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citewell.chunking import Chunker, ChunkingConfig
from citewell.models.documents import Document
from citewell.models.parsed import BlockKind
from citewell.parsers.builder import TextBuilder

REVISION = "r1"
DOC = Document(document_id="guide.md", tenant="northpier", allowed_roles=frozenset({"staff"}), title="Guide", source="test")

words = st.text(alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=12)
sentences = st.lists(words, min_size=1, max_size=25).map(lambda ws: " ".join(ws) + ".")
paragraphs = st.lists(sentences, min_size=1, max_size=12).map(" ".join)
long_lines = st.text(alphabet="abcdefghij0123456789", min_size=300, max_size=3000)  # no spaces at all
blocks = st.one_of(paragraphs, paragraphs, paragraphs, long_lines)
sections = st.tuples(st.integers(1, 3), words, st.lists(blocks, min_size=1, max_size=6))


def build(doc_sections):
    builder = TextBuilder()
    for level, heading, body in doc_sections:
        builder.heading(level, heading)
        for block in body:
            builder.block(BlockKind.PARAGRAPH, block)
    return builder.build("text/plain")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc_sections=st.lists(sections, min_size=1, max_size=5), budget=st.sampled_from([24, 64, 200]))
def test_chunks_tile_the_text_and_stay_in_budget(embedder, doc_sections, budget):
    parsed = build(doc_sections)
    config = ChunkingConfig(max_tokens=budget, overlap_tokens=budget // 4)
    chunks = Chunker(embedder.count_tokens, config).chunk(parsed, DOC, REVISION)

    # The bodies (each chunk minus its overlap) reassemble the extracted text exactly.
    assert "".join(parsed.text[c.body_start : c.end] for c in chunks) == parsed.text
    for chunk in chunks:
        assert chunk.text == parsed.text[chunk.start : chunk.end]
        assert chunk.start <= chunk.body_start < chunk.end
        assert embedder.count_tokens([chunk.text])[0] <= budget + 2  # word pieces may merge across a cut
        section = parsed.sections[chunk.section_index]
        assert section.start <= chunk.start and chunk.end <= section.end  # never across sections
        assert chunk.heading_path == section.heading_path
        assert chunk.chunk_id == f"guide.md#{chunk.section_index}#{chunk.index}"
    assert len({c.chunk_id for c in chunks}) == len(chunks)


def test_sentences_are_not_cut_when_they_fit(embedder):
    sentences = [f"Sentence number {i} talks about crane {i} and its twistlock sensor." for i in range(40)]
    parsed = build([(1, "Cranes", [" ".join(sentences)])])
    chunks = Chunker(embedder.count_tokens, ChunkingConfig(max_tokens=60, overlap_tokens=15)).chunk(parsed, DOC, REVISION)
    assert len(chunks) > 3
    for chunk in chunks:
        body = parsed.text[chunk.start : chunk.end].strip()
        if body == "Cranes":
            continue
        assert body.endswith((".", "Cranes")), body
        assert body.startswith(("Sentence", "Cranes")), body


def test_overlap_repeats_whole_sentences(embedder):
    sentences = [f"Fact {i} is that berth {i} opens at {i} o'clock." for i in range(30)]
    parsed = build([(1, "Berths", [" ".join(sentences)])])
    chunks = Chunker(embedder.count_tokens, ChunkingConfig(max_tokens=50, overlap_tokens=20)).chunk(parsed, DOC, REVISION)
    overlapping = [c for c in chunks if c.start < c.body_start]
    assert overlapping, "expected some chunks to carry overlap"
    for chunk in overlapping:
        assert parsed.text[chunk.start : chunk.body_start].strip().endswith(".")


def test_one_enormous_line_is_still_bounded(embedder):
    parsed = build([(1, "Dump", ["x" * 20000])])
    chunks = Chunker(embedder.count_tokens, ChunkingConfig(max_tokens=100, overlap_tokens=10)).chunk(parsed, DOC, REVISION)
    assert all(embedder.count_tokens([c.text])[0] <= 100 for c in chunks)
    assert "".join(parsed.text[c.body_start : c.end] for c in chunks) == parsed.text


def test_access_fields_and_locators_come_from_the_record_and_blocks(embedder):
    builder = TextBuilder()
    builder.block(BlockKind.PARAGRAPH, "Alpha on page one.", page=1)
    builder.block(BlockKind.PARAGRAPH, "Beta on page two.", page=2)
    parsed = builder.build("application/pdf")
    (chunk,) = Chunker(embedder.count_tokens).chunk(parsed, DOC, REVISION)
    assert chunk.pages == [1, 2]
    assert chunk.tenant == "northpier" and chunk.allowed_roles == frozenset({"staff"})
    assert chunk.revision == REVISION
    # Where each page begins in the chunk's text: a citation names the page of its quote.
    assert chunk.page_starts == [(0, 1), (chunk.text.index("Beta"), 2)] and chunk.row_starts == []


def test_a_chunk_maps_its_rows_and_keeps_no_map_for_a_single_page(embedder):
    builder = TextBuilder()
    builder.section(["Codes"])
    for row, code in ((2, "E1"), (3, "E2"), (5, "E3")):  # row 4 was empty in the sheet
        builder.block(BlockKind.RECORD, f"code: {code}; action: restart", sheet="Codes", row=row)
    (chunk,) = Chunker(embedder.count_tokens).chunk(builder.build("text/csv"), DOC, REVISION)
    assert chunk.rows == [2, 3, 5] and chunk.sheet == "Codes"
    assert chunk.row_starts == [(0, 2), (chunk.text.index("code: E2"), 3), (chunk.text.index("code: E3"), 5)]

    builder = TextBuilder()
    builder.block(BlockKind.PARAGRAPH, "Alpha on page one.", page=1)
    builder.block(BlockKind.PARAGRAPH, "More on page one.", page=1)
    (chunk,) = Chunker(embedder.count_tokens).chunk(builder.build("application/pdf"), DOC, REVISION)
    assert chunk.pages == [1] and chunk.page_starts == []  # its pages say it exactly: nothing stored


def test_a_chunk_that_starts_inside_a_block_maps_its_first_characters_to_that_blocks_page(embedder):
    builder = TextBuilder()
    builder.block(BlockKind.PARAGRAPH, " ".join(f"Sentence {i} of a long page one paragraph." for i in range(40)), page=1)
    builder.block(BlockKind.PARAGRAPH, "Beta on page two.", page=2)
    chunks = Chunker(embedder.count_tokens, ChunkingConfig(max_tokens=64, overlap_tokens=8)).chunk(
        builder.build("application/pdf"), DOC, REVISION)
    last = chunks[-1]
    assert last.start > 0 and last.pages == [1, 2]
    assert last.page_starts == [(0, 1), (last.text.index("Beta"), 2)]


def test_long_paragraphs_are_segmented_window_by_window_without_losing_boundaries():
    from citewell.chunking import SENTENCE_WINDOW, sentence_spans

    words = ["crane", "berth", "reefer", "gantry", "quay", "spreader", "hoist", "twistlock"]
    sentences = [f"The {words[i % 8]} on the north quay stopped after the {words[(i * 3) % 8]} alarm." for i in range(400)]
    text = " ".join(sentences)
    assert len(text) > 10 * SENTENCE_WINDOW
    spans = sentence_spans(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert [text[a:b].strip() for a, b in spans] == sentences


def _one_line_text(sentence_count: int) -> str:
    words = ["crane", "berth", "reefer", "gantry", "quay", "spreader", "hoist", "twistlock"]
    return " ".join(f"The {words[i % 8]} at bay {i} stopped after the {words[(i * 3) % 8]} alarm." for i in range(sentence_count))


def test_a_document_on_one_line_is_counted_a_window_at_a_time(embedder):
    """Memory: the tokenizer holds about 150 bytes per character it encodes at once, so no
    call may be handed more than a window, however long the line (issue: 20 MB on one line
    took 3.2 GB)."""
    from citewell.chunking import MEASURE_WINDOW

    calls: list[int] = []

    def counting(texts):
        calls.append(sum(len(t) for t in texts))
        return embedder.count_tokens(texts)

    parsed = build([(1, "Log", [_one_line_text(3000)])])
    assert len(parsed.text) > 10 * MEASURE_WINDOW
    chunks = Chunker(counting).chunk(parsed, DOC, REVISION)
    assert len(chunks) > 100
    assert max(calls) <= MEASURE_WINDOW


LONG_TEXTS = {
    "prose on one line": _one_line_text(400),
    "words without punctuation": " ".join(f"berth{i % 97} crane{i % 13}" for i in range(6000)),
    "a run without whitespace": "ab" * 4000 + " then words " * 50 + "x" * 3000,
    "whitespace runs": ("quay " + " " * 3000 + "end. ") * 6,
    "paragraphs of every length": "\n\n".join(_one_line_text(n) for n in (1, 5, 40, 120, 3)),
}


@pytest.mark.parametrize("name", sorted(LONG_TEXTS))
@pytest.mark.parametrize("budget", [24, 200])
def test_windowed_counting_makes_the_same_chunks_as_counting_whole(embedder, monkeypatch, name, budget):
    """A span longer than the window is over budget once a prefix cut after whitespace is:
    the chunks are the same as when every span is counted whole."""
    from citewell import chunking

    builder = TextBuilder()
    for paragraph in LONG_TEXTS[name].split("\n\n"):
        builder.block(BlockKind.CODE, paragraph)  # as plain text is read: spaces kept
    parsed = builder.build("text/plain")
    config = ChunkingConfig(max_tokens=budget, overlap_tokens=budget // 4)
    monkeypatch.setattr(chunking, "MEASURE_WINDOW", 10**9)
    whole = Chunker(embedder.count_tokens, config).chunk(parsed, DOC, REVISION)
    monkeypatch.setattr(chunking, "MEASURE_WINDOW", 256)  # far below the spans, so every path is taken
    windowed = Chunker(embedder.count_tokens, config).chunk(parsed, DOC, REVISION)
    assert [c.model_dump() for c in windowed] == [c.model_dump() for c in whole]
