"""The embedder batches texts by token count and embeds each distinct text once: the vectors
must be the ones each text gets on its own, in the caller's order. The answerer's unit encoder
runs on the same code over its own weights, and is held to the same: a unit's cached vector must
not depend on the question it was first embedded for."""

from __future__ import annotations

import random

import numpy as np
import pytest

from citewell.answers.extractive.unit_encoder import UnitEncoder
from citewell.embedders import minilm
from citewell.embedders.minilm import MiniLMEmbedder, batches

SHORT = ["Refunds are approved by the Head of Support.", "zorblatt", "Error E1027 means the token expired.",
         "Rail travel is standard class.", "Who approves a late refund?", "The crane parks at 72 km/h."]
LONG = ["When the wind exceeds the operating limit the operator parks the crane at the storm position. " * 8,
        "Annual leave is 25 days a year, pro rata for part-time staff, and up to five days carry over. " * 3]


def _texts() -> list[str]:
    numbered = [f"Step {n}: check valve {n} and log its pressure." for n in range(20)]
    return SHORT + LONG + numbered


@pytest.mark.parametrize("model", [MiniLMEmbedder, UnitEncoder])
@pytest.mark.parametrize("window", [minilm.WINDOW, 5])  # 5: a list longer than a window, split across several
def test_a_mixed_batch_gives_each_text_its_own_vector_in_the_callers_order(
    window: int, model: type[MiniLMEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(minilm, "WINDOW", window)
    embedder = model()
    texts = _texts()
    alone = {text: embedder.embed([text])[0] for text in texts}
    mixed = texts + SHORT[:3] + LONG[:1]  # repeated texts, and enough of them for several batches
    random.Random(7).shuffle(mixed)
    together = embedder.embed(mixed)
    assert together.shape == (len(mixed), embedder.dims)
    for text, vector in zip(mixed, together):
        np.testing.assert_allclose(vector, alone[text], atol=1e-5)
    # no two texts have vectors close enough that a row given to the wrong text could pass
    assert min(float(np.abs(alone[a] - alone[b]).max()) for a in texts for b in texts if a != b) > 1e-3
    assert embedder.embed([]).shape == (0, embedder.dims)


def test_batches_hold_every_text_once_shortest_first_and_at_most_the_batch_size() -> None:
    rng = random.Random(3)
    lengths = [rng.randint(3, 256) for _ in range(200)]
    found = batches(lengths, 16)
    assert sorted(i for batch in found for i in batch) == list(range(len(lengths)))
    assert all(0 < len(batch) <= 16 for batch in found)
    flat = [lengths[i] for batch in found for i in batch]
    assert flat == sorted(lengths)


def test_a_long_text_pads_no_short_one_and_even_lengths_fill_whole_batches() -> None:
    assert batches([12] * 15 + [200], 16) == [list(range(15)), [15]]
    assert [len(b) for b in batches([256] * 40, 16)] == [16, 16, 8]  # chunks of an ingest: as before
    assert batches([], 16) == []


def test_the_cuts_never_run_more_padded_tokens_than_batches_of_fixed_size() -> None:
    rng = random.Random(11)
    for _ in range(50):
        lengths = [rng.choice([rng.randint(8, 40), rng.randint(40, 256)]) for _ in range(rng.randint(1, 60))]
        ordered = sorted(lengths)
        fixed = sum(24 + len(part) * part[-1] for part in (ordered[o : o + 16] for o in range(0, len(ordered), 16)))
        cut = sum(24 + len(b) * max(lengths[i] for i in b) for b in batches(lengths, 16, run_tokens=24))
        assert cut <= fixed


def test_the_unit_encoders_identity_names_the_file_it_ships() -> None:
    """Cached unit vectors and answers are keyed by the encoder's identity: a retrained file
    must come with its digest, or the cache would give its questions the old file's vectors."""
    import hashlib

    from citewell.answers.extractive import unit_encoder

    digest = hashlib.sha256(unit_encoder._model_file().read_bytes()).hexdigest()
    assert digest.startswith(unit_encoder.DIGEST), f"set unit_encoder.DIGEST to {digest[:16]!r}"
    assert unit_encoder.DIGEST in UnitEncoder().identity
