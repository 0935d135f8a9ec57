"""Cold import time of each Lambda handler module, the bulk of a Python Lambda's cold start.

``python -m benchmarks.imports [--runs 5]`` imports ``functions/NAME/app.py`` in a
fresh interpreter with ``-X importtime`` several times and prints the median total (ms)
and the slowest top-level imports.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks import ROOT

FUNCTIONS = ROOT / "functions"
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def measure(function: Path, runs: int) -> dict[str, object]:
    totals: list[float] = []
    tops: dict[str, float] = {}
    for _ in range(runs):
        env = {**os.environ, "PYTHONPATH": str(function), "POWERTOOLS_TRACE_DISABLED": "1"}
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import app"], env=env,
                              capture_output=True, text=True, check=True)
        rows = [m for m in (_LINE.match(line) for line in done.stderr.splitlines()) if m]
        totals.append(int(rows[-1].group(2)) / 1000)
        for m in rows:
            if len(m.group(3)) == 3:  # imported directly by app.py
                tops[m.group(4)] = max(tops.get(m.group(4), 0.0), int(m.group(2)) / 1000)
    slowest = sorted(tops.items(), key=lambda item: -item[1])[:3]
    return {"median_ms": round(statistics.median(totals), 1), "slowest": {k: round(v, 1) for k, v in slowest}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    report = {f.name: measure(f, args.runs) for f in sorted(FUNCTIONS.iterdir()) if (f / "app.py").exists()}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
