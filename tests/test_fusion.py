"""Reciprocal rank fusion: the arithmetic and the tie-breaking."""

from citewell.fusion import RRF_K, reciprocal_rank_fusion


def test_scores_are_sums_of_reciprocal_ranks():
    fused = reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "vector": ["c", "a"]})
    scores = {key: score for key, score, _ in fused}
    assert scores["a"] == 1 / (RRF_K + 1) + 1 / (RRF_K + 2)
    assert scores["c"] == 1 / (RRF_K + 3) + 1 / (RRF_K + 1)
    assert scores["b"] == 1 / (RRF_K + 2)
    assert [key for key, _, _ in fused] == ["a", "c", "b"]
    assert dict(fused[1][2]) == {"bm25": 3, "vector": 1}


def test_ties_are_broken_the_same_way_every_time():
    lanes = {"bm25": ["x", "y"], "vector": ["y", "x"]}  # x and y tie exactly
    first = reciprocal_rank_fusion(lanes)
    assert first[0][1] == first[1][1]
    assert [k for k, _, _ in first] == [k for k, _, _ in reciprocal_rank_fusion(dict(reversed(list(lanes.items()))))]


def test_a_key_counts_once_per_lane():
    fused = reciprocal_rank_fusion({"bm25": ["a", "a", "b"]})
    assert dict((k, s) for k, s, _ in fused)["a"] == 1 / (RRF_K + 1)
