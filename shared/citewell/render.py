"""What the CLI prints for people (rich). JSON output never passes through here.

Written for 80 columns and for pipes as much as for wide terminals: a document or chunk id
is never cut or wrapped by us (it is what ``delete`` and ``citations`` need; a terminal
narrower than the id folds it, but no character is lost), it starts its line so ``grep`` and
``cut`` find it, and longer text wraps under its own indent instead of back to column 0.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from citewell.terminal import printable


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader went away: the process ends quietly, as it does for --json (``__main__``)."""
        self.quiet = True
        raise BrokenPipeError


console = _Console()

STATUS_WIDTH = 10  # "superseded" and "published" line up with the shorter ones
SNIPPET_CHARS = 300


def _short(revision: str | None) -> str:
    return revision[:12] if revision else "-"


def _id_line(*parts: str | tuple[str, str]) -> None:
    """One line that rich never wraps or cuts (ids live here)."""
    console.print(Text.assemble(*parts), soft_wrap=True, highlight=False)


def _wrapped(text: str, indent: int, style: str = "") -> None:
    """Text wrapped at the console's width (80 when piped), each of its lines under the same
    indent; a word longer than a line (a path, an id) is kept whole."""
    for paragraph in text.splitlines() or [""]:  # its own line breaks stay (an answer's list)
        lines = textwrap.wrap(paragraph, width=max(console.width, indent + 20), initial_indent=" " * indent,
                              subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False)
        for line in lines or [""]:
            console.print(Text(line, style=style), soft_wrap=True, highlight=False)


def where(title: str, section_path: Sequence[str]) -> str:
    """Title, then the headings below it, without saying the title twice."""
    parts = [title, *[h for h in section_path if h and h != title]]
    return " > ".join(p for p in parts if p)


