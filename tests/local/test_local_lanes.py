"""Both lanes of the embedded index run at once (the lexical one in a pool thread): each caller
still gets exactly its own lanes, whatever else runs beside it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from citewell.index.sqlite import SqliteSearchIndex
from citewell.models.chunks import Chunk
from citewell.models.identity import Identity

MODEL = "all-MiniLM-L6-v2-int8-onnx@1.0.0:384"
CALLERS = [
    Identity(tenant="northpier", roles=frozenset({"staff"})),
    Identity(tenant="northpier", roles=frozenset({"hr"})),
    Identity(tenant="northpier", roles=frozenset({"staff", "hr"})),
    Identity(tenant="bluefen", roles=frozenset({"staff"})),
]
GROUPS = [("northpier", "staff"), ("northpier", "hr"), ("bluefen", "staff")]  # row i is in GROUPS[i % 3]
WORDS = ["leave", "salary", "travel", "hotel", "error", "shift", "band", "policy"]


def filled(tmp_path) -> tuple[SqliteSearchIndex, np.ndarray]:
    rng = np.random.default_rng(7)
    rows, n = [], 240
    for i in range(n):
        tenant, role = GROUPS[i % 3]
        text = " ".join(rng.choice(WORDS, size=6))
        rows.append(Chunk(chunk_id=f"doc{i}#0#0", document_id=f"doc{i}", tenant=tenant, allowed_roles=frozenset({role}),
                          revision="r1", title="t", section_index=0, index=0, heading_path=[], start=0, end=len(text),
                          body_start=0, text=text))
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = SqliteSearchIndex(tmp_path / "index.db")
    index.upsert(rows, vectors, MODEL)
    return index, vectors


def ids(hits) -> list[tuple[str, float]]:
    return [(h.chunk_id, round(h.score, 5)) for h in hits]


def test_both_lanes_at_once_equal_each_lane_alone_for_every_caller_under_concurrency(tmp_path):
    index, vectors = filled(tmp_path)
    asks = [(caller, f"{WORDS[i % 8]} {WORDS[(3 * i) % 8]}", vectors[i]) for i in range(40) for caller in CALLERS]
    alone = [(ids(index.lexical(text, caller, 10)), ids(index.vector(vector, MODEL, caller, 10))) for caller, text, vector in asks]
    assert all(lexical and vector for lexical, vector in alone)

    def both(ask):
        caller, text, vector = ask
        found = index.lanes(text, vector, MODEL, caller, 10)
        return ids(found["bm25"]), ids(found["vector"])

    with ThreadPoolExecutor(max_workers=8) as callers:
        together = list(callers.map(both, asks))
    assert together == alone
    for (caller, _, _), (lexical, vector) in zip(asks, together):  # never another tenant's or role's row
        allowed = {f"doc{i}#0#0" for i in range(240) if GROUPS[i % 3][0] == caller.tenant and GROUPS[i % 3][1] in caller.roles}
        assert {chunk_id for chunk_id, _ in lexical + vector} <= allowed


def test_the_lexical_lane_runs_while_the_question_is_embedded(tmp_path):
    index, vectors = filled(tmp_path)
    caller = CALLERS[0]
    started = threading.Event()
    lexical = index._lexical  # the lane itself, after the filter's rows are resolved

    def watched(*args):  # the real lane, telling when it began
        started.set()
        return lexical(*args)

    index._lexical = watched

    def embedding() -> np.ndarray:
        assert started.wait(10), "the lexical lane waited for the question's vector"
        return vectors[0]

    found = index.lanes("leave salary", embedding, MODEL, caller, 10)
    assert ids(found["bm25"]) == ids(index.lexical("leave salary", caller, 10))
    assert ids(found["vector"]) == ids(index.vector(vectors[0], MODEL, caller, 10))


def test_a_question_that_could_not_be_embedded_gets_the_lexical_lane_alone(tmp_path):
    index, _ = filled(tmp_path)
    found = index.lanes("leave salary", lambda: None, MODEL, CALLERS[0], 10)
    assert list(found) == ["bm25"] and found["bm25"]


def test_an_embedder_that_cannot_run_fails_the_search_as_itself_not_as_the_index(services):
    """A plain install has no model: the user must hear which package is missing, not that
    retrieval is down."""
    from citewell.search import search

    class Uninstalled:
        identity, dims = services.embedder.identity, services.embedder.dims

        def embed(self, texts):
            raise ModuleNotFoundError("No module named 'onnxruntime'", name="onnxruntime")

    services.embedder = Uninstalled()
    with pytest.raises(ModuleNotFoundError):
        search(services, CALLERS[0], "annual leave")
