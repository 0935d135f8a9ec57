"""A fixed-seed sample of the web fuzz (``make fuzz`` runs many more): crawls and re-crawls with and
without --prune against a loopback site failing at random, with uploads, deletes and audits between
and inside them."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import make_services
from tests.web_interleavings import WEB_END, WEB_START, WebInterleaver, web_block

SEEDS = (3, 11, 17)


@pytest.fixture(scope="module")
def sample(tmp_path_factory, embedder) -> Counter[str]:
    ops: Counter[str] = Counter()
    for seed in SEEDS:
        fuzz = WebInterleaver(make_services(tmp_path_factory.mktemp(f"web{seed}"), embedder), seed)
        assert fuzz.run(steps=40) == 40
        ops += fuzz.ops + Counter(f"served {kind}" for kind, n in fuzz.site.served.items() for _ in range(n))
    return ops


def test_the_web_fuzz_sample_holds(sample):
    assert sample["crawl --prune"] and sample["crawl"]


def test_the_sample_meets_faults_site_changes_and_steps_inside_crawls(sample):
    assert {"served 500", "served reset", "served redirect-out", "served gzip, gzip", "served slow"} <= set(sample)
    assert {"site: down", "site: remove", "site: robots", "site: link out"} <= set(sample)
    assert any(name.startswith("inside a crawl: ") for name in sample)


def test_the_web_fuzz_report_has_a_block_of_its_own():
    block = web_block(2_000, 34, 600.0, ["seed 3, probe 9: Violation: x"], "python -m tests.web_interleavings",
                      Counter({"crawl --prune": 5}))
    assert block.startswith(WEB_START) and block.endswith(WEB_END)
    assert "2,000 probes in 34 seeded runs" in block and "Failures: 1." in block and "crawl --prune 5" in block
