"""A kNN-capable stand-in for OpenSearch: an HTTP proxy in front of osmem-server.

osmem answers everything but the ``knn`` query. The proxy forwards every request to osmem
and answers ``knn`` itself, the way the k-NN plugin's lucene engine does with a filter
(exact over the filtered rows, score ``(1 + cosine) / 2``), after checking the request against
the index mapping as OpenSearch does: the field must be a ``knn_vector`` and the query vector
must have its dimension. It refuses a ``_bulk`` or ``_msearch`` body that names an index, as
the stack's domain does (``rest.action.multi.allow_explicit_index: false``), so the index in
the path is the only one a request reaches. Every request is recorded with the function that
made it, so the IAM replay can check each against that function's role.

The tests at the end hold the stand-in itself to what the real engine does.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest
import requests


def _error(status: int, kind: str, reason: str) -> dict[str, Any]:
    return {"error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason}, "status": status}


def _indexed_vector(hit: dict[str, Any], field: str) -> np.ndarray:
    """A hit's vector as the index holds it: its doc values (a list, or osmem's "[x y z]" text)."""
    (value,) = hit.get("fields", {}).get(field) or [[]]
    if isinstance(value, str):
        value = value.strip("[]").split()
    return np.asarray(value, dtype=np.float64)


def _explicit_index(route: str, body: bytes) -> str | None:
    """OpenSearch's refusal of a body naming an index while ``allow_explicit_index`` is false:
    any ``_index`` in a bulk action's metadata, any ``index`` or ``indices`` in a multi-search header."""
    lines = iter(json.loads(line) for line in body.decode().splitlines() if line.strip())
    if route.endswith("/_msearch"):
        if any("index" in header or "indices" in header for header, _ in zip(lines, lines)):
            return "explicit index in multi search is not allowed"
        return None
    for line in lines:
        ((action, meta),) = line.items()
        if "_index" in meta:
            return "explicit index in bulk is not allowed"
        if action != "delete":  # every other action is followed by its source
            next(lines, None)
    return None


