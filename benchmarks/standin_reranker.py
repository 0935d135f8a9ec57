"""A stand-in rerank server for measuring the reranker seam, not a reranker: it speaks the
common ``POST /rerank`` wire format and orders the documents by a known signal, the share of
the query's words (three letters or more, lowercased) each one holds, ties by the order sent.

``python -m benchmarks.standin_reranker [--port 0]``: its first line on stdout names the address;
point ``CITEWELL_RERANKER=http CITEWELL_RERANK_URL=http://HOST:PORT`` at it.
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORD = re.compile(r"[^\W_]{3,}")


def overlap(query: str, document: str) -> float:
    wanted = set(WORD.findall(query.lower()))
    return len(wanted & set(WORD.findall(document.lower()))) / len(wanted) if wanted else 0.0


def rerank(body: dict) -> dict:
    documents = [d if isinstance(d, str) else d["text"] for d in body["documents"]]
    scored = sorted(((overlap(body["query"], d), -i) for i, d in enumerate(documents)), reverse=True)
    top = body.get("top_n") or len(documents)
    return {"results": [{"index": -i, "relevance_score": score} for score, i in scored[:top]]}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path.rstrip("/").rsplit("/", 1)[-1] != "rerank":
            self._reply(404, {"message": f"no route {self.path}"})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            reply = rerank(body)
        except (ValueError, KeyError, TypeError) as error:
            self._reply(400, {"message": f"cannot read the request: {error}"})
            return
        self._reply(200, reply)

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"http://{args.host}:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
