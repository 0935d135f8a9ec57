"""``citewell serve`` under load, and search through it beside search in-process.

``python -m benchmarks.serve_load --work DIR [--clients 16] [--seconds 60] [--cache FILE]
[--search-home HOME --queries DATASET_DIR [--limit N]]``

Load: a fresh home holds two tenants' documents for three roles each, every passage carrying the
marker word of its tenant and role. A real ``citewell serve`` process answers 16 concurrent
clients for 60 s: searches, questions and citation look-ups (of answers any identity got, so
most look-ups are someone else's), each under a random identity of either tenant, while a
writer keeps one ingest running (a new revision of a long document, again and again). Every
reply is checked: no 5xx, and no marker word the caller's tenant and roles may not read.
Reported: latency p50/p95/p99 per kind, requests per second, replies by status.

Search at scale (with ``--search-home``): the judged queries of the dataset, one at a time, k=10,
as the evaluation identity against a home the speed phase built (about 50k chunks): first
in this process (``citewell.search.search``, warm), then over HTTP through a server on that
home. The same queries and order; the difference is the server's cost per request.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx

from benchmarks.measure import emit

TENANTS = ("northpier", "bluefen")
ROLES = ("staff", "support", "hr")
WRITE = "citewell:write"
IDENTITIES = [(t, roles) for t in TENANTS for roles in (("staff",), ("support",), ("hr",), ("staff", "hr"), ("support", "staff"))]
TOPICS = ["annual leave", "crane maintenance", "shift handover", "safety briefing", "overtime pay", "error codes",
          "mooring lines", "visitor badges", "night shift", "training budget"]
QUESTIONS = [
    "How many days of {t} do staff get?", "What is the procedure for {t}?", "Who approves {t}?",
    "When must {t} be reported?", "What does the policy say about {t}?",
]
WEIGHTS = (("search", 0.5), ("query", 0.3), ("citations", 0.2))


def marker(tenant: str, role: str) -> str:
    """A word only passages of this tenant and role hold."""
    return f"zq{tenant}{role}marker"


def allowed_markers(tenant: str, roles: tuple[str, ...]) -> set[str]:
    return {marker(tenant, r) for r in roles}


ALL_MARKERS = {marker(t, r) for t in TENANTS for r in ROLES}


def document_text(tenant: str, role: str, number: int, paragraphs: int = 8, revision: int = 0) -> bytes:
    word = marker(tenant, role)
    lines = [f"# {tenant.title()} {role} notes {number}"]
    for i in range(paragraphs):
        topic = TOPICS[(number + i) % len(TOPICS)]
        lines.append(f"## {topic.title()} {i}\n\nFor {topic}, the {word} rule {number}.{i} (revision {revision}) says staff "
                     f"record the {topic} in the harbour log, ask the duty lead who approves {topic}, and report "
                     f"problems with {topic} within {2 + i} days.")
    return ("\n\n".join(lines) + "\n").encode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """A ``citewell serve`` process for the run, stopped with SIGTERM."""

    def __init__(self, home: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "citewell", "--home", str(home), "serve", "--port", str(self.port)],
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"citewell serve exited: see {log}")
            try:
                if httpx.get(f"{self.url}/openapi.json", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise SystemExit(f"citewell serve did not start: see {log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def token(home: Path, tenant: str, roles: tuple[str, ...] | list[str], ttl: int = 4 * 3600) -> str:
    from citewell.serve.tokens import home_key, mint

    return mint(home_key(home), tenant=tenant, roles=roles, ttl_seconds=ttl, tenant_claim="custom:tenant",
                roles_claim="cognito:groups")


def build_home(home: Path, cache: Path | None, documents: int) -> int:
    """The two tenants' corpus, ingested in this process; returns its chunk count."""
    from benchmarks.homes import fresh_home
    from citewell.ingest.runner import ingest
    from citewell.ingest.stages import IngestRequest

    services = fresh_home(home, cache)
    requests = [
        IngestRequest(document_id=f"{role}/notes-{n}.md", tenant=tenant, allowed_roles=frozenset({role}),
                      data=document_text(tenant, role, n), filename=f"notes-{n}.md")
        for tenant in TENANTS for role in ROLES for n in range(documents)
    ]
    outcomes = ingest(services, requests)
    failed = [o for o in outcomes if o.status != "published"]
    if failed:
        raise SystemExit(f"the load corpus did not ingest: {failed[0]}")
    return sum(o.chunks for o in outcomes)


