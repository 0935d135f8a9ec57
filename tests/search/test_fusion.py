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


def test_a_stand_in_rank_counts_only_for_a_lane_that_ran_and_did_not_hold_the_key():
    lanes = {"bm25": ["new", "old"], "vector": ["old"]}
    plain = reciprocal_rank_fusion(lanes)
    assert [k for k, _, _ in plain] == ["old", "new"]  # found by both beats found first by one
    stood = reciprocal_rank_fusion(lanes, stand_ins={"new": {"vector": 1}, "old": {"vector": 9}, "gone": {"vector": 1}})
    assert [(k, s, r) for k, s, r in stood] == [
        ("new", 2 / (RRF_K + 1), {"bm25": 1}),  # ranks are the lanes' own
        ("old", 1 / (RRF_K + 2) + 1 / (RRF_K + 1), {"bm25": 2, "vector": 1}),  # its own vector rank, not the stand-in
    ]
    assert reciprocal_rank_fusion({"bm25": ["new"]}, stand_ins={"new": {"vector": 1}})[0][1] == 1 / (RRF_K + 1)
