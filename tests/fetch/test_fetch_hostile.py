"""A fuzz of hostile replies against the fetcher: every reply ends in the page or a typed error,
within the fetch's time limit and in memory near its size limit, never more, whatever the
stack of encodings, the bomb, the endless or trickling body or the flood of headers."""

from __future__ import annotations

import random
import time
import tracemalloc
from dataclasses import dataclass

import pytest

from citewell.errors import CitewellError, FetchFailed, TooLarge
from citewell.fetch.client import Fetcher
from citewell.fetch.guard import Guard
from tests.hostile_replies import encode, endless, endless_gzip, fixed, hostile, many_headers, short, trickle, zeros_gzip

LIMIT = 1 << 20  # the fetcher's size limit in these tests: 1 MiB
SECONDS = 2.0
MEMORY = 3 * LIMIT + (2 << 20)  # the body, its copy, and a few pieces in flight
CODINGS = ("gzip", "x-gzip", "deflate", "deflate-raw", "br", "zstd", "identity")


@dataclass(frozen=True)
class Case:
    """One drawn reply and what the fetch must end in: the bytes, or an error of this type."""

    name: str
    reply: object
    expect: bytes | type[CitewellError]


def drawn(seed: int) -> Case:
    rng = random.Random(seed)
    kind = rng.choice(["stack", "stack", "stack", "bomb", "endless", "endless-gzip", "trickle", "headers", "short"])
    if kind in ("stack", "bomb"):
        stack = [rng.choice(CODINGS) for _ in range(rng.randint(1, 5))]
        if kind == "bomb":  # gzip over a gzip of zeros: a few KB that decode to 8-64 times the limit
            inner, stack = zeros_gzip(rng.choice([8, 16, 64]) * LIMIT), ["gzip", *stack[:2]]
            body, plain_size = inner, None
        else:
            plain = rng.randbytes(rng.choice([0, 1, 200, 70_000])) * rng.choice([1, 3])
            body, plain_size = plain, len(plain)
        for coding in stack[kind == "bomb":]:
            body = encode(body, coding)
        header = ", ".join("deflate" if c == "deflate-raw" else c for c in stack)
        applied = [c for c in stack if c != "identity"]
        if any(c in ("br", "zstd") for c in applied) or len(applied) > 3:
            expect: bytes | type[CitewellError] = FetchFailed
        elif plain_size is None:
            expect = TooLarge
        else:
            expect = plain
        return Case(f"{kind} {header}", fixed(body, {"Content-Encoding": header}), expect)
    if kind == "endless":
        return Case(kind, endless(rng.randbytes(16_384)), TooLarge)
    if kind == "endless-gzip":  # a gzip stream that never ends: each piece decodes to 1 MiB of zeros
        return Case(kind, endless_gzip(), TooLarge)
    if kind == "trickle":
        return Case(kind, trickle(b"x" * 100, every=0.2), FetchFailed)
    if kind == "headers":
        return Case(kind, many_headers(rng.choice([400, 5000])), FetchFailed)
    return Case(kind, short(b"<p>half a page", 5000), FetchFailed)


def fetch_bounded(url: str) -> tuple[bytes | CitewellError, float, int]:
    """The fetch's outcome, its seconds and the peak of memory it allocated."""
    with Fetcher(Guard.of(["127.0.0.1/32"]), max_bytes=LIMIT, seconds=SECONDS) as fetcher:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        started = time.monotonic()
        try:
            outcome: bytes | CitewellError = fetcher.fetch(url).data
        except CitewellError as error:
            outcome = error
        return outcome, time.monotonic() - started, tracemalloc.get_traced_memory()[1] - before


@pytest.fixture(scope="module")
def traced():
    tracemalloc.start()
    yield
    tracemalloc.stop()


@pytest.mark.parametrize("seed", range(40))
def test_a_hostile_reply_ends_typed_in_time_and_in_memory(traced, seed):
    case = drawn(seed)
    with hostile({"/page": case.reply}) as site:  # type: ignore[dict-item]  # a Reply, drawn
        outcome, seconds, peak = fetch_bounded(f"{site}/page")
    assert seconds < SECONDS + 1.5, (case.name, seconds)
    assert peak < MEMORY, (case.name, f"{peak:,} bytes allocated")
    if isinstance(case.expect, bytes):
        assert outcome == case.expect, (case.name, outcome)
    else:
        assert isinstance(outcome, case.expect), (case.name, outcome)


def test_the_sample_draws_every_kind_of_reply():
    names = {drawn(seed).name.split()[0] for seed in range(40)}
    assert names == {"stack", "bomb", "endless", "endless-gzip", "trickle", "headers", "short"}


def test_a_stacked_gzip_bomb_stops_at_the_limit(traced):
    bomb = encode(zeros_gzip(256 * LIMIT), "gzip")  # a few KB on the wire, 256 MiB decoded
    with hostile({"/bomb": fixed(bomb, {"Content-Encoding": "gzip, gzip"})}) as site:
        outcome, _, peak = fetch_bounded(f"{site}/bomb")
    assert isinstance(outcome, TooLarge) and "more than the limit of 1,048,576 bytes" in outcome.message
    assert peak < MEMORY


@pytest.mark.parametrize("coding", ["gzip", "deflate", "deflate-raw"])
def test_each_coding_a_server_sends_is_read(traced, coding):
    text = b"<html><body><p>The east gate closes at ten.</p></body></html>" * 50
    header = "deflate" if coding == "deflate-raw" else coding
    with hostile({"/page": fixed(encode(text, coding), {"Content-Encoding": header})}) as site:
        outcome, _, _ = fetch_bounded(f"{site}/page")
    assert outcome == text


def test_gzip_members_one_after_another_are_one_body(traced):
    text = b"first part. " * 100, b"second part. " * 100
    with hostile({"/page": fixed(encode(text[0], "gzip") + encode(text[1], "gzip"), {"Content-Encoding": "gzip"})}) as site:
        outcome, _, _ = fetch_bounded(f"{site}/page")
    assert outcome == text[0] + text[1]


def test_a_cut_off_gzip_body_fails(traced):
    with hostile({"/page": fixed(encode(b"x" * 10_000, "gzip")[:-12], {"Content-Encoding": "gzip"})}) as site:
        outcome, _, _ = fetch_bounded(f"{site}/page")
    assert isinstance(outcome, FetchFailed) and "cut off" in outcome.message


def test_the_fetcher_asks_only_for_what_it_reads():
    from benchmarks.loopback_site import Site, page, serving

    with serving(Site(pages={"/": page("Home", "Welcome.")})) as site:
        with Fetcher(Guard.of(["127.0.0.1/32"])) as fetcher:
            fetcher.fetch(f"{site.url}/")
    assert site.requests[0][1]["accept-encoding"] == "gzip, deflate"