def snippet(text: str, section_path: Sequence[str], limit: int = SNIPPET_CHARS) -> str:
    """The passage on one line, without the heading lines its section path already shows."""
    lines = text.strip().splitlines()
    headings = set(section_path)
    while lines and (not lines[0].strip() or lines[0].strip() in headings):
        lines.pop(0)
    flat = " ".join(" ".join(lines).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _chunks(count: int) -> str:
    return f"{count} chunk" if count == 1 else f"{count} chunks"


def _error(error: dict[str, str] | None) -> str:
    return f"{error['code']}: {error['message']}" if error else ""


def _ingest(payload: dict[str, Any]) -> None:
    for d in payload["documents"]:
        status = d["status"]
        style = {"failed": "red", "superseded": "yellow", "skipped": "yellow"}.get(status, "green")
        detail = f"  {_chunks(d['chunks'])}, revision {_short(d['revision'])}" if d["revision"] else ""
        _id_line((f"{status:<{STATUS_WIDTH}}", style), " ", d["document_id"], (detail, "dim"))
        if d["error"]:
            _wrapped(_error(d["error"]), STATUS_WIDTH + 1)
        for line in d.get("pending", []):
            _wrapped(f"pending: {line}", STATUS_WIDTH + 1, "yellow")
    for d in payload.get("gone", []):
        _id_line((f"{'deleted' if d['deleted'] else 'gone':<{STATUS_WIDTH}}", "yellow"), " ", d["document_id"])
        why = f"the page {d['reason']}" if "reason" in d else f"its file {d['source']} is no longer in the folder"
        _wrapped(why + (
            "" if d["deleted"] else "; still served: --prune deletes it, or citewell delete it"), STATUS_WIDTH + 1)
    for c in payload.get("crawls", []):
        for note in c["notes"]:
            _wrapped(f"crawl of {c['root']}: {note}", 0, "yellow")
        if c["unfinished"]:
            _wrapped(f"crawl of {c['root']}: pages it did not reach are not called gone (nor pruned), since "
                     + "; ".join(c["unfinished"]), 0, "yellow")


def _hit_lanes(lanes: dict[str, int | None], rerank: float | None = None) -> str:
    found = [f"{lane} #{rank}" for lane, rank in lanes.items() if rank is not None]
    return ", ".join(found + ([f"rerank {rerank:.2f}"] if rerank is not None else []))


def _probes(expansion: dict[str, Any] | None) -> None:
    """What query expansion searched beside the question."""
    if expansion:
        for probe in expansion["lexical"]:
            _wrapped(f"also searched: {probe}", 0, "dim")
        if expansion.get("passage"):
            _wrapped(f"also searched by meaning: {expansion['passage']}", 0, "dim")


def _search(payload: dict[str, Any]) -> None:
    for note in payload["degraded"]:
        _wrapped(f"degraded: {note}", 0, "yellow")
    _probes(payload.get("expansion"))
    if not payload["hits"]:
        console.print("no results")
        _operator_note(payload)
    elif all(hit.get("weak") for hit in payload["hits"]):
        _wrapped("No passage holds these words: the nearest in meaning follow, marked weak.", 0, "yellow")
    for number, hit in enumerate(payload["hits"]):
        if number:
            console.print()
        head = f"{hit['rank']}. "
        _wrapped(f"{head}{where(hit['title'], hit['section_path'])}", 0, "bold")
        _id_line(" " * len(head), hit["chunk_id"], (f"  ({_hit_lanes(hit['lanes'], hit.get('rerank'))})", "dim"))
        if hit.get("weak"):
            _wrapped(f"weak: found by meaning only, similarity {hit['similarity']:.2f}; "
                     "it need not hold the words asked for", len(head), "yellow")
        _wrapped(snippet(hit["text"], hit["section_path"]), len(head))


def _span(numbers: Sequence[int]) -> str:
    """``3``, ``3-5``, or ``3, 7-8``: runs of consecutive numbers as ranges, so the rows of two
    records an elided quote joins are not shown as every row between them."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def place(item: dict[str, Any]) -> str:
    """Where the passage sits in its file, to find it by hand: pages, or sheet and rows (a
    citation's are those of its quote, a passage's those of the whole passage)."""
    parts = []
    if item.get("pages"):
        parts.append(("page " if len(item["pages"]) == 1 else "pages ") + _span(item["pages"]))
    if item.get("sheet"):
        parts.append(f"sheet {item['sheet']}")
    if item.get("rows"):
        parts.append(("row " if len(item["rows"]) == 1 else "rows ") + _span(item["rows"]))
    return ", ".join(parts)


def _passage(ref: str, item: dict[str, Any], quote: str) -> None:
    _wrapped(f"{ref}{where(item['title'], item['section_path'])}", 2)
    indent = 2 + len(ref)
    found = place(item)
    revision = f" @ {_short(item['revision'])}" if item.get("revision") else ""
    _id_line(" " * indent, item["chunk_id"], (revision + (f", {found}" if found else ""), "dim"))
    _wrapped(quote, indent)


def _sources(citations: Sequence[dict[str, Any]]) -> None:
    if citations:
        console.print("\n[bold]Sources[/bold]")
    for c in citations:
        ref = f"[{c['ref']}] "
        if c.get("deleted"):
            _id_line("  ", ref, ("source deleted", "red"))
            continue
        _passage(ref, c, f"\"{' '.join(c['quote'].split())}\"")


def _operator_note(payload: dict[str, Any]) -> None:
    if payload.get("operator_note"):
        _wrapped(f"note: {payload['operator_note']}", 0, "yellow")


def _answer(payload: dict[str, Any], command: str) -> None:
    """An answer as today (per condition, each on its line, when the question leaves one open); a
    question asking which condition is meant; a quote not confirmed to answer, labelled so before
    its words; or that nothing the caller may read is about it (never that no such document exists)."""
    _answer_heading(payload, command)
    _answer_text(payload, command)
    _sources(payload["citations"])
    _closest(payload.get("closest", []))
    _id_line(("answer id ", "dim"), payload["answer_id"])
    if payload.get("conversation_id") and command == "ask":
        _id_line(("conversation ", "dim"), payload["conversation_id"])


def _answer_heading(payload: dict[str, Any], command: str) -> None:
    """What comes before an answer: what was degraded, the question it was answered as, the probes
    searched beside it, and (a recorded answer's citations) when and what was asked."""
    for note in payload.get("degraded", []):
        _wrapped(f"degraded: {note}", 0, "yellow")
    if payload.get("question") and command == "ask":
        _wrapped(f"answered as: {payload['question']}", 0, "dim")
    _probes(payload.get("expansion"))
    if command == "citations":
        _wrapped(f"{payload['created_at']}  question: {payload['question']}", 0, "dim")


def _answer_text(payload: dict[str, Any], command: str) -> None:
    """The answer by its outcome, or that it was withdrawn."""
    outcome = payload["outcome"]
    if payload.get("source_deleted"):
        console.print("This answer was withdrawn: a source it rested on has been deleted or replaced by a newer revision; "
                      "ask again.")
    elif outcome == "answered":
        _wrapped(payload["answer"], 0)
    elif outcome == "clarify":  # more conditions than an answer lists: which one, named in a follow-up
        _wrapped(payload["answer"], 0, "bold")
        if payload.get("conversation_id") and command == "ask":
            asking = f"citewell ask --conversation {payload['conversation_id']} \"for ...\""
            _wrapped(f"Name one to get its answer: {asking}", 0, "dim")
    elif outcome == "not_found":
        console.print("Nothing in the documents you can read is about this.")
        _operator_note(payload)
    elif payload["answer"]:
        console.print(Text.assemble(("Not confirmed:", "bold yellow"), " the closest passage I found says:"))
        _wrapped(payload["answer"], 2)
    else:
        console.print(Text.assemble(("Not confirmed:", "bold yellow"), " I could not check what I found against your question."))


def _closest(passages: list[dict[str, Any]]) -> None:
    """The passages shown beside a refusal, as passages and not as an answer."""
    if passages:
        console.print("\n[bold]Closest passages you can read[/bold] [dim](not an answer)[/dim]")
    for number, passage in enumerate(passages):
        if number:
            console.print()
        _passage("", passage, snippet(passage["text"], passage["section_path"], 240))


def _feedback(payload: dict[str, Any]) -> None:
    items = payload["unhelpful"]
    if not items:
        console.print("No answer is marked unhelpful.")
    for number, item in enumerate(items):
        if number:
            console.print()
        _wrapped(f"{item['at']}  {item['tenant']}  {', '.join(item['roles'])}", 0, "dim")
        _wrapped(f"question: {item['question']}", 0, "bold")
        _wrapped(item["answer"] or f"({item['outcome'].replace('_', ' ')}, no answer)", 2)
        if item["comment"]:
            _wrapped(f"comment: {item['comment']}", 2, "yellow")
        _sources(item["citations"])
        _id_line(("answer id ", "dim"), item["answer_id"])
    if exported := payload.get("exported"):
        console.print(f"\nwrote {exported['questions']} questions to {exported['file']}: "
                      "label must_contain (or refuse), then run eval-answers")


def _eval_answers(payload: dict[str, Any]) -> None:
    table = Table("category", "questions", "answer acc.", "refusal acc.", "citation prec.", "fabricated", "forbidden")
    for name, s in [*payload["by_category"].items(), ("all", payload["overall"])]:
        cells = [s["answer_accuracy"], s["refusal_accuracy"], s["citation_precision"]]
        table.add_row(Text(name), str(s["questions"]), *("-" if c is None else f"{c:.3f}" for c in cells),
                      str(s["fabrications"]), str(s["forbidden_text"]))
    console.print(table)
    outcomes = Table("category", "answered right", "answered wrong", "unconfirmed, fact quoted", "unconfirmed, not",
                     "not found", "fact shown", "must refuse: answered", "unconfirmed", "not found", title="outcomes")
    for name, s in [*payload["by_category"].items(), ("all", payload["overall"])]:
        a, r = s["answerable_outcomes"], s["must_refuse_outcomes"]
        counts = [a["answered_right"], a["answered_wrong"], a["unconfirmed_with_fact"], a["unconfirmed_without_fact"],
                  a["not_found"]]
        shown = "-" if s["fact_shown"] is None else f"{s['fact_shown']:.3f}"
        outcomes.add_row(Text(name), *map(str, counts), shown, str(r["answered"]), str(r["unconfirmed"]), str(r["not_found"]))
    console.print(outcomes)


def _delete(payload: dict[str, Any]) -> None:
    _id_line("deleted ", payload["document_id"])
    removed = ", ".join(f"{store} {count}" for store, count in payload["removed"].items() if count)
    _wrapped(f"removed: {removed or 'nothing left to remove'}", 2, "dim")


def _audit(payload: dict[str, Any]) -> None:
    console.print("audit: ok" if payload["ok"] else "audit: [red]not ok[/red]")
    for f in payload["findings"]:
        subject = f"{f['tenant']} {f['document_id']}".strip()
        repaired = ("  repaired", "green") if f["repaired"] else ("", "")
        _id_line((f["kind"], "bold"), "  ", subject, repaired)
        _wrapped(f["detail"], 2)


def _read(payload: dict[str, Any]) -> None:
    """Where the text is from, then the text as it stands (its own line breaks kept)."""
    section = payload["section"]
    _wrapped(where(payload["title"], section["heading_path"] if section else []), 0, "bold")
    _id_line(payload["document_id"], ("  revision ", "dim"), _short(payload["revision"]),
             (f"  {payload['chars']:,} of {payload['budget']:,} characters", "dim"))
    if section is None and len(payload["sections"]) > 1:
        for found in payload["sections"]:
            _id_line("  ", found["section_id"], (f"  {' > '.join(found['heading_path']) or '(untitled)'}", "dim"))
    console.print()
    console.print(Text(payload["text"]), soft_wrap=True, highlight=False)


def _docs(payload: dict[str, Any]) -> None:
    if not payload["documents"]:
        console.print("no documents")
    for d in payload["documents"]:
        status = d["status"]
        style = {"failed": "red", "processing": "yellow", "deleting": "yellow"}.get(status, "green")
        _id_line(d["document_id"], "  ", (status, style))
        if d["title"]:
            _wrapped(d["title"], 2)
        facts = [_chunks(d["chunk_count"]), f"revision {_short(d['active_revision'])}",
                 f"roles {','.join(sorted(d['allowed_roles']))}"]
        _wrapped(" · ".join(facts), 2, "dim")
        described = [d.get("locale") or "", f"tags {','.join(d['tags'])}" if d.get("tags") else "",
                     f"{d['trust_tier']} source" if d.get("trust_tier") else "", "authoritative" if d.get("authority") else "",
                     f"effective from {d['effective_from']}" if d.get("effective_from") else "",
                     f"until {d['effective_until']}" if d.get("effective_until") else ""]
        _wrapped(" · ".join(f for f in described if f), 2, "dim")
        if d["error"]:
            _wrapped(_error(d["error"]), 2, "red")


def _eval(payload: dict[str, Any]) -> None:
    ingest = payload["ingest"]
    _wrapped(
        f"{payload['dataset']} ({payload['split']}): {ingest['documents']} documents, {ingest['chunks']} chunks, "
        f"ingest {ingest['seconds']} s ({ingest['published']} published, {ingest['unchanged']} unchanged, "
        f"{ingest['failed']} failed)", 0,
    )
    stages = ", ".join(f"{name} {seconds} s" for name, seconds in ingest["stage_seconds"].items())
    if stages:
        _wrapped(f"ingest time by stage: {stages}", 0)
    table = Table("lane", "nDCG@10", "Recall@100", "MRR@10", "queries", "search ms p50 / p95")
    for lane in payload["lanes"]:
        table.add_row(
            lane["lane"], f"{lane['ndcg_at_10']:.4f}", f"{lane['recall_at_100']:.4f}", f"{lane['mrr_at_10']:.4f}",
            str(lane["queries"]), f"{lane['search_ms_p50']} / {lane['search_ms_p95']}",
        )
    console.print(table)


RENDERERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "ingest": _ingest, "search": _search, "ask": lambda p: _answer(p, "ask"),
    "citations": lambda p: _answer(p, "citations"), "eval-answers": _eval_answers, "delete": _delete, "feedback": _feedback,
    "audit": _audit, "read": _read, "docs": _docs, "eval": _eval,
    "token": lambda p: print(p["token"]),  # alone on stdout, unwrapped: TOKEN=$(citewell token ...)
}


def render(command: str, payload: dict[str, Any]) -> None:
    """A command without a layout of its own prints its JSON, indented."""
    payload = printable(payload)
    show = RENDERERS.get(command)
    if show is not None:
        show(payload)
    elif payload:
        console.print_json(json.dumps(payload, ensure_ascii=False))
