"""``make bench``: every benchmark phase, each in a process of its own, then BENCHMARKS.md.

``python -m benchmarks.run [--quick] [--data DIR] [--work DIR] [--out FILE] [--readme FILE]``

The phases are the modules beside this one; each prints one JSON report. Homes are rebuilt
on every run; embeddings come from a vector cache in the work folder keyed by content hash,
so only the first run pays for the model (the ingestion phase always starts with no cache).
The results land in ``WORK/results.json``, BENCHMARKS.md and the README's headline block.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.report import keep_blocks, machine, render, update_readme


@dataclass(frozen=True)
class Plan:
    """How much of each data set one mode runs."""

    scifact_queries: int  # 0: all
    cranfield_queries: int
    squad_questions: int
    ingest_documents: int
    sizes: tuple[tuple[int, int, int, int], ...]  # (chunks, queries, asks, peer queries; 0: peer not run)
    import_runs: int
    large_megabytes: float = 20  # the one-line text file of the large-files phase
    large_pages: int = 300  # and its PDF
    searchable_small: int = 300  # small files beside the one-line text in the searchable-as-it-goes phase
    serve_seconds: int = 60  # the load on citewell serve: 16 clients for this long
    serve_queries: int = 300  # searched one at a time in-process and through the server at ~50k chunks


# The peer runs fewer queries as the corpus grows: its in-memory BM25 scores in Python. It is
# not run at 1M chunks: it held 6.4 GB at 200k, so 1M would not fit this machine's memory.
FULL = Plan(0, 0, 0, 600, ((5_000, 300, 100, 50), (50_000, 300, 100, 30), (200_000, 100, 50, 10),
                           (1_000_000, 100, 50, 0)), 5)
QUICK = Plan(40, 40, 300, 80, ((5_000, 60, 20, 20), (50_000, 60, 20, 0)), 1, large_megabytes=1, large_pages=30,
             searchable_small=30, serve_seconds=20, serve_queries=60)


class Phases:
    """Runs each phase in a process of its own and keeps its report in WORK/phases/NAME.json.

    Each report is kept with ``commit``, the commit the run started at (a phase that writes into
    the tree, as the realdocs phase writes its block into BENCHMARKS.md, does not make the later
    ones dirty). With ``resume``, a phase whose kept report came from that commit and the same
    command is not run again: a run that failed late (a missing package, a full disk) goes on
    from where it stopped instead of paying the earlier phases twice. A run started on a dirty
    tree never resumes, since its commit does not say what ran.
    """

    def __init__(self, work: Path, commit: str, resume: bool = False) -> None:
        self.work = work
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.kept = work / "phases"
        self.kept.mkdir(exist_ok=True)
        self.commit = commit
        self.resume = resume and not commit.endswith("-dirty")
        self.commands: list[str] = []
        self.kept_names: list[str] = []
        self.seconds = 0.0  # every phase's own time, kept ones included

    def run(self, name: str, module: str, *args: object) -> dict:
        command = [sys.executable, "-m", f"benchmarks.{module}", *map(str, args)]
        shown = " ".join(["python", *command[1:]])
        self.commands.append(shown)
        kept = self.kept / f"{name}.json"
        if self.resume and kept.exists():
            stored = json.loads(kept.read_text())
            if stored.get("commit") == self.commit and stored.get("command") == shown:
                print(f"[bench] {name}: kept from an earlier run of {self.commit}", flush=True)
                self.kept_names.append(name)
                self.seconds += stored["report"].get("wall_seconds", 0.0)
                return stored["report"]
        print(f"[bench] {name} ...", flush=True)
        started = time.perf_counter()
        with (self.logs / f"{name}.log").open("w") as log:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"[bench] {name} failed (exit {done.returncode}); see {self.logs / f'{name}.log'}")
        print(f"[bench] {name}: {seconds:.0f} s", flush=True)
        report = json.loads(done.stdout)
        report["wall_seconds"] = round(seconds, 1)
        self.seconds += seconds
        kept.write_text(json.dumps({"commit": self.commit, "command": shown, "report": report}))
        return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller sample, in under five minutes")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    parser.add_argument("--out", type=Path, help="default: BENCHMARKS.md, or WORK/BENCHMARKS-quick.md in quick mode")
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    parser.add_argument("--sizes", help="corpus sizes for the speed phase, e.g. 5000,50000 (default: the mode's)")
    parser.add_argument("--import-runs", type=int, help="fresh interpreters per handler (default: the mode's)")
    parser.add_argument("--serve-seconds", type=int, help="how long the load on citewell serve runs (default: the mode's)")
    parser.add_argument("--resume", action="store_true", help="keep the reports of phases that an earlier run "
                        "of this same commit finished (a clean tree only)")
    parser.add_argument("--large-files", help="megabytes of the one-line text and pages of the PDF, e.g. 20,300 "
                        "(default: the mode's)")
    args = parser.parse_args()
    for name in ("scifact", "cranfield", "squad2-dev"):
        if not (args.data / name).is_dir():
            raise SystemExit(f"[bench] {args.data / name} is missing: pass --data DIR (BEIR layout, see docs/evaluation.md)")
    plan = QUICK if args.quick else FULL
    if args.sizes:
        _, queries, asks, peer_queries = plan.sizes[0]
        plan = replace(plan, sizes=tuple((int(n), queries, asks, peer_queries) for n in args.sizes.split(",")))
    if args.import_runs:
        plan = replace(plan, import_runs=args.import_runs)
    if args.serve_seconds:
        plan = replace(plan, serve_seconds=args.serve_seconds)
    if args.large_files:
        megabytes, pages = args.large_files.split(",")
        plan = replace(plan, large_megabytes=float(megabytes), large_pages=int(pages))
    work, data = args.work, args.data
    homes, cache = work / "homes", work / "embeddings.sqlite"
    host = machine()  # and the commit, before anything is written
    results: dict[str, object] = {
        "mode": "quick" if args.quick else "full",
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": host,
    }
    phases = Phases(work, host["commit"], resume=args.resume)
    results["quality"] = [
        phases.run(f"quality-{name}", "quality", data / name, "--home", homes / name, "--cache", cache, "--queries", limit)
        for name, limit in (("scifact", plan.scifact_queries), ("cranfield", plan.cranfield_queries))
    ]
    results["answers"] = phases.run("answers", "answer_quality", "--home", homes / "answers", "--cache", cache)
    out = args.out or (work / "BENCHMARKS-quick.md" if args.quick else Path("BENCHMARKS.md"))
    realdocs = [data / name for name in ("realdocs-tune", "realdocs-tune2") if (data / name).is_dir()]
    if realdocs:  # answers on real documents: its own block, kept by the render below
        results["realdocs"] = phases.run("realdocs", "realdocs", "--data", *realdocs, "--home", homes / "realdocs", "--out", out)
    results["honesty"] = phases.run("honesty", "honesty", data / "squad2-dev", "--home", homes / "squad2-dev",
                                    "--cache", cache, "--questions", plan.squad_questions)
    results["ingest"] = phases.run("ingest", "ingest", data / "scifact", "--home", homes / "ingest",
                                   "--documents", plan.ingest_documents)
    results["large_files"] = phases.run("large-files", "large_files", "--data", data, "--work", homes,
                                        "--megabytes", plan.large_megabytes, "--pages", plan.large_pages)
    results["crawl"] = phases.run("crawl", "crawl", "--home", homes / "crawl", "--pages", 200)
    results["searchable"] = phases.run("searchable", "searchable", "--data", data, "--work", homes,
                                       "--small", plan.searchable_small, "--megabytes", plan.large_megabytes)
    sources = [homes / "scifact", homes / "cranfield", homes / "squad2-dev"]
    speed = []
    for chunks, queries, asks, peer_queries in plan.sizes:
        home = homes / f"size-{chunks}"
        speed.append(phases.run(f"speed-{chunks}", "speed", home, "--build", *sources, "--chunks", chunks,
                                "--queries", data / "scifact", "--cache", cache, "--limit", queries, "--ask", asks))
        if peer_queries:
            speed.append(phases.run(f"speed-{chunks}-peer", "speed", home, "--peer", "--queries", data / "scifact",
                                    "--cache", cache, "--limit", peer_queries))
    results["speed"] = speed
    near = min((chunks for chunks, *_ in plan.sizes), key=lambda chunks: abs(chunks - 50_000))
    results["serve"] = phases.run("serve", "serve_load", "--work", work, "--cache", cache, "--clients", 16,
                                  "--seconds", plan.serve_seconds, "--search-home", homes / f"size-{near}",
                                  "--queries", data / "scifact", "--limit", plan.serve_queries)
    results["imports"] = phases.run("imports", "imports", "--runs", plan.import_runs)
    results["seconds"] = round(phases.seconds, 1)
    results["kept"] = phases.kept_names
    results["commands"] = phases.commands
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    out.write_text(keep_blocks(out, render(results, data)))
    if not args.quick and args.readme.exists():
        update_readme(args.readme, results)
    print(f"[bench] done in {results['seconds']:.0f} s: {out}", flush=True)


if __name__ == "__main__":
    main()
