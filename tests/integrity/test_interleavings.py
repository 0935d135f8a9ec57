"""A fixed-seed sample of randomised interleavings of every operation (``make fuzz`` runs many
more), on the embedded stores and on the cloud stores (DynamoDB and S3 on moto), and one run of
real concurrent processes killed at random."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import make_services
from tests.interleavings import FUZZ_END, FUZZ_START, Interleaver, cloud_stores, fuzz_block, model_service, write_block

SEEDS = (1, 2, 5)  # seed 5 runs an operation inside an audit --repair
EVERY_OPERATION = ("upload (register)", "stage parse", "stage chunk", "stage embed", "stage publish", "stage publish by words",
                   "stage vectors (after publish by words)", "delete",
                   "replace (whole upload)", "ask", "ask again (cache)", "ask in a conversation", "feedback",
                   "audit --repair", "audit", "restart", "inside: delete", "inside: replace", "inside: ask", "inside: stage",
                   "inside: converse", "inside: feedback")


@pytest.fixture(scope="module")
def model_url():
    with model_service() as url:
        yield url


@pytest.fixture(scope="module")
def sample(tmp_path_factory, embedder, model_url) -> Counter[str]:
    """The seeded runs on the embedded stores, and the operations they ran."""
    ops: Counter[str] = Counter()
    for seed in SEEDS:
        home = tmp_path_factory.mktemp(f"seed{seed}")
        interleaver = Interleaver(make_services(home, embedder), seed, home=home, model_url=model_url)
        assert interleaver.run(steps=120) >= 120
        ops += interleaver.ops
    return ops


def test_interleavings_on_the_embedded_stores(sample):
    assert sum(sample.values()) > 0


def test_the_sample_runs_every_operation_and_crashes_inside_an_audit_repair(sample):
    assert [name for name in EVERY_OPERATION if not sample[name]] == []
    assert any(name.startswith("crash at ") for name in sample)
    assert sample["interleaved with audit --repair"] and sample["interleaved with ask"]


def test_interleavings_on_the_cloud_stores(tmp_path, embedder, model_url):
    with cloud_stores(make_services(tmp_path, embedder)) as services:
        assert Interleaver(services, seed=7, model_url=model_url).run(steps=120) >= 120


def test_real_processes_killed_at_random(tmp_path):
    from tests.processes import run_processes

    ops = run_processes(seed=1, rounds=2)
    assert ops["process: restart"] == 2


def test_the_fuzz_report_replaces_its_own_block_and_nothing_else(tmp_path):
    out = tmp_path / "BENCHMARKS.md"
    out.write_text("# citewell benchmarks\n\nfigures\n")
    write_block(out, fuzz_block(10_000, 34, 600.0, [], "python -m tests.interleavings"))
    write_block(out, fuzz_block(12_000, 40, 700.0, ["seed 3, probe 9: Violation: x"], "python -m tests.interleavings",
                                Counter({"ask": 5, "audit --repair": 2})))
    text = out.read_text()
    assert text.startswith("# citewell benchmarks\n\nfigures\n") and text.count(FUZZ_START) == text.count(FUZZ_END) == 1
    assert "12,000 probes" in text and "Failures: 1." in text and "seed 3, probe 9" in text and "10,000" not in text
    assert "ask 5" in text and "audit --repair 2" in text
