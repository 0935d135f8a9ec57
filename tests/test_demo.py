"""The sample corpus is the same bytes each time it is written, so a demo re-ingesting it finds it unchanged."""

from __future__ import annotations

from citewell.samples.writer import write_samples


def test_the_samples_are_the_same_bytes_each_time_they_are_written(tmp_path):
    first, second = write_samples(tmp_path / "a"), write_samples(tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