async def writer(client: httpx.AsyncClient, home: Path, stop: asyncio.Event, done: list[float]) -> None:
    """One ingest at a time, for the whole run: new revisions of one long staff document."""
    credential = {"Authorization": f"Bearer {token(home, 'northpier', ('staff', WRITE))}"}
    revision = 0
    while not stop.is_set():
        revision += 1
        started = time.perf_counter()
        created = await client.post("/documents", headers=credential,
                                    json={"document_id": "staff/long-procedures.md", "allowed_roles": ["staff"]})
        created.raise_for_status()
        form = created.json()["upload"]
        data = document_text("northpier", "staff", 999, paragraphs=60, revision=revision)
        sent = await client.post(form["url"], data=form["fields"], files={"file": ("long-procedures.md", data)})
        sent.raise_for_status()
        while True:
            reply = await client.get("/documents/staff%2Flong-procedures.md", headers=credential)
            status = reply.json()["document"]["status"]
            if status != "processing":
                break
            await asyncio.sleep(0.2)
        if status != "published":
            raise SystemExit(f"the ingest under load ended {status}: {reply.json()['document'].get('error')}")
        done.append(time.perf_counter() - started)


async def load(url: str, home: Path, clients: int, seconds: float, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    tokens = {identity: token(home, *identity) for identity in IDENTITIES}
    answers: list[str] = []
    latencies: dict[str, list[float]] = defaultdict(list)
    statuses: Counter[str] = Counter()
    leaks: list[str] = []
    server_errors: list[str] = []
    stop = asyncio.Event()
    ingests: list[float] = []
    limits = httpx.Limits(max_connections=clients + 2, max_keepalive_connections=clients + 2)

    async def client_loop(client: httpx.AsyncClient) -> None:
        while not stop.is_set():
            tenant, roles = identity = rng.choice(IDENTITIES)
            kind = rng.choices([k for k, _ in WEIGHTS], [w for _, w in WEIGHTS])[0]
            if kind == "citations" and not answers:
                kind = "query"
            question = rng.choice(QUESTIONS).format(t=rng.choice(TOPICS))
            headers = {"Authorization": f"Bearer {tokens[identity]}"}
            started = time.perf_counter()
            if kind == "search":
                reply = await client.post("/search", headers=headers, json={"question": question, "k": 10})
            elif kind == "query":
                reply = await client.post("/query", headers=headers, json={"question": question})
            else:
                reply = await client.get(f"/answers/{rng.choice(answers)}/citations", headers=headers)
            elapsed = (time.perf_counter() - started) * 1000
            if stop.is_set():
                return  # finished after the window: not counted
            latencies[kind].append(elapsed)
            statuses[f"{kind} {reply.status_code}"] += 1
            if reply.status_code >= 500:
                server_errors.append(f"{kind} {reply.status_code}: {reply.text[:200]}")
            forbidden = [m for m in ALL_MARKERS - allowed_markers(tenant, roles) if m in reply.text]
            if forbidden:
                leaks.append(f"{tenant} {roles} {kind}: {forbidden}")
            if kind == "query" and reply.status_code == 200:
                answers.append(reply.json()["answer_id"])

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        started = time.perf_counter()
        tasks = [asyncio.create_task(client_loop(client)) for _ in range(clients)]
        ingest_task = asyncio.create_task(writer(client, home, stop, ingests))
        await asyncio.sleep(seconds)
        stop.set()
        elapsed = time.perf_counter() - started
        await asyncio.gather(*tasks)
        await ingest_task

    every = [ms for values in latencies.values() for ms in values]
    return {
        "clients": clients, "seconds": round(elapsed, 1), "requests": len(every),
        "requests_per_second": round(len(every) / elapsed, 1),
        "latency_ms": {**{kind: tail(values) for kind, values in sorted(latencies.items())}, "all": tail(every)},
        "statuses": dict(sorted(statuses.items())), "server_errors": len(server_errors),
        "server_error_samples": server_errors[:5],
        "leaks": len(leaks), "leak_samples": leaks[:5], "ingests_completed": len(ingests),
        "ingest_seconds": tail([s * 1000 for s in ingests]) if ingests else None,
    }


def tail(milliseconds: list[float]) -> dict[str, float]:
    import numpy as np

    values = np.asarray(milliseconds, dtype=float)
    return {"p50_ms": round(float(np.percentile(values, 50)), 1), "p95_ms": round(float(np.percentile(values, 95)), 1),
            "p99_ms": round(float(np.percentile(values, 99)), 1), "n": int(values.size)}


def search_at_scale(home: Path, dataset: Path, limit: int, log: Path) -> dict[str, object]:
    """Each query in this process and through a server on the same home, alternately (which goes
    first alternates too), so both see the same machine: the difference is the server's cost."""
    from citewell.deployments import open_local
    from citewell.evaluation.retrieval import EVAL_IDENTITY, load_qrels, load_queries
    from citewell.search import search

    queries = list(load_queries(dataset, load_qrels(dataset, "test")).values())
    queries = queries[:limit] if limit else queries
    services = open_local(home)
    chunks = sum(n for *_, n in services.index.inventory())
    server = Server(home, log)
    try:
        headers = {"Authorization": f"Bearer {token(home, EVAL_IDENTITY.tenant, sorted(EVAL_IDENTITY.roles))}",
                   "Content-Type": "application/json"}
        # One kept-alive connection of the standard library's client: httpx's own Python costs about
        # 0.9 ms a request here, which is the client's, not the server's.
        client = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        try:
            def in_process(question: str) -> None:
                search(services, EVAL_IDENTITY, question, k=10)

            def served(question: str) -> None:
                client.request("POST", "/search", body=json.dumps({"question": question, "k": 10}), headers=headers)
                reply = client.getresponse()
                body = reply.read()
                if reply.status != 200:
                    raise SystemExit(f"search through the server failed: {reply.status} {body[:200]!r}")

            samples: dict[str, list[float]] = {"in_process": [], "served": []}
            for call in (in_process, served):  # warm: model session, vector matrix, page cache
                call(queries[0])
            for number, question in enumerate(queries):
                order = [("in_process", in_process), ("served", served)]
                for name, call in order if number % 2 == 0 else reversed(order):
                    started = time.perf_counter()
                    call(question)
                    samples[name].append((time.perf_counter() - started) * 1000)
        finally:
            client.close()
    finally:
        server.stop()
    found = {name: tail(values) for name, values in samples.items()}
    return {"home": str(home), "chunks": chunks, "queries": len(queries), **found,
            "p50_ratio": round(found["served"]["p50_ms"] / found["in_process"]["p50_ms"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--documents", type=int, default=6, help="documents per tenant and role")
    parser.add_argument("--cache", type=Path, help="the benchmark vector cache (building the corpus only)")
    parser.add_argument("--search-home", type=Path, help="a home the speed phase built, for search at scale")
    parser.add_argument("--queries", type=Path, help="a BEIR-layout dataset whose judged queries to search with")
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--no-load", action="store_true", help="only the search at scale")
    args = parser.parse_args()
    if not 1 <= args.clients <= 64 or not 1 <= args.seconds <= 600:
        raise SystemExit("--clients takes 1 to 64 and --seconds 1 to 600: the run is bounded")
    home = args.work / "homes" / "serve-load"
    logs = args.work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {}
    if not args.no_load:
        shutil.rmtree(home, ignore_errors=True)
        report["corpus_chunks"] = build_home(home, args.cache, args.documents)
        server = Server(home, logs / "serve-load-server.log")
        try:
            report["load"] = asyncio.run(load(server.url, home, args.clients, args.seconds, args.seed))
        finally:
            server.stop()
    if args.search_home:
        if not args.queries:
            raise SystemExit("--search-home needs --queries")
        report["search"] = search_at_scale(args.search_home, args.queries, args.limit, logs / "serve-search-server.log")
    emit(report)


if __name__ == "__main__":
    main()
