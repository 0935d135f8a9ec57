"""The model generators on the answer set, through the local model server, as a user would run them.

For each generator the local model server (``model_server``: the stand-in model, no language
model) runs as a process of its own, and ``citewell eval-answers`` runs as another, with the
environment a user sets for that generator (``CITEWELL_GENERATOR`` and its variables; for
Bedrock the standard ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``). The server's log says which
replies it made faulty; each is matched to its question's judgement, so the report says per
fault kind how many verification rejected, how many the adapter found unusable, and how many
reached an answer (and of those, how many the evaluation scored wrong).

What this measures is citewell's handling of a model (prompt, transport, parsing,
verification, fallback, recording), not a model's quality: the stand-in's own reading is a
word-overlap rule.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.model_server import MODEL_NAME

SEED = 7


def generator_environment(generator: str, url: str) -> dict[str, str]:
    """What a user sets to send ``ask`` to a model server at ``url`` through ``generator``."""
    if generator == "openai":
        return {"CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": f"{url}/v1", "CITEWELL_OPENAI_MODEL": MODEL_NAME}
    if generator == "bedrock":
        return {
            "CITEWELL_GENERATOR": "bedrock", "CITEWELL_BEDROCK_MODEL_ID": MODEL_NAME,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url, "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "stand-in", "AWS_SECRET_ACCESS_KEY": "stand-in",
        }
    raise ValueError(f"no model generator {generator!r}")


@contextmanager
def model_server(fault_rate: float, seed: int, log: Path) -> Iterator[str]:
    """The local model server as a process; yields its base URL (without ``/v1``)."""
    command = [sys.executable, "-m", "benchmarks.model_server", "--port", "0",
               "--fault-rate", str(fault_rate), "--seed", str(seed), "--log", str(log)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.search(r" at (http://\S+)/v1 ", first)
        if found is None:
            raise RuntimeError(f"the model server did not start: {first!r}")
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)


def eval_answers(home: Path, questions: Path, split: str, environment: dict[str, str]) -> dict[str, Any]:
    """``citewell eval-answers`` in a process of its own, configured only by ``environment``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEWELL_", "AWS_"))} | environment
    done = subprocess.run(
        [sys.executable, "-m", "citewell", "--home", str(home), "eval-answers", str(questions), "--split", split, "--json"],
        env=env, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"eval-answers failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def fault_outcomes(
    replies: list[dict[str, Any]], cases: list[dict[str, Any]], report: dict[str, Any],
) -> dict[str, dict[str, int]]:
    """Per fault kind (``none``: a faithful reply), what became of the replies: rejected by
    verification, unusable, or reaching the answer (``wrong``: of those, scored wrong)."""
    judged = {j["id"]: j for j in report["judgements"]}
    kinds = ("replies", "rejected", "unusable", "reached", "wrong")
    outcomes: defaultdict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(kinds, 0))
    pending = iter(replies)
    reply = next(pending, None)
    for case in cases:  # asked in order, at most one reply each (none without evidence)
        if reply is None or reply["question"] != case["question"].strip():
            continue
        judgement, row = judged[case["id"]], outcomes[reply["fault"] or "none"]
        row["replies"] += 1
        if judgement["rejected"]:
            row["rejected"] += 1
        elif judgement["generator_unavailable"]:
            row["unusable"] += 1
        else:
            row["reached"] += 1
            row["wrong"] += not judgement["correct"]
        reply = next(pending, None)
    return dict(sorted(outcomes.items()))


def run(home: Path, questions: Path, cases: list[dict[str, Any]], split: str, work: Path,
        rows: tuple[tuple[str, float], ...] = (("openai", 0.0), ("openai", 0.3), ("bedrock", 0.3), ("openai", 1.0)),
        ) -> list[dict[str, Any]]:
    """Each (generator, fault rate) over one split of the questions, against a home already built."""
    results = []
    for generator, fault_rate in rows:
        log = work / f"model-server-{generator}-{fault_rate}.jsonl"
        log.unlink(missing_ok=True)
        with model_server(fault_rate, SEED, log) as url:
            report = eval_answers(home, questions, split, generator_environment(generator, url))
        replies = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
        results.append({
            "generator": report["generator"], "configured_as": generator, "fault_rate": fault_rate, "seed": SEED,
            "split": split, "overall": report["overall"], "by_category": report["by_category"],
            "rejections": report["rejections"],
            "faults": fault_outcomes(replies, [c for c in cases if c["split"] == split], report),
            "wrong": [j for j in report["judgements"] if not j["correct"]][:20],
        })
    return results
