"""SearchIndex on an Amazon OpenSearch Service domain, through opensearch-py.

One index per embedder identity, reached through an alias, so a new model is a new index
and a switch of the alias. The vector field is mapped with the dimension the identity
declares (``model@version:dims``), and an index mapped under another identity or dimension
is refused. Both lanes carry the same access filter: inside ``bool.filter`` for BM25 and
inside the ``knn`` clause for vectors (efficient filtering on the lucene engine: the filter
is applied during the HNSW search, not to its results).

What the alias points at changes by a migration, and the containers still warm from before
it embed with the old model until the redeploy that ships the new configuration. So a
container reads the alias's mapping (whose ``_meta`` names the embedder identity) again
before every write, and for searches at most ``MAPPING_SECONDS`` after it last did: a write of
another model's vectors is refused (:class:`~citewell.errors.EmbedderSwitched`, retried by the
queue), and a search answers from the lexical lane, saying so, until the redeploy.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from citewell.errors import EmbedderMismatch, EmbedderSwitched, RetrievalTimedOut, RetrievalUnavailable
from citewell.filters import Scope
from citewell.index.bulk import BulkRetry, send_rows
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity
from citewell.models.values import sha256_text
from citewell.ports import LaneHit, QueryVector, query_vector

DEFAULT_ALIAS = "citewell-chunks"
MAX_ID_BYTES = 512  # OpenSearch refuses a longer _id
MAPPING_SECONDS = 30.0  # how long a search trusts the alias's mapping it read (writes read it every time)
_SOURCE = ["chunk_id", "document_id", "revision", "title", "section_path", "body"]


def access_filter(identity: Identity, scope: Scope = None) -> list[dict[str, Any]]:
    """The one access predicate: tenant equal, any of the caller's roles, status live; and, with a
    query filter, its documents (a scope narrows, beside the access terms, never instead of them)."""
    found: list[dict[str, Any]] = [
        {"term": {"tenant": identity.tenant}},
        {"terms": {"roles": sorted(identity.roles)}},
        {"term": {"status": "live"}},
    ]
    if scope is not None:
        found.append({"terms": {"document_id": sorted(scope)}})
    return found


def lexical_body(query: str, identity: Identity, k: int, scope: Scope = None) -> dict[str, Any]:
    return {
        "size": k,
        "_source": _SOURCE,
        "query": {"bool": {
            "must": [{"multi_match": {"query": query, "fields": ["context", "body"], "operator": "or"}}],
            "filter": access_filter(identity, scope),
        }},
        "sort": ["_score", {"chunk_id": "asc"}],
    }


def vector_body(vector: np.ndarray, identity: Identity, k: int, scope: Scope = None) -> dict[str, Any]:
    return {
        "size": k,
        "_source": _SOURCE,
        "query": {"knn": {"vector": {
            "vector": [float(x) for x in vector],
            "k": k,
            "filter": {"bool": {"filter": access_filter(identity, scope)}},
        }}},
    }


def msearch_body(
    text: str | None, vector: np.ndarray | None, identity: Identity, k: int, scope: Scope = None
) -> list[tuple[str, dict[str, Any]]]:
    """``(lane, body)`` pairs of one ``_msearch``; a lane without input is left out."""
    bodies = []
    if text is not None and text.strip():
        bodies.append(("bm25", lexical_body(text, identity, k, scope)))
    if vector is not None:
        bodies.append(("vector", vector_body(vector, identity, k, scope)))
    return bodies


# What passes these is written to the slow logs, which the stack's domain publishes to CloudWatch
# Logs (infra/stacks/search.py): without thresholds an index logs nothing slow. A search (an
# _msearch's query phase) is slow at 1 s and worrying at 2 s; a bulk write of a document's rows
# at 2 s and 5 s.
SLOW_LOG = {
    "search.slowlog.threshold.query.info": "1s", "search.slowlog.threshold.query.warn": "2s",
    "search.slowlog.threshold.fetch.warn": "1s",
    "indexing.slowlog.threshold.index.info": "2s", "indexing.slowlog.threshold.index.warn": "5s",
}


def index_body(embedder_identity: str, dims: int) -> dict[str, Any]:
    keyword = {"type": "keyword"}
    return {
        "settings": {"index": {"knn": True, **SLOW_LOG}},
        "mappings": {
            "_meta": {"embedder_identity": embedder_identity},
            # The k-NN engine searches the vectors it indexed; a copy in _source would only be
            # stored, snapshotted and sent back. Nothing reads it: a migration re-embeds through
            # the embedding cache, and no update or reindex runs on these indexes.
            "_source": {"excludes": ["vector"]},
            "properties": {
                "tenant": keyword, "roles": keyword, "document_id": keyword, "revision": keyword,
                "status": keyword, "chunk_id": keyword,
                "context": {"type": "text", "analyzer": "english"},
                "body": {"type": "text", "analyzer": "english"},
                "title": {"type": "keyword", "index": False},
                "section_path": {"type": "keyword", "index": False},
                "vector": {
                    "type": "knn_vector", "dimension": dims,
                    "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil",
                               "parameters": {"m": 16, "ef_construction": 128}},
                },
            },
        },
    }


def identity_dims(embedder_identity: str) -> int:
    """The dimension an identity ``model@version:dims`` declares."""
    _, _, dims = embedder_identity.rpartition(":")
    if not dims.isdigit() or int(dims) <= 0:
        raise EmbedderMismatch(f"embedder identity {embedder_identity!r} does not end in ':dimensions'")
    return int(dims)


def _mismatch(current: str, dims: int | None, wanted: str) -> EmbedderMismatch:
    built = f"{current} vectors" + (f" in {dims} dimensions" if dims is not None else "")
    return EmbedderSwitched(f"this index holds {built}; {wanted} cannot be used with it: migrate to a new index for "
                            "this embedder (citewell.lambdas.migrate), or, after a migration, redeploy with its embedder")


def row_id(chunk: Chunk) -> str:
    """A row's ``_id``: its tenant, revision and chunk id. A chunk id that would take it over
    OpenSearch's 512 bytes (a long document id) is ``#`` and its SHA-256 instead: stable across
    redeliveries, unique, and never a chunk id (a document id has no ``#``). An id that fits keeps
    the spelling rows were always written with."""
    natural = f"{chunk.tenant}|{chunk.revision}|{chunk.chunk_id}"
    if len(natural.encode("utf-8")) <= MAX_ID_BYTES:
        return natural
    return f"{chunk.tenant}|{chunk.revision}|#{sha256_text(chunk.chunk_id)}"


def _doc_filter(tenant: str, document_id: str, revision: str | None = None) -> dict[str, Any]:
    terms = [{"term": {"tenant": tenant}}, {"term": {"document_id": document_id}}]
    if revision is not None:
        terms.append({"term": {"revision": revision}})
    return {"bool": {"filter": terms}}


class OpenSearchIndex:
    def __init__(self, client: Any, alias: str = DEFAULT_ALIAS, retry: BulkRetry | None = None) -> None:
        self.client = client
        self.alias = alias
        self.retry = retry or BulkRetry()  # how rows the domain refuses as too many are sent again
        self._mapped: tuple[str | None, int | None] | None = None  # (identity, dims) once the alias exists
        self._mapped_at = 0.0  # time.monotonic() of that read

    @classmethod
    def connect(cls, host: str, region: str, alias: str = DEFAULT_ALIAS) -> OpenSearchIndex:
        """A client signing every request with SigV4 for the domain (service ``es``)."""
        import boto3
        from opensearchpy import AWSV4SignerAuth, OpenSearch

        from citewell.index.opensearch_deadline import BoundedRequestsConnection

        auth = AWSV4SignerAuth(boto3.Session().get_credentials(), region, "es")
        client = OpenSearch(hosts=[{"host": host, "port": 443}], http_auth=auth, use_ssl=True, verify_certs=True,
                            connection_class=BoundedRequestsConnection, timeout=30)
        return cls(client, alias)

    def _index_name(self, embedder_identity: str) -> str:
        return f"{self.alias}-{re.sub(r'[^a-z0-9]+', '-', embedder_identity.lower()).strip('-')}"

    def mapped(self, fresh: bool = False) -> tuple[str | None, int | None] | None:
        """``(identity, vector dimension)`` of the index behind the alias; None while there is none.
        Read again when ``fresh`` or older than ``MAPPING_SECONDS``: a migration may have moved the alias."""
        if self._mapped is not None and not fresh and time.monotonic() - self._mapped_at <= MAPPING_SECONDS:
            return self._mapped
        self._mapped = None
        if self.client.indices.exists_alias(name=self.alias):
            (body,) = self.client.indices.get_mapping(index=self.alias).values()
            mappings = body["mappings"]
            vector = mappings.get("properties", {}).get("vector", {})
            dims = int(vector["dimension"]) if "dimension" in vector else None
            self._mapped, self._mapped_at = (mappings.get("_meta", {}).get("embedder_identity"), dims), time.monotonic()
        return self._mapped

    def require_embedder(self, embedder_identity: str) -> None:
        """Before a stage spends a model's time on vectors for this index: the alias's index, read
        now, was built for ``embedder_identity`` (or there is none yet); else EmbedderSwitched."""
        self.mapped(fresh=True)
        self._check(embedder_identity)

    def _exists(self) -> bool:
        return self.mapped() is not None

    def embedder_identity(self) -> str | None:
        found = self.mapped()
        return found[0] if found else None

    def _check(self, embedder_identity: str) -> bool:
        """True when the index exists and fits this identity; raises when it was built for another."""
        found = self.mapped()
        if found is None:
            return False
        current, dims = found
        if current != embedder_identity or dims != identity_dims(embedder_identity):
            raise _mismatch(str(current), dims, embedder_identity)
        return True

    def _ensure(self, embedder_identity: str) -> None:
        if self._check(embedder_identity):
            return
        name = self._index_name(embedder_identity)
        if not self.client.indices.exists(index=name):
            self.client.indices.create(index=name, body=index_body(embedder_identity, identity_dims(embedder_identity)))
        self.client.indices.put_alias(index=name, name=self.alias)
        self._mapped = None
        self._check(embedder_identity)

    # -- writes --------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder_identity: str) -> int:
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk")
        self.mapped(fresh=True)  # a warm container's view of the alias may predate a migration
        self._ensure(embedder_identity)
        for tenant, document_id, revision in sorted({(c.tenant, c.document_id, c.revision) for c in chunks}):
            self.delete_revision(tenant, document_id, revision)
        return self._bulk(self.alias, [(chunks, vectors)])

    def write_revision(self, tenant: str, document_id: str, revision: str,
                       batches: Iterable[tuple[Sequence[Chunk], np.ndarray]], embedder_identity: str) -> int:
        """The revision's rows replaced by those of ``batches``, each batch's bulk bodies built as it
        is sent (a publish of 100,000 chunks holds one batch: see BENCHMARKS.md)."""
        self.mapped(fresh=True)
        self._ensure(embedder_identity)
        self.delete_revision(tenant, document_id, revision)

        def checked() -> Iterator[tuple[Sequence[Chunk], np.ndarray]]:
            for chunks, vectors in batches:
                if any((c.tenant, c.document_id, c.revision) != (tenant, document_id, revision) for c in chunks):
                    raise ValueError(f"a batch of revision {revision[:12]} holds another revision's chunks")
                yield chunks, vectors

        return self._bulk(self.alias, checked())

    def flush(self) -> None:
        """Nothing to do: each write is refreshed once before it returns."""

    def _bulk(self, target: str, batches: Iterable[tuple[Sequence[Chunk], np.ndarray]]) -> int:
        """Sent to ``target``'s ``_bulk`` (:func:`citewell.index.bulk.send_rows`: one request held
        at a time, a row's action, its vector as JSON floats, built when its request is; rows the
        domain refuses as too many sent again after a backoff). No request refreshes (each would
        cut a segment): one refresh at the end makes every row searchable before this returns, as
        a publish's count and switch need."""

        def rows() -> Iterator[tuple[str, dict[str, Any]]]:
            for chunks, vectors in batches:
                if len(chunks) != len(vectors):
                    raise ValueError("one vector per chunk")
                for c, v in zip(chunks, vectors):
                    yield row_id(c), {
                        "tenant": c.tenant, "roles": sorted(c.allowed_roles), "document_id": c.document_id,
                        "revision": c.revision, "status": "live", "chunk_id": c.chunk_id, "title": c.title,
                        "section_path": c.heading_path, "context": c.context, "body": c.text,
                        "vector": np.asarray(v, dtype=np.float32).tolist(),
                    }

        written = send_rows(self.client, target, rows(), self.retry)
        self.client.indices.refresh(index=target)
        return written

    def _delete(self, query: dict[str, Any]) -> int:
        if not self._exists():
            return 0
        reply = self.client.delete_by_query(index=self.alias, body={"query": query}, refresh=True, conflicts="proceed")
        return int(reply.get("deleted", 0))

    def delete_revision(self, tenant: str, document_id: str, revision: str) -> int:
        return self._delete(_doc_filter(tenant, document_id, revision))

    def delete_document(self, tenant: str, document_id: str) -> int:
        return self._delete(_doc_filter(tenant, document_id))

    def count(self, tenant: str, document_id: str, revision: str) -> int:
        if not self._exists():
            return 0
        return int(self.client.count(index=self.alias, body={"query": _doc_filter(tenant, document_id, revision)})["count"])

    def revisions(self, tenant: str, document_id: str) -> list[str]:
        return sorted({r for t, d, r, _ in self._composite(_doc_filter(tenant, document_id))})

    def inventory(self) -> list[tuple[str, str, str, int]]:
        return self._composite({"match_all": {}})

    def _composite(self, query: dict[str, Any]) -> list[tuple[str, str, str, int]]:
        buckets = self._buckets(query, ("tenant", "document_id", "revision"))
        return [(b["tenant"], b["document_id"], b["revision"], n) for b, n in buckets]

    def _buckets(self, query: dict[str, Any], fields: tuple[str, ...]) -> list[tuple[dict[str, str], int]]:
        """Every composite bucket over ``fields``, page by page."""
        if not self._exists():
            return []
        sources = [{f: {"terms": {"field": f}}} for f in fields]
        found, after = [], None
        while True:
            composite: dict[str, Any] = {"size": 1000, "sources": sources}
            if after:
                composite["after"] = after
            body = {"size": 0, "query": query, "aggs": {"inv": {"composite": composite}}}
            reply = self.client.search(index=self.alias, body=body)
            buckets = reply["aggregations"]["inv"]["buckets"]
            found += [(b["key"], b["doc_count"]) for b in buckets]
            after = reply["aggregations"]["inv"].get("after_key")
            if not buckets or not after:
                return found

    def access_inventory(self) -> list[tuple[str, str, str, frozenset[str], str]]:
        """Distinct access of indexed rows per revision, from role counts: a role held by every
        row of a (revision, title) group is one access; a role held by some rows only splits it."""
        groups: dict[tuple[str, str, str, str], dict[str, int]] = {}
        for key, count in self._buckets({"match_all": {}}, ("tenant", "document_id", "revision", "title", "roles")):
            groups.setdefault((key["tenant"], key["document_id"], key["revision"], key["title"]), {})[key["roles"]] = count
        found = []
        for (tenant, document_id, revision, title), roles in sorted(groups.items()):
            for count in sorted(set(roles.values()), reverse=True):
                found.append((tenant, document_id, revision, frozenset(r for r, n in roles.items() if n >= count), title))
        return found

    def compact(self, removed: bool) -> bool:
        """Nothing to finish inside a request: deleted rows are refreshed away (never matched or
        served again) and the bytes leave the segments when they are merged. The scheduled
        audit asks for that merge (:meth:`expunge`); a delete never waits on it."""
        return True

    def expunge(self) -> None:
        """Ask the domain to merge away segments' deleted rows, without waiting for it to finish.

        OpenSearch merges only segments over ``index.merge.policy.expunge_deletes_allowed``
        (10%) deleted rows; the audit runs it every few hours, so removed text leaves the
        files at the latest with the merge after the next one that crosses that share."""
        if self._exists():
            self.client.indices.forcemerge(index=self.alias, params={"only_expunge_deletes": "true",
                                                                     "wait_for_completion": "false"})

    # -- lanes ---------------------------------------------------------------------------

    def lexical(self, query: str, identity: Identity, k: int, scope: Scope = None) -> list[LaneHit]:
        with _in_time():
            if identity.is_empty or not query.strip() or k <= 0 or scope == frozenset() or not self._exists():
                return []
            return self._hits(self.client.search(index=self.alias, body=lexical_body(query, identity, k, scope)))

    def vector(
        self, query: np.ndarray, embedder_identity: str, identity: Identity, k: int, scope: Scope = None
    ) -> list[LaneHit]:
        with _in_time():
            if not self._check(embedder_identity) or identity.is_empty or k <= 0 or scope == frozenset():
                return []
            return self._hits(self.client.search(index=self.alias, body=vector_body(query, identity, k, scope)), cosine=True)

    def lanes(
        self, text: str | None, vector: QueryVector | None, embedder_identity: str, identity: Identity, k: int,
        scope: Scope = None,
    ) -> dict[str, list[LaneHit]]:
        """Both lanes in one ``_msearch`` on the alias's path, each with the caller's filter (and a
        query filter's documents) inside its query; the headers name no index (the domain refuses one)."""
        vector = query_vector(vector)
        with _in_time():
            exists = self._check(embedder_identity) if vector is not None else self._exists()
        asked = exists and not identity.is_empty and k > 0 and scope != frozenset()
        wanted = msearch_body(text, vector, identity, k, scope) if asked else []
        found: dict[str, list[LaneHit]] = {lane: [] for lane, given in (("bm25", text), ("vector", vector)) if given is not None}
        if not wanted:
            return found
        with _in_time():
            replies = self.client.msearch(index=self.alias, body=[line for _, body in wanted for line in ({}, body)])["responses"]
        for (lane, _), reply in zip(wanted, replies):
            if "error" in reply:
                raise RetrievalUnavailable(f"the {lane} lane failed: {reply['error']}")
            found[lane] = self._hits(reply, cosine=lane == "vector")
        return found

    @staticmethod
    def _hits(reply: dict[str, Any], cosine: bool = False) -> list[LaneHit]:
        """``cosine``: a kNN reply, whose ``cosinesimil`` score is ``(1 + cosine) / 2``; the port speaks cosine."""
        return [
            LaneHit(
                chunk_id=h["_source"]["chunk_id"], document_id=h["_source"]["document_id"], revision=h["_source"]["revision"],
                title=h["_source"]["title"], section_path=list(h["_source"]["section_path"]), text=h["_source"]["body"],
                score=2.0 * float(h["_score"] or 0.0) - 1.0 if cosine else float(h["_score"] or 0.0), rank=rank,
            )
            for rank, h in enumerate(reply["hits"]["hits"], start=1)
        ]


