"""Ingest time of two large files: a 20 MB text on one line and a 300-page PDF.

``python -m benchmarks.large_files --data DIR --work DIR [--megabytes 20] [--pages 300]``

Both are written at bench time from the real text in the data folder (SciFact abstracts and
Cranfield's aeronautics papers): the text file as one line of their sentences, reshuffled
with a fixed seed on each pass so that no chunk repeats (a repeat would come from the
embedding cache, not the model); the PDF as a manual of chapters with bookmarks, a heading
and paragraphs on every page. Each file goes through the same runner as ``citewell ingest``
into a fresh home with no cached vectors, the model loaded before the clock starts, and the
report gives the seconds of each stage, megabytes and chunks per second, and peak memory.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.homes import fresh_home
from benchmarks.measure import peak_rss_mb
from citewell.ingest.runner import StageClock, ingest
from citewell.ingest.stages import IngestRequest

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _rows(path: Path) -> Iterator[dict[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


def real_text(data: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """Sentences of every abstract, and (title, text) of each document, from SciFact and Cranfield."""
    documents = []
    for name in ("scifact", "cranfield"):
        folder = data / name
        corpus = folder / "corpus.jsonl.gz" if (folder / "corpus.jsonl.gz").exists() else folder / "corpus.jsonl"
        documents += [(row.get("title") or "", " ".join(row.get("text", "").split())) for row in _rows(corpus)]
    sentences = [s for _, text in documents for s in _SENTENCE_END.split(text) if s]
    return sentences, [(title, text) for title, text in documents if text]


def one_line(sentences: list[str], megabytes: float) -> bytes:
    """At least ``megabytes`` of text without a line break, each pass in its own sentence order."""
    wanted, parts, size, rng = int(megabytes * 1024 * 1024), [], 0, random.Random(13)
    while size < wanted:
        order = sentences[:]
        rng.shuffle(order)
        for sentence in order:
            parts.append(sentence)
            size += len(sentence.encode("utf-8")) + 1
            if size >= wanted:
                break
    return " ".join(parts).encode("utf-8")


def manual(documents: list[tuple[str, str]], pages: int) -> bytes:
    """A PDF of ``pages`` pages: chapters of ten pages with bookmarks, each page a heading and
    paragraphs, in the order the corpora hold them."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    pdf.set_title("Collected abstracts")
    latin = [(t.encode("latin-1", "replace").decode("latin-1"), x.encode("latin-1", "replace").decode("latin-1"))
             for t, x in documents]  # the core fonts are Latin-1
    source = itertools.cycle(latin)
    for page in range(pages):
        pdf.add_page()
        if page % 10 == 0:
            pdf.start_section(f"Chapter {page // 10 + 1}")
        title, text = next(source)
        pdf.set_font("Helvetica", style="B", size=13)
        pdf.multi_cell(0, 7, title[:120] or f"Section {page + 1}")
        pdf.set_font("Helvetica", size=10)
        while pdf.get_y() < 240:
            pdf.ln(3)
            pdf.multi_cell(0, 5, text[:1200])
            title, text = next(source)
    return bytes(pdf.output())


def measure(work: Path, name: str, filename: str, data: bytes) -> dict[str, object]:
    services = fresh_home(work / f"large-{name}")
    services.embedder.embed(["load the model before the clock starts"])
    clock = StageClock()
    started = time.perf_counter()
    (outcome,) = ingest(services, [IngestRequest(document_id=filename, tenant="bench", allowed_roles=frozenset({"bench"}),
                                                 data=data, filename=filename)], clock=clock)
    seconds = time.perf_counter() - started
    if outcome.status != "published":
        raise SystemExit(f"{filename} was not published: {outcome.error}")
    megabytes = len(data) / 1024 / 1024
    return {
        "file": filename, "megabytes": round(megabytes, 2), "chunks": outcome.chunks, "seconds": round(seconds, 1),
        "megabytes_per_second": round(megabytes / seconds, 3), "chunks_per_second": round(outcome.chunks / seconds, 2),
        "stages": {stage: round(value, 1) for stage, value in clock.seconds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--megabytes", type=float, default=20)
    parser.add_argument("--pages", type=int, default=300)
    args = parser.parse_args()
    sentences, documents = real_text(args.data)
    pdf = manual(documents, args.pages)
    report: dict[str, object] = {"pdf": {**measure(args.work, "pdf", "manual.pdf", pdf), "pages": args.pages}}
    print(json.dumps(report["pdf"]), file=sys.stderr, flush=True)  # the log shows the first while the second runs
    report["one_line_text"] = measure(args.work, "text", "one-line.txt", one_line(sentences, args.megabytes))
    report["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