class KnnProxy:
    """Forwards to ``upstream``; ``_search`` and ``_msearch`` bodies with a ``knn`` query are answered here."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.calls: list[tuple[str, str, str]] = []  # (caller, method, path)
        self.requests: list[tuple[str, str, str]] = []  # (method, path, query string): what a request asked of the engine
        self.caller = "test"
        self.overloaded: set[str] = set()  # endpoints (``_bulk``) answered 429 as a domain under load does
        self.stalled: dict[str, float] = {}  # endpoints (``_msearch``) answered only after these seconds, as a domain in trouble
        # What the next _bulk requests meet, one entry a request, then osmem alone: "all", the
        # request refused with 429; "some", every other row refused with 429 and the rest written.
        self.busy: list[str] = []
        self.bulk_rows: list[int] = []  # how many rows each _bulk request carried
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def _respond(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a stalled endpoint)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                proxy.calls.append((proxy.caller, self.command, urlsplit(self.path).path))
                proxy.requests.append((self.command, urlsplit(self.path).path, urlsplit(self.path).query))
                stall = proxy.stalled.get(urlsplit(self.path).path.rsplit("/", 1)[-1], 0.0)
                time.sleep(stall)
                try:
                    status, payload, content_type = proxy.handle(self.command, self.path, body, self.headers.get("Content-Type"))
                except requests.ConnectionError:
                    if not stall:
                        raise
                    return  # the engine stopped with the test that stalled this request: nobody waits for it
                self._respond(status, payload, content_type)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- routing ---------------------------------------------------------------------------

    def handle(self, method: str, path: str, body: bytes, content_type: str | None) -> tuple[int, bytes, str]:
        route = urlsplit(path).path
        if route.endswith("/_bulk"):
            self.bulk_rows.append(sum(1 for line in body.splitlines() if line.strip()) // 2)
        if route.rsplit("/", 1)[-1] in self.overloaded:
            reason = "rejected execution of coordinating operation"
            return 429, json.dumps(_error(429, "es_rejected_execution_exception", reason)).encode(), "application/json"
        if method in ("POST", "PUT", "GET") and route.endswith(("/_bulk", "/_msearch")) and (refused := _explicit_index(route, body)):
            return 400, json.dumps(_error(400, "illegal_argument_exception", refused)).encode(), "application/json"
        if method in ("POST", "PUT") and route.endswith("/_bulk") and self.busy:
            return self._busy_bulk(self.busy.pop(0), path, body, content_type)
        if method in ("GET", "POST") and route.endswith("/_msearch"):
            index = route.rsplit("/_msearch", 1)[0].strip("/")
            return 200, json.dumps(self._msearch(index, body)).encode(), "application/json"
        if method in ("GET", "POST") and route.endswith("/_search") and body:
            query = json.loads(body)
            if "knn" in (query.get("query") or {}):
                index = route.rsplit("/_search", 1)[0].strip("/")
                reply = self._knn(index, query)
                return int(reply.get("status", 200)), json.dumps(reply).encode(), "application/json"
        return self._forward(method, path, body, content_type)

    def _forward(self, method: str, path: str, body: bytes, content_type: str | None) -> tuple[int, bytes, str]:
        headers = {"Content-Type": content_type} if content_type else {}
        reply = requests.request(method, self.upstream + path, data=body or None, headers=headers, timeout=30)
        return reply.status_code, reply.content, reply.headers.get("Content-Type", "application/json")

    def _busy_bulk(self, how: str, path: str, body: bytes, content_type: str | None) -> tuple[int, bytes, str]:
        """A _bulk the domain is too busy for: refused whole (``all``), or with every other row
        refused (``some``), as a shard whose write queue is full answers (200, ``errors`` true,
        those items 429); the other rows go to osmem and are written."""
        if how == "all":
            reason = "rejected execution of coordinating operation"
            return 429, json.dumps(_error(429, "es_rejected_execution_exception", reason)).encode(), "application/json"
        lines = [line for line in body.decode().splitlines() if line.strip()]
        rows = list(zip(lines[::2], lines[1::2]))  # index actions only: each with its source
        refused = set(range(1, len(rows), 2))
        kept = [pair for n, pair in enumerate(rows) if n not in refused]
        written: list[dict[str, Any]] = []
        if kept:
            status, payload, _ = self._forward("POST", path, "".join(f"{a}\n{s}\n" for a, s in kept).encode(), content_type)
            if status != 200:
                return status, payload, "application/json"
            written = json.loads(payload)["items"]
        index = urlsplit(path).path.rsplit("/_bulk", 1)[0].strip("/")
        items, accepted = [], iter(written)
        for n, (action, _) in enumerate(rows):
            if n in refused:
                row = json.loads(action)["index"]["_id"]
                items.append({"index": {"_index": index, "_id": row, "status": 429, "error": {
                    "type": "es_rejected_execution_exception",
                    "reason": "rejected execution of primary operation [shard write queue full]"}}})
            else:
                items.append(next(accepted))
        return 200, json.dumps({"took": 1, "errors": bool(refused), "items": items}).encode(), "application/json"

    def _msearch(self, index: str, body: bytes) -> dict[str, Any]:
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        responses = []
        for header, query in zip(lines[::2], lines[1::2]):
            target = header.get("index", index)
            if "knn" in (query.get("query") or {}):
                responses.append(self._knn(target, query))
            else:
                status, payload, _ = self._forward("POST", f"/{target}/_search", json.dumps(query).encode(), "application/json")
                reply = json.loads(payload)
                responses.append(reply if status == 200 else {**reply, "status": status})
        return {"took": 0, "responses": responses}

    # -- the k-NN plugin, lucene engine, exact under a filter ---------------------------

    def _knn(self, index: str, query: dict[str, Any]) -> dict[str, Any]:
        ((field, clause),) = query["query"]["knn"].items()
        mapping = requests.get(f"{self.upstream}/{index}/_mapping", timeout=30).json()
        (definition,) = mapping.values()
        spec = definition["mappings"]["properties"].get(field)
        if not spec or spec.get("type") != "knn_vector":
            return _error(400, "query_shard_exception", f"Field '{field}' is not knn_vector type.")
        vector = np.asarray(clause["vector"], dtype=np.float64)
        if len(vector) != int(spec["dimension"]):
            return _error(400, "illegal_argument_exception",
                          f"Query vector has invalid dimension: {len(vector)}. Dimension should be: {spec['dimension']}")
        # The plugin scores the vectors it indexed, which the mapping keeps out of _source: read
        # them from the field's doc values (osmem writes one as "[x y z]").
        rows = {"size": 10000, "query": clause.get("filter") or {"match_all": {}}, "docvalue_fields": [field]}
        found = requests.post(f"{self.upstream}/{index}/_search", json=rows, timeout=30).json()["hits"]["hits"]
        scored = []
        for hit in found:
            stored = _indexed_vector(hit, field)
            if len(stored) != len(vector):
                continue
            cosine = float(stored @ vector / max(np.linalg.norm(stored) * np.linalg.norm(vector), 1e-12))
            scored.append(((1.0 + cosine) / 2.0, hit))
        scored.sort(key=lambda pair: (-pair[0], pair[1]["_id"]))
        wanted = query.get("_source")
        hits = [
            {"_index": hit["_index"], "_id": hit["_id"], "_score": score,
             "_source": {k: v for k, v in hit["_source"].items() if not isinstance(wanted, list) or k in wanted}}
            for score, hit in scored[: min(int(clause["k"]), int(query.get("size", clause["k"])))]
        ]
        return {"took": 0, "timed_out": False, "hits": {"total": {"value": len(hits), "relation": "eq"},
                                                       "max_score": hits[0]["_score"] if hits else None, "hits": hits}}


@pytest.fixture
def knn_proxy(osmem_clone) -> Iterator[KnnProxy]:
    proxy = KnnProxy(osmem_clone.url)
    yield proxy
    proxy.close()


# -- the stand-in answers as the engine does ------------------------------------------------


def _client(proxy: KnnProxy):  # type: ignore[no-untyped-def]
    from opensearchpy import OpenSearch

    return OpenSearch(hosts=[proxy.url])


def _mapped(client: Any, dims: int) -> None:
    from citewell.index.opensearch import index_body

    client.indices.create(index="knn-test", body=index_body(f"test@1:{dims}", dims))
    rows = [({"tenant": "a", "vector": [1.0, 0.0, 0.0]}, "x"), ({"tenant": "a", "vector": [0.0, 1.0, 0.0]}, "y"),
            ({"tenant": "b", "vector": [1.0, 0.1, 0.0]}, "z")]
    for source, doc_id in rows:
        client.index(index="knn-test", id=doc_id, body=source, refresh=True)


def test_the_stand_in_ranks_by_cosine_inside_the_filter(knn_proxy):
    client = _client(knn_proxy)
    _mapped(client, 3)
    body = {"size": 5, "query": {"knn": {"vector": {"vector": [1.0, 0.0, 0.0], "k": 5,
                                                    "filter": {"bool": {"filter": [{"term": {"tenant": "a"}}]}}}}}}
    hits = client.search(index="knn-test", body=body)["hits"]["hits"]
    assert [h["_id"] for h in hits] == ["x", "y"] and hits[0]["_score"] == pytest.approx(1.0)
    replies = client.msearch(index="knn-test", body=[{}, body, {}, {"query": {"match_all": {}}}])["responses"]
    assert [h["_id"] for h in replies[0]["hits"]["hits"]] == ["x", "y"] and len(replies[1]["hits"]["hits"]) == 3


def test_the_stand_in_refuses_what_the_engine_refuses(knn_proxy):
    client = _client(knn_proxy)
    _mapped(client, 3)
    wrong_dims = {"query": {"knn": {"vector": {"vector": [1.0, 0.0], "k": 2}}}}
    wrong_field = {"query": {"knn": {"embedding": {"vector": [1.0, 0.0, 0.0], "k": 2}}}}
    replies = client.msearch(index="knn-test", body=[{}, wrong_dims, {}, wrong_field])["responses"]
    assert "dimension" in replies[0]["error"]["reason"] and "not knn_vector" in replies[1]["error"]["reason"]


def test_the_stand_in_refuses_an_id_over_512_bytes_as_the_engine_does(knn_proxy):
    client = _client(knn_proxy)
    _mapped(client, 3)

    def bulk(doc_id: str) -> requests.Response:
        lines = [{"index": {"_id": doc_id}}, {"tenant": "a", "vector": [0.0, 0.0, 1.0]}]
        return requests.post(f"{knn_proxy.url}/knn-test/_bulk", data="".join(json.dumps(line) + "\n" for line in lines).encode(),
                             headers={"Content-Type": "application/x-ndjson"}, timeout=30)

    assert bulk("i" * 512).status_code == 200
    refused = bulk("é" * 257)  # 514 bytes in 257 characters: bytes are counted
    assert refused.status_code == 400 and "is too long, must be no longer than 512 bytes" in refused.text
    assert requests.put(f"{knn_proxy.url}/knn-test/_doc/{'i' * 513}", json={"tenant": "a"}, timeout=30).status_code == 400


def test_the_stand_in_refuses_a_body_naming_an_index_as_the_domain_does(knn_proxy):
    """The stack's domain sets ``rest.action.multi.allow_explicit_index`` to false."""
    client = _client(knn_proxy)
    _mapped(client, 3)

    def post(path: str, lines: list[dict]) -> requests.Response:
        return requests.post(f"{knn_proxy.url}{path}", data="".join(json.dumps(line) + "\n" for line in lines).encode(),
                             headers={"Content-Type": "application/x-ndjson"}, timeout=30)

    named = post("/knn-test/_bulk", [{"delete": {"_id": "x"}}, {"index": {"_index": "other", "_id": "w"}}, {"tenant": "a"}])
    assert named.status_code == 400 and "explicit index in bulk is not allowed" in named.text
    assert post("/knn-test/_bulk", [{"delete": {"_id": "x"}}, {"index": {"_id": "w"}}, {"tenant": "a"}]).status_code == 200
    searched = post("/knn-test/_msearch", [{}, {"query": {"match_all": {}}}, {"index": "other"}, {"query": {"match_all": {}}}])
    assert searched.status_code == 400 and "explicit index in multi search is not allowed" in searched.text
    assert post("/knn-test/_msearch", [{}, {"query": {"match_all": {}}}]).status_code == 200