@contextmanager
def _in_time() -> Iterator[None]:
    """A search the domain did not answer within the request's deadline (or its own timeout), or
    that found too little time left to be sent: RetrievalTimedOut, never "nothing found"."""
    from opensearchpy.exceptions import ConnectionTimeout

    try:
        yield
    except ConnectionTimeout:
        raise RetrievalTimedOut("the search index gave no reply in the time the request had left") from None
    except TimeoutError as exc:  # citewell.deadline's: too little left to ask
        raise RetrievalTimedOut(f"the search index was not asked ({exc})") from None


# -- a new embedding model: a new index, filled, then one atomic switch ---------------------


def migrate_index(index: OpenSearchIndex, identity: str, batches: Iterable[tuple[Sequence[Chunk], np.ndarray]]) -> dict[str, Any]:
    """Move ``index`` to the embedder ``identity``: build the index for it beside the served one,
    fill it with ``batches`` (chunks and their vectors under ``identity``, read one at a time, after
    the new index exists), switch the alias in one ``_aliases`` call, then drop the old index. An
    index already mapped under ``identity`` reads no batch. Search keeps using the old index until
    the switch. What fills it is :func:`citewell.lambdas.migrate.migrate`."""
    current = index.mapped()
    if current is not None and current[0] == identity and current[1] == identity_dims(identity):
        return {"identity": identity, "chunks": 0, "switched": False}
    client, target = index.client, index._index_name(identity)
    if client.indices.exists(index=target):  # what an interrupted run left: not served, start it again
        client.indices.delete(index=target)
    client.indices.create(index=target, body=index_body(identity, identity_dims(identity)))
    written = index._bulk(target, batches)  # refreshed once, after the last batch
    previous = sorted(client.indices.get_alias(name=index.alias)) if client.indices.exists_alias(name=index.alias) else []
    actions = [{"remove": {"index": name, "alias": index.alias}} for name in previous]
    client.indices.update_aliases(body={"actions": [*actions, {"add": {"index": target, "alias": index.alias}}]})
    for name in previous:
        if name != target:
            client.indices.delete(index=name)
    index._mapped = None
    return {"identity": identity, "chunks": written, "switched": True, "dropped": previous}
