"""The lexical lane ranks the words alone (block-max WAND) for a caller who may read most rows,
then keeps the caller's rows among them: the top k is still the caller's own, another tenant's,
role's or status's rows never take a place in it, and a page is never emptied by them."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citewell.index import lexical
from citewell.index.lexical import LexicalRow, TantivyLexicon, text_of


@pytest.fixture(autouse=True)
def pruned_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane ranks the words alone from ``PRUNED_FROM`` rows on: here, from the first."""
    monkeypatch.setattr(lexical, "PRUNED_FROM", 0)


def rows(start: int, count: int, tenant: str, text: str, roles: Sequence[str] = ("staff",),
         status: str = "live") -> list[LexicalRow]:
    # Each row a different length, so no two of them tie.
    return [LexicalRow(start + n, tenant, status, frozenset(roles), "Handbook", f"{text} {'filler ' * n}")
            for n in range(count)]


def lexicon_of(folder: Path, every: list[LexicalRow]) -> tuple[TantivyLexicon, dict[int, str]]:
    lexicon = TantivyLexicon(folder)
    lexicon.write(every)
    return lexicon, {row.rowid: text_of(row.context, row.body) for row in every}


def top(lexicon: TantivyLexicon, texts: dict[int, str], tenant: str, roles: Sequence[str], k: int,
        question: str = "crane controller") -> list[int]:
    ids, scores = lexicon.search(lexicon.terms(question), tenant, roles, k,
                                 lambda wanted: {r: texts[r] for r in wanted if r in texts})
    assert list(scores) == sorted(scores, reverse=True)
    return [int(r) for r in ids]


def test_the_callers_top_k_holds_none_of_the_better_scored_rows_of_another_tenant_role_or_status(tmp_path: Path) -> None:
    # northpier may read 80 of 100 rows, so its words are ranked alone first; the 20 best-scored
    # rows are another tenant's, another role's or not live, and the first ranks hold only them.
    mine = rows(1, 80, "northpier", "crane")
    strangers = (rows(1000, 7, "bluefen", "crane controller crane controller")
                 + rows(2000, 7, "northpier", "crane controller crane controller", roles=("hr",))
                 + rows(3000, 6, "northpier", "crane controller crane controller", status="deleting"))
    lexicon, texts = lexicon_of(tmp_path, mine + strangers)
    found = top(lexicon, texts, "northpier", ["staff"], 10)
    assert found == [row.rowid for row in mine[:10]]  # the shortest rows score best: a full page, in order
    for k in (1, 5, 50, 80, 100):
        assert top(lexicon, texts, "northpier", ["staff"], k) == [row.rowid for row in mine[:k]]


def test_a_caller_with_most_rows_but_none_near_the_top_still_gets_a_full_page(tmp_path: Path) -> None:
    # 30 strangers' rows outscore all of northpier's 120: ranked alone, the first 2k / share rows
    # hold none of northpier's, and the lane ranks again with the access terms required.
    mine = rows(1, 120, "northpier", "crane")
    strangers = rows(1000, 30, "bluefen", "crane controller crane controller")
    lexicon, texts = lexicon_of(tmp_path, mine + strangers)
    assert top(lexicon, texts, "northpier", ["staff"], 5) == [row.rowid for row in mine[:5]]
    assert top(lexicon, texts, "bluefen", ["staff"], 5) == [row.rowid for row in strangers[:5]]  # a small share
    assert top(lexicon, texts, "kestrel", ["staff"], 5) == []


def test_every_k_gives_the_callers_rows_in_the_order_of_the_filtered_ranking(tmp_path: Path) -> None:
    # Rows of two tenants interleaved in score: each caller's top k, at every k, is its own rows in
    # score order, whichever way the lane ranked them. One word, said one to three times, in rows
    # of under 40 terms (tantivy keeps such lengths exactly), so its order is the exact one.
    rng = np.random.default_rng(7)
    every = [LexicalRow(n + 1, "northpier" if rng.random() < 0.85 else "bluefen", "live", frozenset({"staff"}),
                        "Handbook", f"{'crane ' * (1 + n // 36)}{'filler ' * (n % 36)}")
             for n in range(108)]
    lexicon, texts = lexicon_of(tmp_path, every)
    for tenant in ("northpier", "bluefen"):
        own = [row.rowid for row in every if row.tenant == tenant]
        ranked = top(lexicon, texts, tenant, ["staff"], len(own), "crane")
        assert sorted(ranked) == sorted(own)
        for k in (1, 3, 10, 40):
            assert top(lexicon, texts, tenant, ["staff"], k, "crane") == ranked[:k]


TENANTS, ROLES, STATUSES = ["northpier", "bluefen"], ["staff", "hr", "ops"], ["live", "live", "live", "deleting"]
layouts = st.lists(st.tuples(st.sampled_from(TENANTS), st.frozensets(st.sampled_from(ROLES), min_size=1, max_size=2),
                             st.sampled_from(STATUSES), st.integers(1, 3)), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=layouts, tenant=st.sampled_from(TENANTS), roles=st.frozensets(st.sampled_from(ROLES), min_size=1),
       k=st.integers(1, 30))
def test_both_ways_of_ranking_give_the_same_page_of_the_callers_rows_only(layout, tenant, roles, k) -> None:
    # Whichever way the lane ranks (the words alone, then the caller's rows among them; or the
    # access terms required in the ranked query), a caller gets the same rows, all its own, and
    # as many as it has up to k. Every row a different length under 40 terms: no ties.
    every = [LexicalRow(n + 1, t, status, r, "Handbook", f"{'crane ' * times}{'filler ' * n}")
             for n, (t, r, status, times) in enumerate(layout)]
    own = {row.rowid for row in every if row.tenant == tenant and row.roles & roles and row.status == "live"}
    with tempfile.TemporaryDirectory() as folder:
        lexicon, texts = lexicon_of(Path(folder), every)
        pruned = top(lexicon, texts, tenant, sorted(roles), k, "crane")
        most, lexical.PRUNED_MOST = lexical.PRUNED_MOST, 0
        try:
            filtered = top(lexicon, texts, tenant, sorted(roles), k, "crane")
        finally:
            lexical.PRUNED_MOST = most
    assert pruned == filtered
    assert set(pruned) <= own and len(pruned) == min(k, len(own))
