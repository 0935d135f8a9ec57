"""Human-readable tables for the CLI (rich). JSON output never passes through here."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()


def _short(revision: str | None) -> str:
    return revision[:12] if revision else "-"


def render(command: str, payload: dict[str, Any]) -> None:
    if command == "token":
        print(payload["token"])  # alone on stdout, unwrapped: TOKEN=$(citewell token ...)
    elif command == "serve":
        pass  # the server logs as it goes
    elif command == "ingest":
        table = Table("document", "status", "revision", "chunks", "error")
        for d in payload["documents"]:
            error = f"{d['error']['code']}: {d['error']['message']}" if d["error"] else ""
            table.add_row(d["document_id"], d["status"], _short(d["revision"]), str(d["chunks"]), error)
        console.print(table)
    elif command == "search":
        for note in payload["degraded"]:
            console.print(f"[yellow]degraded:[/yellow] {note}")
        if not payload["hits"]:
            console.print("no results")
        for hit in payload["hits"]:
            lanes = ", ".join(f"{k} #{v}" for k, v in hit["lanes"].items() if v is not None)
            where = " > ".join(hit["section_path"]) or hit["title"]
            console.print(f"[bold]{hit['rank']}. {hit['title']}[/bold]  [dim]{hit['chunk_id']} ({lanes})[/dim]")
            console.print(f"   [italic]{where}[/italic]")
            snippet = " ".join(hit["text"].split())
            console.print(f"   {snippet[:300]}{'…' if len(snippet) > 300 else ''}", highlight=False)
    elif command in ("ask", "citations"):
        for note in payload.get("degraded", []):
            console.print(f"[yellow]degraded:[/yellow] {note}")
        if command == "citations":
            console.print(f"[dim]{payload['created_at']}  question:[/dim] {payload['question']}")
        if payload.get("source_deleted"):
            console.print("This answer was withdrawn: a source it rested on has been deleted.")
        elif payload["refused"]:
            console.print("The documents you can read do not answer this.")
            if payload.get("closest"):
                console.print("\n[bold]Closest passages you can read[/bold] [dim](not an answer)[/dim]")
            for passage in payload.get("closest", []):
                where = " > ".join(passage["section_path"]) or passage["title"]
                snippet = " ".join(passage["text"].split())
                console.print(f"  {passage['title']} — {where}  [dim]{passage['chunk_id']}[/dim]")
                console.print(f"       {snippet[:240]}{'…' if len(snippet) > 240 else ''}", highlight=False)
        else:
            console.print(payload["answer"], highlight=False)
        if payload["citations"]:
            console.print("\n[bold]Sources[/bold]")
        for c in payload["citations"]:
            if c.get("deleted"):
                console.print(f"  [{c['ref']}] [red]source deleted[/red]")
                continue
            where = " > ".join(c["section_path"]) or c["title"]
            console.print(f"  [{c['ref']}] {c['title']} — {where}  [dim]{c['chunk_id']} @ {c['revision'][:12]}[/dim]")
            console.print(f"       \"{' '.join(c['quote'].split())}\"", highlight=False)
        console.print(f"[dim]answer id {payload['answer_id']}[/dim]")
    elif command == "eval-answers":
        table = Table("category", "questions", "answer acc.", "refusal acc.", "citation prec.", "fabricated", "forbidden")
        rows = [*payload["by_category"].items(), ("all", payload["overall"])]
        for name, s in rows:
            cells = [s["answer_accuracy"], s["refusal_accuracy"], s["citation_precision"]]
            table.add_row(name, str(s["questions"]), *("-" if c is None else f"{c:.3f}" for c in cells),
                          str(s["fabrications"]), str(s["forbidden_text"]))
        console.print(table)
        overall = payload["overall"]
        if overall["drafts_rejected"] or overall["generator_unavailable"]:
            kinds = ", ".join(f"{kind} {n}" for kind, n in payload["rejections"].items())
            console.print(f"{payload['generator']}: {overall['drafts_rejected']} drafts rejected by verification ({kinds}), "
                          f"{overall['generator_unavailable']} unusable replies; the extractive answer stood in for each")
    elif command == "delete":
        table = Table("store", "removed")
        for store, count in payload["removed"].items():
            table.add_row(store, str(count))
        console.print(f"deleted {payload['document_id']}")
        console.print(table)
    elif command == "audit":
        console.print("audit: ok" if payload["ok"] else "audit: [red]not ok[/red]")
        if payload["findings"]:
            table = Table("kind", "tenant", "document", "detail", "repaired")
            for f in payload["findings"]:
                table.add_row(f["kind"], f["tenant"], f["document_id"], f["detail"], "yes" if f["repaired"] else "no")
            console.print(table)
    elif command == "docs":
        table = Table("document", "title", "status", "revision", "chunks", "roles", "error")
        for d in payload["documents"]:
            error = f"{d['error']['code']}: {d['error']['message']}" if d["error"] else ""
            table.add_row(
                d["document_id"], d["title"], d["status"], _short(d["active_revision"]), str(d["chunk_count"]),
                ",".join(sorted(d["allowed_roles"])), error,
            )
        console.print(table)
    elif command == "eval":
        ingest = payload["ingest"]
        console.print(
            f"{payload['dataset']} ({payload['split']}): {ingest['documents']} documents, {ingest['chunks']} chunks, "
            f"ingest {ingest['seconds']} s ({ingest['published']} published, {ingest['unchanged']} unchanged, "
            f"{ingest['failed']} failed)"
        )
        stages = ", ".join(f"{name} {seconds} s" for name, seconds in ingest["stage_seconds"].items())
        if stages:
            console.print(f"ingest time by stage: {stages}")
        table = Table("lane", "nDCG@10", "Recall@100", "MRR@10", "queries", "search ms p50 / p95")
        for lane in payload["lanes"]:
            table.add_row(
                lane["lane"], f"{lane['ndcg_at_10']:.4f}", f"{lane['recall_at_100']:.4f}", f"{lane['mrr_at_10']:.4f}",
                str(lane["queries"]), f"{lane['search_ms_p50']} / {lane['search_ms_p95']}",
            )
        console.print(table)
