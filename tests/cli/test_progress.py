"""Ingest progress on a terminal moves with the work (chunks embedded, a rate, an estimate), also
inside one large file; a pipe or --json gets no bar. Real processes on a pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from citewell.ingest.runner import IngestOutcome, ingest
from citewell.ingest.stages import IngestRequest


def large_text(sentences: int = 3000) -> str:
    """One file of a few hundred chunks: enough to embed over several steps."""
    topics = ["crane", "quay", "reefer", "gantry", "berth", "lashing", "spreader", "twistlock"]
    return " ".join(f"Report {n} says the {topics[n % 8]} crew checked item {n * 7 % 1000} in shift {n % 3}."
                    for n in range(sentences))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_a_terminal(argv: list[str]) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal; returns the exit code, stdout and what the terminal showed."""
    primary, secondary = pty.openpty()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=secondary,
                               env={**os.environ, "COLUMNS": "160", "TERM": "xterm"})
    os.close(secondary)
    shown = b""
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # the other end closed
            break
        if not data:
            break
        shown += data
    os.close(primary)
    out = process.stdout.read().decode()
    return process.wait(), out, _ANSI.sub("", shown.decode(errors="replace"))


@pytest.fixture
def big_file(tmp_path: Path) -> Path:
    path = tmp_path / "shift-reports.txt"
    path.write_text(large_text())
    return path


def command(home: Path, *argv: str) -> list[str]:
    return [sys.executable, "-m", "citewell", "--home", str(home), *argv]


def test_one_large_file_shows_chunks_embedded_moving_with_a_rate(tmp_path, big_file):
    code, _, shown = on_a_terminal(command(tmp_path / "home", "ingest", str(big_file), "--tenant", "t", "--allow-roles", "r"))
    assert code == 0
    counts = {(int(done), int(total)) for done, total in re.findall(r"(\d+)/(\d+) chunks", shown)}
    total = max(t for _, t in counts)
    assert total > 256  # three steps of 128
    moving = sorted(done for done, t in counts if t == total)
    assert len([d for d in moving if 0 < d < total]) >= 2, counts  # seen part-way, more than once
    assert re.search(r"\d+ chunks/s", shown) and re.search(r"\d+:\d\d:\d\d", shown)  # a rate and an estimate
    assert re.search(r"chunked .*\d+\.\d/\d+\.\d MB", shown)  # its text chunked, in megabytes, while it is


def test_no_bar_with_json_or_without_a_terminal(tmp_path, big_file):
    big_file.write_text(large_text(600))
    argv = command(tmp_path / "home", "ingest", str(big_file), "--tenant", "t", "--allow-roles", "r", "--json")
    code, out, shown = on_a_terminal(argv)
    assert code == 0 and json.loads(out)["documents"][0]["status"] == "published"
    assert "chunks" not in shown and "files" not in shown
    big_file.write_text(large_text(700))  # new text, so there is work to show
    piped = subprocess.run(argv[:-1], capture_output=True, text=True, check=True)
    assert piped.stderr == "" and "published" in piped.stdout


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def step(self, stage: str, document_id: str) -> None:
        self.events.append(("step", stage, document_id))

    def advance(self, stage: str, done: int, total: int) -> None:
        self.events.append(("advance", stage, done, total))

    def embedding(self, done: int, total: int) -> None:
        self.events.append(("embedding", done, total))

    def finished(self, outcome: IngestOutcome) -> None:
        self.events.append(("finished", outcome.document_id, outcome.status))


def test_progress_is_reported_as_each_document_settles_and_across_batches(services):
    requests = [IngestRequest(document_id=f"memo-{n}.md", tenant="t", allowed_roles=frozenset({"r"}),
                              data=f"# Memo {n}\n\nThe quillaby count for memo {n} is {n * 3}.\n".encode(), filename="m.md")
                for n in range(5)]
    recorder = Recorder()
    ingest(services, requests, progress=recorder, batch_documents=2)
    finished = [e for e in recorder.events if e[0] == "finished"]
    assert [e[1] for e in finished] == [f"memo-{n}.md" for n in range(5)]
    embedding = [e[1:] for e in recorder.events if e[0] == "embedding"]
    assert embedding[-1] == (5, 5) and embedding == sorted(embedding)  # cumulative over the three batches
    first_finish = recorder.events.index(finished[0])
    assert any(e[0] == "step" and e[2] == "memo-4.md" for e in recorder.events[first_finish:])  # not all at the end


def test_chunking_a_large_file_reports_how_far_it_got(services):
    """Chunking a 20 MB file took minutes with nothing moving: it now reports characters done."""
    text = large_text(6000)
    recorder = Recorder()
    ingest(services, [IngestRequest(document_id="reports.txt", tenant="t", allowed_roles=frozenset({"r"}),
                                    data=text.encode(), filename="reports.txt")], progress=recorder)
    moves = [(e[2], e[3]) for e in recorder.events if e[0] == "advance" and e[1] == "chunk"]
    assert len(moves) >= 4 and moves == sorted(moves) and moves[-1] == (len(text), len(text))
    assert moves[0][0] < len(text) // 2  # the first report comes early, not at the end


def text_pdf(pages: int) -> bytes:
    """A PDF with a text layer on each of its ``pages``."""
    from fpdf import FPDF

    pdf = FPDF(unit="pt", format="A4")
    pdf.set_font("helvetica", size=11)
    for n in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 14, f"Page {n + 1}. " + large_text(12))
    return bytes(pdf.output())


def test_reading_a_long_pdf_reports_its_pages_as_they_are_read(services):
    """A long PDF showed "chunking X" with nothing moving while its text layer was read: it now
    reports pages read, of its pages, as each is, before chunking begins."""
    recorder = Recorder()
    [outcome] = ingest(services, [IngestRequest(document_id="manual.pdf", tenant="t", allowed_roles=frozenset({"r"}),
                                                data=text_pdf(30), filename="manual.pdf")], progress=recorder)
    assert outcome.status == "published"
    pages = [e[2:] for e in recorder.events if e[0] == "advance" and e[1] == "parse"]
    assert pages == [(n, 30) for n in range(31)]  # each page, in order, from none to all
    assert not any(e[0] == "advance" and e[1] == "ocr" for e in recorder.events)  # a text layer needs no OCR
    first_chunked = next(i for i, e in enumerate(recorder.events) if e[:2] == ("advance", "chunk"))
    assert recorder.events.index(("advance", "parse", 30, 30)) < first_chunked


def test_the_display_shows_pages_with_a_rate_and_hides_them_for_chunking():
    from citewell.progress import IngestDisplay

    display = IngestDisplay(files=1, enabled=False)
    display.step("parse", "manual.pdf")
    for done in range(0, 41, 10):
        display.advance("parse", done, 40)
    task = display.progress.tasks[display.pages]
    assert (task.description, task.completed, task.total, task.fields["unit"]) == ("pages read", 40, 40, "pages")
    display.advance("ocr", 0, 3)  # the scanned pages start a count of their own
    display.advance("ocr", 1, 3)
    task = display.progress.tasks[display.pages]
    assert (task.description, task.completed, task.total, task.visible) == ("OCR", 1, 3, True)
    display.step("chunk", "manual.pdf")
    assert not display.progress.tasks[display.pages].visible
    display.advance("parse", 3, 5)  # a short PDF gets no bar of its own
    assert not display.progress.tasks[display.pages].visible
