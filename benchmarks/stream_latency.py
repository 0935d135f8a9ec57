"""First streamed event of ``POST /query`` on ``citewell serve`` answering with the stand-in model.

``python -m benchmarks.stream_latency --home DIR [--questions N]`` ingests the answer set into a
fresh home, starts the stand-in model server (streaming its replies) and ``citewell serve`` with
the OpenAI-compatible generator pointed at it, then asks the answer set's answerable held-out
questions (each once, so no answer comes from the cache) with ``Accept: text/event-stream`` as
their callers. It reports the time from sending the request to the first event (a draft, or the
final event when there is none) and to the final event, and how many answers streamed drafts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.answer_quality import ingest_answerset
from benchmarks.homes import fresh_home
from benchmarks.measure import emit, percentiles
from benchmarks.model_server import MODEL_NAME, serve
from benchmarks.standin_model import StandInModel


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    from benchmarks.answerset import build as answerset
    from citewell.serve.tokens import home_key, mint

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=60)
    args = parser.parse_args()
    services = fresh_home(args.home)
    with tempfile.TemporaryDirectory() as folder:
        ingest_answerset(services, Path(folder))
    del services
    model = serve(StandInModel())
    port = _free_port()
    env = {**os.environ, "CITEWELL_GENERATOR": "openai", "CITEWELL_OPENAI_BASE_URL": f"{model.url}/v1",
           "CITEWELL_OPENAI_MODEL": MODEL_NAME, "PYTHONUNBUFFERED": "1"}
    log = args.home.parent / "stream-latency-serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "citewell", "--home", str(args.home), "serve", "--port", str(port)],
                                  stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            deadline = time.monotonic() + 180
            while True:
                try:
                    if client.get("/openapi.json").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"citewell serve did not start:\n{log.read_text()}")
                time.sleep(0.2)
            cases = [q for q in answerset.questions("held_out") if not q["refuse"] and "follows" not in q][: args.questions]
            first, final, drafted = [], [], 0
            key = home_key(args.home)
            for case in cases:
                token = mint(key, tenant=case["tenant"], roles=case["roles"], ttl_seconds=600,
                             tenant_claim="custom:tenant", roles_claim="cognito:groups", subject=f"bench:{case['id']}")
                started = time.perf_counter()
                seen_first = None
                kinds = []
                with client.stream("POST", "/query", json={"question": case["question"]},
                                   headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}) as reply:
                    for line in reply.iter_lines():
                        if line.startswith("event: "):
                            if seen_first is None:
                                seen_first = time.perf_counter()
                            kinds.append(line[7:])
                ended = time.perf_counter()
                if "final" not in kinds or seen_first is None:
                    raise SystemExit(f"{case['id']}: no final event ({kinds})")
                first.append((seen_first - started) * 1000)
                final.append((ended - started) * 1000)
                drafted += kinds[0] == "draft"
    finally:
        server.terminate()
        server.wait(60)
        model.shutdown()
    emit({"first_event": percentiles(first), "final_event": percentiles(final), "questions": len(first),
          "streamed_drafts": drafted, "first_event_max_ms": round(max(first), 1)})


if __name__ == "__main__":
    main()
