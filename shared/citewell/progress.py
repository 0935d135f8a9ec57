"""The ingest progress display on a terminal (rich): files settled, the pages of a long PDF read
and the scanned pages read by OCR, the text of a large file chunked, and chunks embedded, each
with its rate and an estimate, moving with the work.

Shown only on a terminal and never with ``--json``: a pipe or a log gets no bar.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from citewell.ingest.runner import IngestOutcome
from citewell.terminal import printable

_STAGES = {"parse": "reading", "chunk": "chunking", "publish": "publishing"}
_SHOWN_FROM = 100_000  # characters (a second or more of chunking): a file this long gets a bar of its own while it is chunked
_PAGES_FROM = {"parse": 20, "ocr": 1}  # pages: a PDF this long gets a bar while its text is read; every scan while OCR reads it
_PAGE_STAGES = {"parse": "pages read", "ocr": "OCR"}


class RateColumn(ProgressColumn):
    """The task's own unit a second, from rich's moving estimate."""

    def render(self, task: Task) -> Text:
        if not task.speed:
            return Text("")
        unit = task.fields.get("unit", "")
        if unit == "MB":
            return Text(f"{task.speed / 1e6:,.2f} MB/s", style="progress.data.speed")
        return Text(f"{task.speed:,.1f} {unit}/s", style="progress.data.speed")


class AmountColumn(ProgressColumn):
    """Done of total in the task's unit: files and chunks counted, text in megabytes."""

    def render(self, task: Task) -> Text:
        if task.fields.get("unit") == "MB":
            total = f"{task.total / 1e6:,.1f}" if task.total else "?"
            return Text(f"{task.completed / 1e6:,.1f}/{total} MB", style="progress.download")
        return MofNCompleteColumn().render(task)


class IngestDisplay:
    """An :class:`~citewell.ingest.runner.IngestProgress` drawn on stderr."""

    def __init__(self, files: int | None, enabled: bool) -> None:
        console = Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}", style="bold"), BarColumn(bar_width=24),
            AmountColumn(), TextColumn("{task.fields[label]}"), RateColumn(), TimeRemainingColumn(),
            TextColumn("{task.fields[now]}", style="dim", markup=False),  # a file name is no markup
            console=console, transient=True, disable=not (enabled and console.is_terminal),
        )
        self.files = self.progress.add_task("files", total=files, unit="files", label="", now="")
        self.pages = self.progress.add_task("pages read", total=None, unit="pages", label="pages", now="", visible=False)
        self.text = self.progress.add_task("chunked", total=None, unit="MB", label="", now="", visible=False)
        self.chunks = self.progress.add_task("embedded", total=None, unit="chunks", label="chunks", now="", visible=False)
        self.current = ""

    def __enter__(self) -> IngestDisplay:
        self.progress.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.progress.__exit__(kind, error, trace)

    def step(self, stage: str, document_id: str) -> None:
        self.current = printable(document_id)
        self.progress.update(self.files, now=f"{_STAGES.get(stage, stage)} {self.current}")
        if stage == "chunk":
            self.progress.reset(self.text, total=None, visible=False)
            self.progress.update(self.pages, visible=False)

    def advance(self, stage: str, done: int, total: int) -> None:
        """Pages of a PDF read, scanned pages read by OCR (with their rate and an estimate), or
        characters chunked: a large file's own bar, in megabytes of its text (about its bytes)."""
        if stage in _PAGE_STAGES:
            if total < _PAGES_FROM[stage]:
                return
            if done == 0:  # a new count: its rate and estimate start afresh
                self.progress.reset(self.pages, total=total, description=_PAGE_STAGES[stage])
            self.progress.update(self.pages, completed=done, total=total, visible=done < total, now=self.current)
            return
        if total < _SHOWN_FROM:
            return
        self.progress.update(self.text, completed=done, total=total, visible=done < total, now=self.current)

    def embedding(self, done: int, total: int) -> None:
        self.progress.update(self.chunks, completed=done, total=total, visible=total > 0)

    def finished(self, outcome: IngestOutcome) -> None:
        self.progress.advance(self.files)
