"""Where a cold ``citewell search`` or ``citewell ask`` spends its time, in fresh processes.

    python -m benchmarks.cold_cli --home HOME --tenant T --roles R [--runs 7]

For each command it reports the median wall time of the real command run ``--runs`` times
(each a new interpreter, as a person typing it gets) and its CPU time (less moved by other
processes on a busy machine), and the median of the same path split
into steps, timed inside fresh interpreters: importing the CLI, importing the engine, opening
the stores, the first call of the index (which loads its access mask and vectors), and the
search or answer itself, which loads the model for its first embedding. Interpreter
start-up itself is ``python -c pass``. Each run asks in its own words, so no answer comes from
the cache. Run it with ``PYTHONPATH`` at another checkout's ``shared`` to compare two versions.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUESTION = "How many days of annual leave do staff get?"

_STEPS = r"""
import json, sys, time
started = time.perf_counter()
marks = {}
def mark(name):
    marks[name] = time.perf_counter()
import citewell.cli
mark("import cli")
from pathlib import Path
from citewell.models.identity import Identity
from citewell.search import search
from citewell.deployments import open_local
mark("import engine")
home, command, tenant, roles, question = sys.argv[1:6]
services = open_local(Path(home))
identity = Identity(tenant=tenant, roles=frozenset(roles.split(",")))
mark("open stores")
services.index.lanes(question, None, services.embedder.identity, identity, 1)
mark("first index call (mask, vectors)")
if command == "search":
    search(services, identity, question, k=10)
else:
    from citewell.answers.config import evidence_budget, generator_from_env
    from citewell.answers.service import ask
    ask(services, identity, question, generator_from_env(services), budget_chars=evidence_budget())
mark(command + " (model load, embedding, the rest)")
previous, steps = started, {}
for name, at in marks.items():
    steps[name] = round((at - previous) * 1000, 1)
    previous = at
print(json.dumps(steps))
"""


def _wall(argv: list[str], cpu: list[float] | None = None) -> float:
    """Wall milliseconds of one run; its CPU milliseconds (user and system, all threads) go to ``cpu``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return wall


def measure(home: Path, tenant: str, roles: str, runs: int) -> dict[str, object]:
    python = sys.executable
    report: dict[str, object] = {
        "interpreter_ms": round(statistics.median(_wall([python, "-c", "pass"]) for _ in range(runs)), 1)}
    for command in ("search", "ask"):
        # A new wording each run, so no answer comes from the cache.
        questions = [f"{QUESTION} ({time.time_ns()})" for _ in range(runs)]
        cpu: list[float] = []
        walls = [_wall([python, "-m", "citewell", "--home", str(home), command, q, "--tenant", tenant, "--roles", roles,
                        "--json"], cpu) for q in questions]
        steps = [json.loads(subprocess.run([python, "-c", _STEPS, str(home), command, tenant, roles, q],
                                           capture_output=True, text=True, check=True).stdout) for q in questions]
        report[command] = {
            "wall_ms_median": round(statistics.median(walls), 1),
            "cpu_ms_median": round(statistics.median(cpu), 1),
            "steps_ms_median": {name: round(statistics.median(s[name] for s in steps), 1) for name in steps[0]},
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--roles", required=True)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(json.dumps(measure(args.home, args.tenant, args.roles, args.runs), indent=2))


if __name__ == "__main__":
    main()
