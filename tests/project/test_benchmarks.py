"""The benchmark harness: its vector cache, its corpus growth, and `make bench` end to end on
a tiny data folder in the evaluation layout (the real data sets are not needed here)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import ROOT
from benchmarks.cache import CachedEmbedder
from benchmarks.grow import grow
from benchmarks.homes import fresh_home
from citewell.deployments import open_local
from citewell.evaluation.retrieval import EVAL_IDENTITY, EVAL_ROLE, ingest_corpus
from citewell.models.identity import Identity
from citewell.search import search

CORPUS = [
    {"_id": "d1", "title": "Crane safety", "text": "Storm pins secure a crane when the wind exceeds the limit of the yard."},
    {"_id": "d2", "title": "Leave", "text": "Full-time staff receive 27 days of annual leave. Carried days expire in March."},
    {"_id": "d3", "title": "Salaries", "text": "Salary bands are reviewed each spring by the pay committee."},
    {"_id": "d4", "title": "Reefers", "text": "Refrigerated containers are plugged in within thirty minutes of landing."},
]
QUERIES = [{"_id": "q1", "text": "what secures a crane in high wind"}, {"_id": "q2", "text": "how many days of annual leave"}]


def beir_folder(root: Path, name: str) -> Path:
    folder = root / name
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in CORPUS))
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in QUERIES))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return folder


def squad_folder(root: Path) -> Path:
    folder = root / "squad2-dev"
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in CORPUS))
    questions = [  # article d1 is in the fitting half, d2 held out: only d2's questions are asked
        {"_id": "s0", "text": "What secures a crane in high wind?", "context_id": "d1",
         "is_impossible": False, "answers": ["Storm pins"], "plausible_answers": []},
        {"_id": "s1", "text": "How many days of annual leave do full-time staff receive?", "context_id": "d2",
         "is_impossible": False, "answers": ["27 days"], "plausible_answers": []},
        {"_id": "s2", "text": "How many days of annual leave do part-time contractors receive?", "context_id": "d2",
         "is_impossible": True, "answers": [], "plausible_answers": ["27 days"]},
    ]
    with gzip.open(folder / "questions.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n".join(json.dumps(q) for q in questions))
    return folder


def test_cached_embedder_returns_the_models_vectors_and_skips_it_for_texts_seen_before(embedder, tmp_path):
    texts = ["storm pins secure the crane", "annual leave is 27 days", "storm pins secure the crane"]
    first = CachedEmbedder(embedder, tmp_path / "cache.sqlite")
    vectors = first.embed(texts)
    assert first.model_texts == 2 and first.identity == embedder.identity
    np.testing.assert_allclose(vectors, embedder.embed(texts), atol=1e-6)
    reopened = CachedEmbedder(embedder, tmp_path / "cache.sqlite")  # the cache outlives the process
    np.testing.assert_array_equal(reopened.embed(texts), vectors)
    assert reopened.model_texts == 0
    reopened.embed(["a text never embedded"])
    assert reopened.model_texts == 1


def test_grow_copies_real_documents_under_new_ids_until_the_target(embedder, tmp_path):
    data = beir_folder(tmp_path, "tiny")
    source = fresh_home(tmp_path / "source", tmp_path / "cache.sqlite")
    stats = ingest_corpus(source, data)
    assert stats.published == 4
    built = grow(tmp_path / "big", [tmp_path / "source"], chunks=4 * stats.chunks + 1)
    assert built["chunks"] >= 4 * stats.chunks + 1
    target = open_local(tmp_path / "big")
    hits = search(target, EVAL_IDENTITY, "storm pins crane", k=10).hits
    assert {h.document_id for h in hits} >= {"source/d1", "copy-1/source/d1", "copy-4/source/d1"}
    assert all(h.title == "Crane safety" for h in hits[:5])
    nobody = search(target, Identity(tenant="other", roles=frozenset({EVAL_ROLE})), "storm pins crane", k=10).hits
    assert nobody == []
    again = grow(tmp_path / "big", [tmp_path / "source"], chunks=stats.chunks)  # a rerun starts from an empty home
    assert sum(n for *_, n in open_local(tmp_path / "big").index.inventory()) == again["chunks"] == stats.chunks


def test_the_speed_phase_counts_what_a_first_ask_embeds_and_leaves_the_encoder_as_it_was(embedder, tmp_path):
    from benchmarks.speed import ask_latency
    from citewell.answers.extractive.vectors import UnitEmbeddings

    source = fresh_home(tmp_path / "home", tmp_path / "cache.sqlite")
    ingest_corpus(source, beir_folder(tmp_path, "tiny"))
    services = open_local(tmp_path / "home")
    questions = ["Which committee reviews salary bands?", "What secures a crane when the wind is strong?",
                 "How many days of annual leave do full-time staff get?"]
    first = ask_latency(services, questions)
    assert first["ask"]["n"] == 3  # each timed once; the warm-up is another question
    assert first["ask_encoder_texts"] >= 1  # each question (the warm-up already read this tiny corpus's units)
    encoder = UnitEmbeddings(services.embedder).encoder
    assert "embed" not in vars(encoder)  # the counting wrapper is gone
    again = ask_latency(services, questions)
    assert again["ask_encoder_texts"] == 0  # the same questions: answered from the answer cache


@pytest.mark.skipif(not __import__("importlib").util.find_spec("haystack"),
                    reason="measures the Haystack peer, which make test does not install (make bench-test runs it)")
def test_make_bench_runs_end_to_end_and_writes_every_section(tmp_path):
    data = tmp_path / "data"
    beir_folder(data, "scifact")
    beir_folder(data, "cranfield")
    squad_folder(data)
    out, work = tmp_path / "BENCHMARKS.md", tmp_path / "work"
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- bench:headline:start -->\nold\n<!-- bench:headline:end -->\nrest\n")
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--data", str(data), "--work", str(work), "--out", str(out),
         "--readme", str(readme), "--sizes", "12,30", "--import-runs", "1", "--serve-seconds", "5",
         "--large-files", "0.02,3"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,  # `python -m benchmarks.run` from a clone's root
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((work / "results.json").read_text())
    scifact = results["quality"][0]
    assert scifact["citewell"]["hybrid"]["ndcg_at_10"] == 1.0 and scifact["peer_lanes"]["vector"]["queries"] == 2
    assert [s["chunks"] >= 12 for s in results["speed"] if s["system"] == "citewell"] == [True, True]
    assert results["honesty"]["questions"] == 2 and set(results["imports"]) >= {"api", "parse"}
    assert results["serve"]["load"]["server_errors"] == 0 and results["serve"]["load"]["leaks"] == 0
    assert results["serve"]["search"]["queries"] == 2 and results["serve"]["load"]["requests"] > 0
    text = out.read_text()
    assert results["answers"]["splits"]["held_out"]["overall"]["questions"] >= 60
    large = results["large_files"]
    assert large["pdf"]["pages"] == 3 and large["pdf"]["chunks"] > 0 and large["one_line_text"]["megabytes"] >= 0.02
    assert "### Large files" in text and "3-page PDF" in text
    for heading in ("## Targets", "## Retrieval quality", "## Answers", "## Honesty", "## Search and answer latency",
                    "## Serving over HTTP", "## Ingestion throughput", "## Cold import", "## Scale on paper", "## Commands"):
        assert heading in text
    headline = readme.read_text()
    assert headline.startswith("intro\n<!-- bench:headline:start -->") and headline.endswith("<!-- bench:headline:end -->\nrest\n")
    assert "old" not in headline and "hybrid nDCG@10" in headline


def test_a_bench_run_keeps_the_blocks_measured_by_their_own_commands(tmp_path):
    from benchmarks.report import COLD_END, COLD_START, FUZZ_END, FUZZ_START, keep_blocks

    out = tmp_path / "BENCHMARKS.md"
    assert keep_blocks(out, "# new\n") == "# new\n"
    out.write_text(f"# old\n\n{COLD_START}\ncold figures\n{COLD_END}\n\n{FUZZ_START}\nfuzz figures\n{FUZZ_END}\n")
    kept = keep_blocks(out, "# new\n")
    assert kept == f"# new\n\n{COLD_START}\ncold figures\n{COLD_END}\n\n{FUZZ_START}\nfuzz figures\n{FUZZ_END}\n"
    # Any marked block, not only those the report names: a section measured by hand (the filter and
    # reranker costs were dropped by every bench run before), and never twice.
    out.write_text(f"# old\n\n<!-- filters-rerank:start -->\n## Filters\n<!-- filters-rerank:end -->\n\n{FUZZ_START}\nf\n{FUZZ_END}\n")
    assert keep_blocks(out, f"# new\n\n{FUZZ_START}\nf\n{FUZZ_END}\n") == (
        f"# new\n\n{FUZZ_START}\nf\n{FUZZ_END}\n\n<!-- filters-rerank:start -->\n## Filters\n<!-- filters-rerank:end -->\n")


def test_a_resumed_bench_keeps_a_phase_only_from_the_same_clean_commit_and_command(tmp_path):
    from benchmarks.run import Phases

    shown = f"python -m benchmarks.no_such_phase --home {tmp_path}"
    kept = {"commit": "abc1234", "command": shown, "report": {"ndcg": 0.7}}
    (tmp_path / "phases").mkdir()
    (tmp_path / "phases" / "quality.json").write_text(json.dumps(kept))

    resumed = Phases(tmp_path, "abc1234", resume=True)
    assert resumed.run("quality", "no_such_phase", "--home", tmp_path) == {"ndcg": 0.7}
    assert resumed.kept_names == ["quality"]
    for phases, args in ((Phases(tmp_path, "abc1234-dirty", resume=True), ("--home", tmp_path)),  # a dirty tree
                         (Phases(tmp_path, "def5678", resume=True), ("--home", tmp_path)),  # another commit
                         (Phases(tmp_path, "abc1234", resume=True), ("--home", tmp_path / "other")),  # another command
                         (Phases(tmp_path, "abc1234"), ("--home", tmp_path))):  # not asked to resume
        with pytest.raises(SystemExit, match="no_such_phase failed|quality failed"):
            phases.run("quality", "no_such_phase", *args)


def test_a_phase_is_kept_under_the_commit_its_run_started_at(tmp_path):
    """A phase that writes into the tree (realdocs writes its block into BENCHMARKS.md) must not
    leave every later phase recorded as dirty, and so run again by ``--resume``."""
    from benchmarks.run import Phases

    first = Phases(tmp_path, "abc1234", resume=True)
    report = first.run("imports", "imports", "--runs", 1)  # a real phase, a few seconds
    assert "api" in report and first.kept_names == []
    assert json.loads((tmp_path / "phases" / "imports.json").read_text())["commit"] == "abc1234"
    again = Phases(tmp_path, "abc1234", resume=True)
    assert again.run("imports", "imports", "--runs", 1) == report
    assert again.kept_names == ["imports"]


def test_answer_precision_counts_answers_to_questions_that_have_none_as_wrong():
    from benchmarks.honesty import summarise

    row = {"answered": True, "cites_paragraph": True, "contains_gold": True, "answerable": True}
    rows = [row, {**row, "contains_gold": False}, {**row, "answerable": False, "contains_gold": False},
            {**row, "answerable": False, "answered": False, "contains_gold": False}]
    found = summarise(rows)
    assert found["answer_contains_gold_rate"] == 0.5  # of the two answerable questions answered
    assert found["answer_precision"] == round(1 / 3, 4)  # one right of three answers given
    assert found["accuracy"] == 0.5 and found["always_refuse_accuracy"] == 0.5


def test_the_stand_in_rerank_server_speaks_the_wire_format_the_http_reranker_reads():
    """The seam's benchmark reorders by a known signal: the share of the query's words each passage holds."""
    from citewell.models.search import LaneRanks, SearchHit
    from citewell.rerankers.http import HttpReranker

    server = subprocess.Popen([sys.executable, "-m", "benchmarks.standin_reranker"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        hits = [SearchHit(rank=n + 1, chunk_id=f"d{n}#0#0", document_id=f"d{n}", revision="r", title="T", section_path=[],
                          text=text, score=0.1, lanes=LaneRanks()) for n, text in enumerate(
                              ["nothing here", "annual leave", "days of annual leave", "leave"])]
        found = HttpReranker(url).rerank("annual leave days", hits, 3)
        assert [(r.index, round(r.score, 3)) for r in found] == [(2, 1.0), (1, 0.667), (3, 0.333)]
    finally:
        server.terminate()
        server.wait()


def test_the_ocr_benchmark_scans_a_text_pdf_into_images_and_keeps_each_pages_text_layer():
    import io

    from pypdf import PdfReader

    from benchmarks.ocr import generated_pdf, scanned, words

    source = generated_pdf(2)
    scan, references = scanned(source, 2, 72)
    pages = PdfReader(io.BytesIO(scan)).pages
    assert len(pages) == len(references) == 2
    assert all(not (p.extract_text() or "").strip() for p in pages)  # images only
    assert words(references[0])[:3] == ["how", "citewell", "works"]
    assert words("Don’t ﬁnd it: E1027, twice.") == ["don", "t", "find", "it", "e1027", "twice"]


def test_the_authority_benchmark_measures_each_marking_and_leaves_the_home_unmarked(embedder, tmp_path, monkeypatch, capsys):
    from benchmarks import authority_cost
    from citewell.evaluation.retrieval import EVAL_TENANT

    data = beir_folder(tmp_path, "tiny")
    monkeypatch.setattr(sys, "argv", ["authority_cost", str(data), "--home", str(tmp_path / "home"), "--cache",
                                      str(tmp_path / "cache.sqlite"), "--build", "--share", "0.5"])
    authority_cost.main()
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [report[m]["marked"] for m in ("none", "random_0.5", "judged_relevant")] == [0, 2, 2]
    assert report["none"]["ndcg_at_10"] <= report["judged_relevant"]["ndcg_at_10"]
    assert not [d for d in open_local(tmp_path / "home").documents.list_documents(EVAL_TENANT) if d.authority]


def test_the_targets_table_bounds_ask_itself_and_keeps_the_answer_floors_issue_26_set():
    from benchmarks.report import targets

    def speed(chunks, ask_ms):
        return {"system": "citewell", "chunks": chunks, "peak_rss_mb": 500.0, "ask": {"p50_ms": ask_ms},
                "hybrid": {"p50_ms": 10.0, "p95_ms": 15.0}}

    honesty = {"accuracy": 0.59, "always_refuse_accuracy": 0.56, "answer_precision": 0.51}
    realdocs = {"answered_right_share": 0.59, "answered_must_refuse_share": 0.05, "answered_wrong_share": 0.02,
                "answered_or_unconfirmed_holding_share": 0.75}
    results = {"quality": [], "speed": [speed(5_001, 160.0), speed(1_000_001, 72.0)], "ingest": {"pipeline_share_of_embedder": 0.85},
               "honesty": honesty, "realdocs": realdocs,
               "answers": {"splits": {"held_out": {"overall": {"answer_accuracy": 0.85, "refusal_accuracy": 0.95, "answerable": 74,
                                                                "must_refuse": 20}, "by_category": {}}}}}
    met = {target: ok for target, _, ok in targets(results)}
    assert met["ask p50 <= 200 ms warm at every bench size"]  # 16x the search's p50, but the retired multiple is gone
    assert not any("x hybrid p50" in target for target in met)
    assert met["answer set, held out: no fall below 0.839 right answers and 0.95 right refusals"]
    assert not met["answer set, held out: answer accuracy >= 0.9"]  # the older, higher target still reads on its own
    assert met["SQuAD 2.0 held-out half: accuracy >= always refusing, answer precision >= 0.5"]
    realdocs_row = next(t for t in met if t.startswith("realdocs-tune"))
    assert not met[realdocs_row]
    slow = results | {"speed": [speed(5_001, 201.0)], "honesty": honesty | {"accuracy": 0.55}}
    met = {target: ok for target, _, ok in targets(slow)}
    assert not met["ask p50 <= 200 ms warm at every bench size"]
    assert not met["SQuAD 2.0 held-out half: accuracy >= always refusing, answer precision >= 0.5"]
