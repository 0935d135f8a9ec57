"""What a search costs through MCP beside the HTTP API, on one small home.

``python -m benchmarks.mcp_overhead --home DIR [--calls N]`` ingests a few Markdown documents into
a fresh home and starts ``citewell serve`` on it, then sends ``N`` pairs of the same search as
``POST /search`` and as the ``search`` tool at ``POST /mcp`` (a JSON-RPC ``tools/call``), each pair
back to back on one HTTP client and token, so the machine's load falls on both alike; the paired
difference is what the MCP transport adds on the server. Then ``N`` calls of the tool through the
SDK's client over stdio (``citewell mcp`` as a subprocess), which adds the client's own work (its
check of each result against the tool's output schema).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from benchmarks.measure import emit, percentiles

DOCUMENTS = {
    "travel.md": "# Travel policy\n\n## Hotels\n\nA hotel night is refunded up to 140 euros in capital cities and 110 "
                 "euros elsewhere, breakfast included.\n\n## Meals\n\nThe meal allowance is 35 euros a day on a full "
                 "travel day.\n",
    "handbook.md": "# Staff handbook\n\n## Annual leave\n\nFull-time staff receive 27 days of paid annual leave.\n",
    "notice.md": "# Car park notice\n\nThe staff car park on Quay Road closes for resurfacing from 3 March to 10 March.\n",
}
SEARCH = {"question": "hotel night refund", "k": 5}
WARM_UP = 10


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(home: Path, port: int) -> subprocess.Popen[bytes]:
    log = home.parent / "mcp-overhead-serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "citewell", "--home", str(home), "serve", "--port", str(port)],
                                  stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/openapi.json").status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise SystemExit(f"citewell serve did not start:\n{log.read_text()}")
        time.sleep(0.2)


def _paired(home: Path, calls: int) -> tuple[list[float], list[float]]:
    from citewell.serve.tokens import home_key, mint

    port = _free_port()
    server = _serve(home, port)
    token = mint(home_key(home), tenant="northpier", roles=["staff"], ttl_seconds=3600, tenant_claim="custom:tenant",
                 roles_claim="cognito:groups")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": SEARCH}}
    api, mcp = [], []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as client:
            for i in range(calls + WARM_UP):
                started = time.perf_counter()
                reply = client.post("/search", json=SEARCH)
                middle = time.perf_counter()
                tool = client.post("/mcp", json=call)
                ended = time.perf_counter()
                if reply.status_code != 200 or tool.status_code != 200 or tool.json()["result"]["isError"]:
                    raise SystemExit(f"a search failed: {reply.text[:300]} {tool.text[:300]}")
                if i >= WARM_UP:
                    api.append((middle - started) * 1000)
                    mcp.append((ended - middle) * 1000)
    finally:
        server.terminate()
        server.wait(60)
    return api, mcp


def _stdio(home: Path, calls: int) -> list[float]:
    import anyio
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    command = ["-m", "citewell", "--home", str(home), "mcp", "--tenant", "northpier", "--roles", "staff"]
    times: list[float] = []

    async def run() -> None:
        async with Client(StdioServerParameters(command=sys.executable, args=command, env=dict(os.environ))) as client:
            for i in range(calls + WARM_UP):
                started = time.perf_counter()
                result = await client.call_tool("search", SEARCH)
                if result.is_error:
                    raise SystemExit(f"the search tool failed: {result.content}")
                if i >= WARM_UP:
                    times.append((time.perf_counter() - started) * 1000)

    anyio.run(run)
    return times


def main() -> None:
    from citewell.cli import main as citewell

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    files = args.home.parent / "mcp-overhead-files"
    for name, text in DOCUMENTS.items():
        (files / name).parent.mkdir(parents=True, exist_ok=True)
        (files / name).write_text(text)
    with open(os.devnull, "w") as quiet:  # ingest's report would precede this phase's one JSON line
        stdout, sys.stdout = sys.stdout, quiet
        try:
            code = citewell(["--home", str(args.home), "ingest", str(files), "--tenant", "northpier", "--allow-roles",
                             "staff", "--json"])
        finally:
            sys.stdout = stdout
    if code != 0:
        raise SystemExit(f"ingest failed with {code}")
    api, mcp = _paired(args.home, args.calls)
    stdio = _stdio(args.home, args.calls)
    emit({"api_search": percentiles(api), "mcp_http_search": percentiles(mcp),
          "mcp_http_added_p50_ms": round(statistics.median(m - a for a, m in zip(api, mcp)), 1),
          "mcp_stdio_search_sdk_client": percentiles(stdio)})


if __name__ == "__main__":
    main()
