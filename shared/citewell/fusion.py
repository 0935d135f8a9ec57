"""Reciprocal rank fusion: each lane contributes 1 / (k + rank); the fused score is rank, not confidence."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

RRF_K = 60
Key = TypeVar("Key", bound=Hashable)


def reciprocal_rank_fusion(
    lanes: Mapping[str, Sequence[Key]], k: int = RRF_K, stand_ins: Mapping[Key, Mapping[str, int]] | None = None,
) -> list[tuple[Key, float, dict[str, int]]]:
    """Fuse ranked key lists. Returns ``(key, score, {lane: rank})``, best first.

    ``stand_ins`` gives a key a rank in a fused lane that could not hold it (a row still
    waiting for its vector, in the vector lane): it scores as if found there at that rank, so
    it is not ranked below rows found by both lanes for being new. The ranks returned are
    the lanes' own. Ties are broken by the best single-lane rank, then by the key itself, so
    a fused list is the same on every run.
    """
    scores: dict[Key, float] = {}
    ranks: dict[Key, dict[str, int]] = {}
    for lane, keys in lanes.items():
        for rank, key in enumerate(keys, start=1):
            if lane in ranks.setdefault(key, {}):
                continue  # a key counts once per lane, at its best rank
            ranks[key][lane] = rank
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    for key, stood in (stand_ins or {}).items():
        for lane, rank in stood.items():
            if key in scores and lane in lanes and lane not in ranks[key]:
                scores[key] += 1.0 / (k + rank)
    ordered = sorted(scores, key=lambda key: (-scores[key], min(ranks[key].values()), str(key)))
    return [(key, scores[key], ranks[key]) for key in ordered]
