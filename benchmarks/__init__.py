"""Measurements that are not tests: run from a clone's root (``make bench``, ``python -m
benchmarks.NAME``), never installed with citewell; numbers go in BENCHMARKS.md and the README."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the clone these measurements run from
