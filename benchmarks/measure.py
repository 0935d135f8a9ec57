"""What every benchmark phase reports the same way: percentiles, peak memory, one JSON line."""

from __future__ import annotations

import json
import resource
import sys
from collections.abc import Sequence

import numpy as np


def percentiles(milliseconds: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(milliseconds, 50)), 1),
        "p95_ms": round(float(np.percentile(milliseconds, 95)), 1),
        "n": len(milliseconds),
    }


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def emit(report: dict[str, object]) -> None:
    """The phase's result, with its peak memory, as the last line of standard output."""
    report["peak_rss_mb"] = peak_rss_mb()
    sys.stdout.write(json.dumps(report) + "\n")
