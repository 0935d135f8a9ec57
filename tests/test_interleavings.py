"""A fixed-seed sample of randomised interleavings (``make fuzz`` runs many more), on the
embedded stores and on the cloud stores (DynamoDB and S3 on moto)."""

from __future__ import annotations

import pytest

from tests.conftest import make_services
from tests.interleavings import FUZZ_END, FUZZ_START, Interleaver, cloud_stores, fuzz_block, write_block


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interleavings_on_the_embedded_stores(tmp_path, embedder, seed):
    services = make_services(tmp_path, embedder)
    assert Interleaver(services, seed, home=tmp_path).run(steps=120) >= 120


def test_interleavings_on_the_cloud_stores(tmp_path, embedder):
    with cloud_stores(make_services(tmp_path, embedder)) as services:
        assert Interleaver(services, seed=7).run(steps=120) >= 120


def test_the_fuzz_report_replaces_its_own_block_and_nothing_else(tmp_path):
    out = tmp_path / "BENCHMARKS.md"
    out.write_text("# citewell benchmarks\n\nfigures\n")
    write_block(out, fuzz_block(10_000, 34, 600.0, [], "python -m tests.interleavings"))
    write_block(out, fuzz_block(12_000, 40, 700.0, ["seed 3, probe 9: Violation: x"], "python -m tests.interleavings"))
    text = out.read_text()
    assert text.startswith("# citewell benchmarks\n\nfigures\n") and text.count(FUZZ_START) == text.count(FUZZ_END) == 1
    assert "12,000 probes" in text and "Failures: 1." in text and "seed 3, probe 9" in text and "10,000" not in text
