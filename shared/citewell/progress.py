"""The ingest progress display on a terminal (rich): files settled, and chunks embedded with a
rate and an estimate, moving with the work, also inside one large file.

Shown only on a terminal and never with ``--json``: a pipe or a log gets no bar.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, SpinnerColumn, Task, TextColumn, TimeRemainingColumn
from rich.text import Text

from citewell.ingest.runner import IngestOutcome
from citewell.terminal import printable

_STAGES = {"parse": "reading", "chunk": "chunking", "publish": "publishing"}


class RateColumn(ProgressColumn):
    """Chunks a second, from rich's own moving estimate."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:,.0f} chunks/s" if task.speed else "", style="progress.data.speed")


class IngestDisplay:
    """An :class:`~citewell.ingest.runner.IngestProgress` drawn on stderr."""

    def __init__(self, files: int | None, enabled: bool) -> None:
        console = Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}", style="bold"), BarColumn(bar_width=24),
            MofNCompleteColumn(), TextColumn("{task.fields[unit]}"), RateColumn(), TimeRemainingColumn(),
            TextColumn("{task.fields[now]}", style="dim", markup=False),  # a file name is no markup
            console=console, transient=True, disable=not (enabled and console.is_terminal),
        )
        self.files = self.progress.add_task("files", total=files, unit="", now="")
        self.chunks = self.progress.add_task("embedded", total=None, unit="chunks", now="", visible=False)

    def __enter__(self) -> IngestDisplay:
        self.progress.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.progress.__exit__(kind, error, trace)

    def step(self, stage: str, document_id: str) -> None:
        self.progress.update(self.files, now=f"{_STAGES.get(stage, stage)} {printable(document_id)}")

    def embedding(self, done: int, total: int) -> None:
        self.progress.update(self.chunks, completed=done, total=total, visible=total > 0)
        self.progress.update(self.files, now="embedding")

    def finished(self, outcome: IngestOutcome) -> None:
        self.progress.advance(self.files)
