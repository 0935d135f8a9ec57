"""The first calls of a process use a quickly built session, later ones the optimised one; both give the same vectors."""

from __future__ import annotations

import numpy as np

from citewell.embedders.minilm import QUICK_CALLS, MiniLMEmbedder

TEXTS = ["How many days of annual leave do I get?", "zorblatt",
         "When the wind exceeds the operating limit the operator parks the crane at the storm position. " * 6]


def test_quick_then_optimised_sessions_give_the_same_vectors():
    embedder = MiniLMEmbedder()
    first = embedder.embed(TEXTS)
    assert "_quick_session" in embedder.__dict__ and "_session" not in embedder.__dict__  # no graph optimisation paid yet
    for _ in range(QUICK_CALLS):
        later = embedder.embed(TEXTS)
    assert "_session" in embedder.__dict__ and "_quick_session" not in embedder.__dict__  # optimised, the quick one freed
    np.testing.assert_allclose(first, later, atol=1e-5)
    assert np.allclose(np.linalg.norm(later, axis=1), 1.0, atol=1e-5)
