"""BENCHMARKS.md and the README's headline, written from one run's results and nothing else."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from benchmarks import ROOT
from citewell.index.clusters import IVF_MIN_ROWS

HEADLINE_START = "<!-- bench:headline:start -->"
HEADLINE_END = "<!-- bench:headline:end -->"
_REFERENCE = re.compile(r"^- (?P<name>.+?):\s*(?P<ndcg>0\.\d+)\s*/\s*(?P<recall>0\.\d+)\s*$")

# Targets the benchmark issue set; what is compared is the run's own figure.
HYBRID_NDCG_TARGET = 0.69
NO_REGRESSION_NDCG = 0.7364  # SciFact hybrid when the real-files and scale work began: neither may lower it
# Issue 26 retired "ask p50 <= 2x hybrid p50" (a second model pass at ingest costs more than it
# gives, as measured) for a bound on ask itself, and set floors the answer work may not fall below.
ASK_P50_TARGET_MS = 200.0  # warm, at every bench size
ANSWERSET_FLOOR = (0.839, 0.95)  # held-out right answers, right refusals: where issue 26 started
SQUAD_PRECISION_FLOOR = 0.5  # and accuracy at or above always refusing
SEARCH_P50_TARGET_MS = 50.0
PIPELINE_SHARE_TARGET = 0.80
TARGET_SIZE = 50_000
SERVE_P50_SLACK = 0.10
# The embedded default at scale: hybrid p50 at (chunks, ms), p95 within this multiple of p50, peak RSS at 1M.
SCALE_P50_TARGETS_MS = ((200_000, 15.0), (1_000_000, 12.0))  # 1M: issue 47
SCALE_P95_MULTIPLE = 2.0
SCALE_RSS_TARGET_MB = 1536.0

# Scale on paper: the assumptions, stated once; every figure below is computed from them.
PAPER = {
    "chunks": 10_000_000,
    "dims": 1024,  # Titan Text Embeddings v2, the AWS default
    "hnsw_m": 16,  # the mapping in index/opensearch.py
    "text_bytes": 1_500,  # body + context + title + ids per chunk, stored and indexed
    "replicas": 1,
    "shard_target_gb": 30,  # OpenSearch's guidance: 10-50 GB per shard
    "node_ram_gb": 64,  # r6g.2xlarge.search
    "node_heap_gb": 32,
    "queries_per_second": 50,
    "query_seconds": 0.25,
    "requests_per_minute": 6_000,  # an example quota: read the account's own in Service Quotas
}


def machine() -> dict[str, str]:
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        cpu = names[0] if names else cpu
    memory = "unknown"
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        total = next((line.split()[1] for line in meminfo.read_text().splitlines() if line.startswith("MemTotal")), None)
        memory = f"{int(total) / 1024 / 1024:.1f} GiB" if total else memory
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"cpu": cpu, "cores": str(os.cpu_count()), "memory": memory, "python": platform.python_version(),
            "os": platform.platform(terse=True), "commit": commit}


def references(data: Path) -> list[tuple[str, float, float]]:
    """The published SciFact figures listed in the data folder's README."""
    readme = data / "README.md"
    if not readme.exists():
        return []
    found = [_REFERENCE.match(line.strip()) for line in readme.read_text(encoding="utf-8").splitlines()]
    return [(m["name"], float(m["ndcg"]), float(m["recall"])) for m in found if m]


def _ms(entry: dict[str, Any] | None) -> str:
    return f"{entry['p50_ms']:.1f} / {entry['p95_ms']:.1f}" if entry else "not run"


def _speed(results: dict[str, Any], system: str) -> list[dict[str, Any]]:
    return [s for s in results["speed"] if s["system"] == system]


def _near(rows: list[dict[str, Any]], size: int) -> dict[str, Any] | None:
    return min(rows, key=lambda s: abs(s["chunks"] - size)) if rows else None


def _at(rows: list[dict[str, Any]], size: int) -> dict[str, Any] | None:
    """The row built for ``size`` chunks: ``grow`` stops at the first document past it (1,000,001)."""
    row = _near(rows, size)
    return row if row and abs(row["chunks"] - size) <= size // 100 else None


def _kept(results: dict[str, Any]) -> str:
    kept = results.get("kept", [])
    return f" (resumed: {', '.join(kept)} kept from an earlier run of the same commit)" if kept else ""


SEARCHABLE_FIRST_S, SEARCHABLE_ALL_S = 10, 60  # issue 28: a folder's small files searchable as it goes


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """``(target, measured, met)`` for each of the benchmark issue's targets."""
    out = []
    scifact = next((q for q in results["quality"] if q["dataset"] == "scifact"), None)
    if scifact:
        ours, peer = scifact["citewell"]["hybrid"]["ndcg_at_10"], scifact["peer_lanes"]["hybrid"]["ndcg_at_10"]
        sample = " on the quick sample" if scifact["sample"] else ""
        out.append((f"SciFact hybrid nDCG@10 >= {HYBRID_NDCG_TARGET} and >= the peer's hybrid",
                    f"{ours:.4f} (peer {peer:.4f}){sample}", ours >= HYBRID_NDCG_TARGET and ours >= peer))
        out.append((f"SciFact hybrid nDCG@10 not lower than {NO_REGRESSION_NDCG} (before the real-files and scale work)",
                    f"{ours:.4f}{sample}", not scifact["sample"] and ours >= NO_REGRESSION_NDCG))
    row = _near(_speed(results, "citewell"), TARGET_SIZE)
    if row:
        p50 = row["hybrid"]["p50_ms"]
        out.append((f"hybrid search p50 < {SEARCH_P50_TARGET_MS:.0f} ms at ~50k chunks, query embedding included",
                    f"{p50:.1f} ms at {row['chunks']:,} chunks", p50 < SEARCH_P50_TARGET_MS))
    ours = _speed(results, "citewell")
    for size, limit in SCALE_P50_TARGETS_MS:
        at = _at(ours, size)
        if at is None:
            out.append((f"hybrid p50 <= {limit:.0f} ms and p95 <= {SCALE_P95_MULTIPLE:.0f}x p50 at {size:,} chunks",
                        "not run", False))
            continue
        p50, p95 = at["hybrid"]["p50_ms"], at["hybrid"]["p95_ms"]
        out.append((f"hybrid p50 <= {limit:.0f} ms and p95 <= {SCALE_P95_MULTIPLE:.0f}x p50 at {size:,} chunks, "
                    "query embedding included",
                    f"{p50:.1f} / {p95:.1f} ms", p50 <= limit and p95 <= SCALE_P95_MULTIPLE * p50))
    asked = [(row["chunks"], row["ask"]["p50_ms"]) for row in ours if row.get("ask")]
    if asked:
        out.append((f"ask p50 <= {ASK_P50_TARGET_MS:.0f} ms warm at every bench size",
                    ", ".join(f"{a:.1f} ms at {n:,}" for n, a in asked), all(a <= ASK_P50_TARGET_MS for _, a in asked)))
    largest = _at(ours, SCALE_P50_TARGETS_MS[-1][0])
    out.append((f"peak RSS at {SCALE_P50_TARGETS_MS[-1][0]:,} chunks <= {SCALE_RSS_TARGET_MB / 1024:.1f} GB",
                f"{largest['peak_rss_mb']:.0f} MB" if largest else "not run",
                bool(largest) and largest["peak_rss_mb"] <= SCALE_RSS_TARGET_MB))
    share = results["ingest"]["pipeline_share_of_embedder"]
    out.append((f"ingestion >= {PIPELINE_SHARE_TARGET:.0%} of the embedder's raw throughput", f"{share:.0%}",
                share >= PIPELINE_SHARE_TARGET))
    found = results.get("searchable")
    if found:
        first, every = found["first_searchable_s"], found["all_searchable_s"]
        out.append((f"{found['small_files']} small files beside a {found['big_megabytes']:g} MB text: the first searchable "
                    f"within {SEARCHABLE_FIRST_S} s, all within {SEARCHABLE_ALL_S} s",
                    f"{first} s, {every} s (load {found['load_average_before'][0]} on {found['cpus']} cores)",
                    first is not None and every is not None and first <= SEARCHABLE_FIRST_S and every <= SEARCHABLE_ALL_S))
    held = results.get("answers", {}).get("splits", {}).get("held_out")
    if held:
        o = held["overall"]
        out.append(("answer set, held out: answer accuracy >= 0.9", f"{o['answer_accuracy']:.3f} of {o['answerable']}",
                    (o["answer_accuracy"] or 0) >= 0.9))
        out.append(("answer set, held out: refusal accuracy >= 0.9", f"{o['refusal_accuracy']:.3f} of {o['must_refuse']}",
                    (o["refusal_accuracy"] or 0) >= 0.9))
        right, refusals = ANSWERSET_FLOOR
        out.append((f"answer set, held out: no fall below {right} right answers and {refusals} right refusals",
                    f"{o['answer_accuracy']:.3f} / {o['refusal_accuracy']:.3f}",
                    (o["answer_accuracy"] or 0) >= right and (o["refusal_accuracy"] or 0) >= refusals))
        splits = results["answers"]["splits"].values()
        leaks = sum(s["by_category"].get(c, {}).get("forbidden_text", 0) for s in splits for c in ("forbidden", "revision"))
        out.append(("answer set, both splits: no text the caller may not read, no replaced revision's value",
                    f"{leaks} answers or passages", leaks == 0))
    serve = results.get("serve", {})
    if "search" in serve:
        found = serve["search"]
        out.append((f"search through citewell serve at ~50k chunks: p50 within {SERVE_P50_SLACK:.0%} of in-process",
                    f"{found['served']['p50_ms']:.1f} ms vs {found['in_process']['p50_ms']:.1f} ms "
                    f"({found['p50_ratio']:.2f}x) at {found['chunks']:,} chunks", found["p50_ratio"] <= 1 + SERVE_P50_SLACK))
    if "load" in serve:
        load = serve["load"]
        out.append(("citewell serve under load: no 5xx, no reply with another tenant's or role's text",
                    f"{load['server_errors']} 5xx, {load['leaks']} leaks in {load['requests']:,} replies",
                    load["server_errors"] == 0 and load["leaks"] == 0))
    h = results["honesty"]
    margin = h["accuracy"] - h["always_refuse_accuracy"]
    out.append(("SQuAD 2.0 held-out half: accuracy >= always refusing + 0.08, answer precision >= 0.7",
                f"{margin:+.3f}, precision {h['answer_precision']:.3f}",
                margin >= 0.08 and h["answer_precision"] >= 0.7))
    out.append((f"SQuAD 2.0 held-out half: accuracy >= always refusing, answer precision >= {SQUAD_PRECISION_FLOOR}",
                f"{h['accuracy']:.3f} (always refusing {h['always_refuse_accuracy']:.3f}), precision {h['answer_precision']:.3f}",
                h["accuracy"] >= h["always_refuse_accuracy"] and h["answer_precision"] >= SQUAD_PRECISION_FLOOR))
    realdocs = results.get("realdocs")
    if realdocs:  # its figures and their own targets are in its block; here, whether all are met
        from benchmarks.realdocs import TARGETS, meets

        unmet = [key for key, op, bound in TARGETS if not meets(realdocs, key, op, bound)]
        out.append(("realdocs-tune and -tune2: the four targets of their block (right, must-refuse answered, wrong, fact shown)",
                    f"{len(TARGETS) - len(unmet)} of {len(TARGETS)} met", not unmet))
    return out


def _quality(results: dict[str, Any], data: Path) -> list[str]:
    lines = []
    for q in results["quality"]:
        sample = " (quick sample: not comparable with published figures)" if q["sample"] else ""
        ingest = q["ingest"]
        lines += [
            f"### {q['dataset']}{sample}",
            "",
            f"{ingest['documents']:,} documents ({ingest['failed']} failed), {ingest['chunks']:,} chunks, "
            f"{q['queries']} judged queries. Documents are ranked by their best chunk, top 100, scored "
            "with ir-measures (trec_eval).",
            "",
            "| system | lane | nDCG@10 | Recall@100 | MRR@10 |",
            "|---|---|---|---|---|",
        ]
        for system, key in (("citewell", "citewell"), (f"Haystack {q['peer']['version']}", "peer_lanes")):
            for lane in ("bm25", "vector", "hybrid"):
                s = q[key][lane]
                bold = "**" if system == "citewell" and lane == "hybrid" else ""
                lines.append(f"| {system} | {lane} | {bold}{s['ndcg_at_10']:.4f}{bold} | {s['recall_at_100']:.4f} "
                             f"| {s['mrr_at_10']:.4f} |")
        if q["dataset"] == "scifact" and not q["sample"]:
            for name, ndcg, recall in references(data):
                lines.append(f"| published | {name} | {ndcg:.3f} | {recall:.3f} | |")
        lines.append("")
    return lines


def _honesty(h: dict[str, Any]) -> list[str]:
    return [
        f"{h['questions']:,} questions ({h['unanswerable']:,} unanswerable, each written to look answerable from its "
        f"paragraph) over {h['chunks']} chunks, through `ask` with the shipped refusal model.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| refusals on unanswerable questions | {h['refusal_rate_unanswerable']:.3f} |",
        f"| answers on answerable questions | {h['answer_rate_answerable']:.3f} |",
        f"| answerable and answered: cites the question's own paragraph | {h['citation_hit_rate']:.3f} |",
        f"| answerable and answered: contains a gold answer | {h['answer_contains_gold_rate']:.3f} |",
        f"| answer precision: of every answer given, holds a gold answer | {h['answer_precision']:.3f} |",
        f"| accuracy (right answer or right refusal) | {h['accuracy']:.3f} |",
        f"| accuracy of always refusing, for scale | {h['always_refuse_accuracy']:.3f} |",
        f"| ask p50 / p95 ms (vectors cached) | {_ms(h['ask_cached_embeddings'])} |",
        "",
        "Only the held-out articles are asked: the answer models were fitted on the other half "
        "(`python -m benchmarks.calibrate_refusal`).",
        "",
    ]


def _answers(a: dict[str, Any]) -> list[str]:
    lines = [
        "citewell's own answer set (`benchmarks/answerset/`): a fictional two-tenant knowledge base "
        "in every supported format, with restricted documents and a revised one, and labelled questions asked "
        "through `ask` as their callers, scored as `citewell eval-answers` scores them. The `held_out` split was "
        "never used to fit or tune anything; `tune` was used to fit the answer models.",
        "",
        "| split | category | questions | answer accuracy | refusal accuracy | citation precision | fabricated "
        "| forbidden text |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    for split in ("held_out", "tune"):
        report = a["splits"][split]
        for name, s in [*report["by_category"].items(), ("**all**", report["overall"])]:
            lines.append(f"| {split} | {name} | {s['questions']} | {cell(s['answer_accuracy'])} "
                         f"| {cell(s['refusal_accuracy'])} | "
                         f"{cell(s['citation_precision'])} | {s['fabrications']} | {s['forbidden_text']} |")
    lines += ["", f"`ask` p50 / p95 over both splits: {_ms(a['ask'])} ms.", ""]
    if a.get("models"):
        lines += _model_generators(a["splits"]["held_out"]["overall"], a["models"])
    return lines


_LEAK_CATEGORIES = ("forbidden", "revision")  # text the caller may not read, a replaced revision's value


def _model_generators(extractive: dict[str, Any], models: list[dict[str, Any]]) -> list[str]:
    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    def row(name: str, rate: str, s: dict[str, Any], leaks: int | str) -> str:
        return (f"| {name} | {rate} | {cell(s['answer_accuracy'])} | {cell(s['refusal_accuracy'])} | "
                f"{cell(s['citation_precision'])} | {s['fabrications']} | {s['forbidden_text']} | {leaks} | "
                f"{s.get('drafts_rejected', 0)} | {s.get('generator_unavailable', 0)} |")

    lines = [
        "### Model generators",
        "",
        f"The held-out split again, with `CITEWELL_GENERATOR=openai` and `=bedrock` pointed at the local model server "
        f"(`python -m benchmarks.model_server`, seed {models[0]['seed']}) and run as `citewell eval-answers` "
        "in a process of its own. The server holds no language model: a stand-in reads the sources in the prompt, "
        "quotes the sentence sharing most of the question's rarer words with its `[Sn]` (or refuses when none holds "
        "half their weight), and at the given rate makes a model's mistakes. Bedrock goes through boto3's Converse "
        "call, sent to the same server by `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`. A rejected draft or an unusable reply "
        "falls back to the extractive answer, which is what is scored. These rows measure citewell's handling of a "
        "model, not a model.",
        "",
        "| generator | fault rate | answer accuracy | refusal accuracy | citation precision | fabricated | "
        "forbidden text | of it, unreadable or replaced text | drafts rejected | unusable replies |",
        "|---|---|---|---|---|---|---|---|---|---|",
        row("extractive (default)", "-", extractive, "-"),
    ]
    for m in models:
        leaks = sum(m["by_category"].get(c, {}).get("forbidden_text", 0) for c in _LEAK_CATEGORIES)
        lines.append(row(f"{m['generator']} (`{m['configured_as']}`)", f"{m['fault_rate']:.1f}", m["overall"], leaks))
    lines += [
        "",
        "What became of each reply, by the fault the server made (`none`: a faithful reply):",
        "",
        "| generator | fault rate | fault | replies | rejected by verification | unusable (adapter) | "
        "reached the answer | of those, scored wrong |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in models:
        for fault, o in m["faults"].items():
            lines.append(f"| {m['configured_as']} | {m['fault_rate']:.1f} | {fault} | {o['replies']} | {o['rejected']} | "
                         f"{o['unusable']} | {o['reached']} | {o['wrong']} |")
    lines += [
        "",
        "An `unwarranted_answer` quotes a real sentence of its sources, so verification cannot tell it from an "
        "answer; it reaches the caller, and the evaluation counts it (fabricated, or a wrong answer) where the "
        "labels say it should have been refused. Faithful replies rejected: "
        f"{sum(m['faults'].get('none', {}).get('rejected', 0) for m in models)}.",
        "",
    ]
    return lines


def _recall(speed: dict[str, Any]) -> str:
    found = (speed.get("vector_recall") or {}).get("recall_at_10")
    return "not run" if found is None else f"{found:.3f}"


def _latency(results: dict[str, Any]) -> list[str]:
    ours = _speed(results, "citewell")
    peers = {p["chunks"]: p for p in _speed(results, "peer")}
    lines = [
        "Warm, one query at a time, k=10, the SciFact test queries as the eval identity (so every "
        "lane applies the access filter), read-back included. Corpora are SciFact, Cranfield and "
        "SQuAD paragraphs, then copies of them under new ids (no invented text). p50 / p95 ms.",
        "",
        "| chunks | queries | query embedding alone | BM25 lane | vector lane | vector, no embedding "
        "| vector recall@10 | hybrid | "
        "hybrid, no embedding | ask | peer hybrid | peer / citewell (p50) | peak RSS citewell / peer |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in ours:
        peer = peers.get(s["chunks"])
        ratio = f"{peer['hybrid']['p50_ms'] / s['hybrid']['p50_ms']:.1f}x" if peer else "not run"
        memory = f"{s['peak_rss_mb']:.0f} / {peer['peak_rss_mb']:.0f} MB" if peer else f"{s['peak_rss_mb']:.0f} MB / not run"
        lines.append(
            f"| {s['chunks']:,} | {s['hybrid']['n']} | {_ms(s['embed_query'])} | {_ms(s['bm25'])} | {_ms(s['vector'])} | "
            f"{_ms(s['vector_no_embed'])} | {_recall(s)} | **{_ms(s['hybrid'])}** | {_ms(s['hybrid_no_embed'])} "
            f"| {_ms(s.get('ask'))} | "
            f"{_ms(peer['hybrid']) if peer else 'not run'} | {ratio} | {memory} |"
        )
    lines.append("")
    encoded = [f"{s['ask_encoder_texts']} at {s['chunks']:,} chunks" for s in ours if "ask_encoder_texts" in s]
    if encoded:
        lines += [f"Each `ask` above is a question's first (no answer from the cache), so its units are embedded "
                  f"the first time they are read. Texts the unit encoder embedded per ask, on average (the question "
                  f"and the units not embedded before; `vectors.CANDIDATES` bounds them): {', '.join(encoded)}.", ""]
    built = [f"{s['chunks']:,} chunks in {s['build_seconds']:.0f} s"
             + (f" (peak RSS {s['build_peak_rss_mb']:.0f} MB)" if "build_peak_rss_mb" in s else "")
             for s in ours if "build_seconds" in s]
    indexed = [f"{p['chunks']:,} chunks in {p['index_seconds']:.1f} s" for p in peers.values()]
    runs = ", ".join(f"{p['hybrid']['n']} queries at {size:,} chunks" for size, p in peers.items())
    lines.append(f"Building the corpora (copying records and vectors, lexical indexing; in a process of its own, "
                 f"so the peak RSS in the table is the search's): {', '.join(built)}. "
                 f"The peer's `write_documents` (its BM25 statistics): {', '.join(indexed) or 'not run'}. "
                 f"The peer's hybrid pipeline, the same query embedding included, ran fewer queries as the "
                 f"corpus grew (its in-memory BM25 scores every document in Python): {runs or 'not run'}.")
    lines.append("")
    lines.append("Vector recall@10: the lane's top 10 against every row of the caller scored, a hit counting "
                 "when its cosine reaches the exact tenth (the copies in grown corpora have equal vectors). From "
                 f"{IVF_MIN_ROWS:,} rows the lane scores the clusters nearest the question "
                 "(`citewell.index.clusters`); below, every row, so 1.0.")
    lines.append("")
    lines.append("\"No embedding\" takes each query's vector from the cache instead of the model: the search "
                 "alone. `ask` runs each query once (no answer comes from the answer cache) and embeds the "
                 "evidence sentences it has not seen before, keeping their vectors by content hash in the home; "
                 "in the larger corpora, copies repeat sentences already embedded.")
    lines.append("")
    return lines


def _serving(serve: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if "load" in serve:
        load = serve["load"]
        lines += [
            f"A real `citewell serve` process on 127.0.0.1, {load['clients']} concurrent clients for {load['seconds']:.0f} s "
            f"(searches, questions, and look-ups of answers any identity got) under random identities of two tenants "
            f"and their roles, while one ingest after another ran ({load['ingests_completed']} revisions of a long "
            f"document published). The corpus ({serve['corpus_chunks']:,} chunks) plants a marker word per tenant and "
            "role; every reply was checked for markers its caller may not read. Clients and server share the machine.",
            "",
            f"**{load['requests']:,} replies, {load['requests_per_second']:.1f} per second; {load['server_errors']} 5xx; "
            f"{load['leaks']} replies holding another tenant's or role's text.**",
            "",
            "| request | replies | p50 ms | p95 ms | p99 ms |",
            "|---|---|---|---|---|",
        ]
        for kind, t in load["latency_ms"].items():
            lines.append(f"| {kind} | {t['n']:,} | {t['p50_ms']:.1f} | {t['p95_ms']:.1f} | {t['p99_ms']:.1f} |")
        statuses = ", ".join(f"{name}: {count:,}" for name, count in load["statuses"].items())
        lines += ["", f"Replies by status: {statuses}. (A look-up of someone else's answer is a 404 by design.)", ""]
    if "search" in serve:
        found = serve["search"]
        lines += [
            f"Search at {found['chunks']:,} chunks, {found['queries']} SciFact queries one at a time, k=10, hybrid with the "
            "query embedding, in-process and over HTTP through a server on the same home, alternately:",
            "",
            "| path | p50 ms | p95 ms | p99 ms |",
            "|---|---|---|---|",
            f"| in-process (`citewell.search.search`) | {found['in_process']['p50_ms']:.1f} "
            f"| {found['in_process']['p95_ms']:.1f} | "
            f"{found['in_process']['p99_ms']:.1f} |",
            f"| through `citewell serve` (HTTP, token, API) | {found['served']['p50_ms']:.1f} "
            f"| {found['served']['p95_ms']:.1f} | "
            f"{found['served']['p99_ms']:.1f} |",
            "",
        ]
    return lines


def _ingest(i: dict[str, Any]) -> list[str]:
    lines = [
        f"{i['documents']:,} SciFact documents (every k-th), {i['chunks']:,} chunks, an empty vector cache, the model "
        f"loaded before the clock: {i['seconds']:.1f} s, **{i['chunks_per_second']:.1f} chunks/s**.",
        "",
        "| stage | seconds | chunks/s |",
        "|---|---|---|",
    ]
    names = {"publish": "publish (write to the index)"}
    for stage, s in i["stages"].items():
        rate = f"{s['chunks_per_second']:,.1f}" if s["chunks_per_second"] else "n/a"
        lines.append(f"| {names.get(stage, stage)} | {s['seconds']:.2f} | {rate} |")
    raw = i["embedder_alone"]
    lines += [
        "",
        f"The embedder alone on the same {raw['chunks']:,} texts ({raw['identity']}): {raw['seconds']:.1f} s, "
        f"**{raw['chunks_per_second']:.1f} chunks/s**. The pipeline runs at "
        f"**{i['pipeline_share_of_embedder']:.0%}** of the model's raw speed. Peak RSS {i['peak_rss_mb']:.0f} MB.",
        "",
        "The peer has no ingestion pipeline of its own to compare (parsing and chunking are the "
        "user's to wire); writing already-embedded chunks to its store is in the speed table.",
        "",
    ]
    return lines


def _large_files(large: dict[str, Any]) -> list[str]:
    text, pdf = large["one_line_text"], large["pdf"]
    lines = [
        "### Large files",
        "",
        "Written at bench time from SciFact's and Cranfield's text (`benchmarks.large_files`): one line of "
        "their sentences, reshuffled on each pass so no chunk repeats, and a manual of pages with chapter bookmarks. "
        "Each goes through the `citewell ingest` runner into an empty home with no cached vectors, the model loaded "
        "before the clock.",
        "",
        "| file | size | chunks | total s | parse s | chunk s | embed s | publish s | MB/s | chunks/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, row in ((f"{text['megabytes']:g} MB on one line", text), (f"{pdf['pages']}-page PDF", pdf)):
        stages = row["stages"]
        lines.append(
            f"| {label} | {row['megabytes']:.2f} MB | {row['chunks']:,} | {row['seconds']:,.1f} | "
            + " | ".join(f"{stages.get(name, 0):,.1f}" for name in ("parse", "chunk", "embed", "publish"))
            + f" | {row['megabytes_per_second']:.3f} | {row['chunks_per_second']:.1f} |"
        )
    return [*lines, "", f"Peak RSS {large['peak_rss_mb']:.0f} MB.", ""]


def _crawl(crawl: dict[str, Any]) -> list[str]:
    first, again = crawl["first"], crawl["recrawl"]
    wrote = "nothing" if again["wrote_nothing"] else f"{again['writes_before']} became {again['writes_after']}"
    return [
        "### A site crawled on loopback",
        "",
        f"`citewell ingest URL --crawl` on a {crawl['site_pages']}-page site served on 127.0.0.1 (`benchmarks.crawl`: "
        f"an index, ten sections, their pages; ETag and Last-Modified on each), {crawl['concurrency']} requests in "
        f"flight, {crawl['delay']:g} s between request starts, into an empty home, the model loaded before the clock.",
        "",
        "| crawl | pages | seconds | pages/s | requests | conditional | parse s | chunk s | embed s | publish s |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(f"| {label} | {row['pages']} | {row['seconds']:,.2f} | {row['pages_per_second']:,.1f} | {row['requests']} | "
          f"{row['conditional_requests']} | "
          + " | ".join(f"{row['stages'].get(name, 0):,.2f}" for name in ("parse", "chunk", "embed", "publish")) + " |"
          for label, row in (("first", first), ("again, nothing changed", again))),
        "",
        f"The re-crawl's outcomes: {', '.join(f'{n} {status}' for status, n in again['statuses'].items())}; it wrote {wrote} "
        f"(record versions, uploads and objects compared before and after).",
        "",
    ]


def _searchable(found: dict[str, Any]) -> list[str]:
    before, after = found["load_average_before"], found["load_average_after"]
    stop = found["ctrl_c"]
    return [
        "### Searchable as it goes",
        "",
        f"A folder of {found['small_files']} small files (abstracts, one a file) beside one {found['big_megabytes']:g} MB "
        "text on one line (`benchmarks.searchable`): a real `citewell ingest` of the folder into an empty home while "
        "this process searches the home's lexical lane for each small file's own word, every 50 ms.",
        "",
        "| first small file searchable | all small files searchable | the large file then | Ctrl-C: exit, seconds to stop, "
        "documents still published |",
        "|---|---|---|---|",
        f"| {found['first_searchable_s']} s | {found['all_searchable_s']} s "
        f"| {found['big_file_status_when_all_found'] or 'not registered yet'} "
        f"| {stop['exit']}, {stop['seconds_to_stop']} s, {stop['published_after']} |",
        "",
        f"On {found['cpus']} cores; load average (1, 5, 15 min) {', '.join(map(str, before))} before and "
        f"{', '.join(map(str, after))} after: the machine was shared.",
        "",
    ]


def _imports(imports: dict[str, Any]) -> list[str]:
    lines = ["| handler | median ms | slowest imports (ms) |", "|---|---|---|"]
    for name, entry in imports.items():
        if isinstance(entry, dict) and "median_ms" in entry:
            slowest = ", ".join(f"{k} {v:.0f}" for k, v in entry["slowest"].items())
            lines.append(f"| {name} | {entry['median_ms']:.0f} | {slowest} |")
    return [*lines, ""]


def paper() -> list[str]:
    p = PAPER
    n, d, m = p["chunks"], p["dims"], p["hnsw_m"]
    per_vector = 1.1 * (4 * d + 8 * m)
    vectors_gb = n * per_vector / 1e9
    text_gb = n * p["text_bytes"] / 1e9
    primary_gb = vectors_gb + text_gb
    shards = max(1, round(primary_gb / p["shard_target_gb"]))
    copies_gb = vectors_gb * (1 + p["replicas"])
    per_node_gb = (p["node_ram_gb"] - p["node_heap_gb"]) * 0.5
    nodes = -(-copies_gb // per_node_gb)
    fp16_gb = n * 1.1 * (2 * d + 8 * m) / 1e9 * (1 + p["replicas"])
    concurrency = p["queries_per_second"] * p["query_seconds"]
    hours = n / p["requests_per_minute"] / 60
    tenant_1pct = n // 100
    return [
        f"Assumptions: {n:,} chunks, {d}-dimension vectors (Titan Text Embeddings v2, the AWS default), "
        f"HNSW with m={m} (the index mapping), about {p['text_bytes']:,} bytes of stored and indexed text per chunk, "
        f"{p['replicas']} replica.",
        "",
        f"- **HNSW memory.** OpenSearch sizes an HNSW vector at about 1.1 x (4 x d + 8 x m) bytes = "
        f"1.1 x ({4 * d} + {8 * m}) = {per_vector:,.0f} bytes, so {n:,} vectors need {vectors_gb:.1f} GB, "
        f"{copies_gb:.1f} GB with the replica, and it must stay in RAM outside the JVM heap for fast queries. "
        f"On nodes of {p['node_ram_gb']} GB with a {p['node_heap_gb']} GB heap, half of the rest is for vectors: "
        f"{per_node_gb:.0f} GB a node, so at least {nodes:.0f} data nodes. fp16 scalar quantization "
        f"(2 bytes a dimension) brings the total to {fp16_gb:.1f} GB; 512 dimensions would halve it again.",
        f"- **Shards.** About {vectors_gb:.0f} GB of vectors plus {text_gb:.0f} GB of text and inverted index is "
        f"{primary_gb:.0f} GB of primary data: {shards} primary shards at the {p['shard_target_gb']} GB a shard "
        "OpenSearch recommends (10-50 GB). Routing by tenant keeps a tenant's query on one shard.",
        f"- **Filter selectivity.** Every query is pre-filtered by tenant and roles inside the kNN clause. A tenant "
        f"holding 1% of the corpus is {tenant_1pct:,} chunks: when the filter leaves fewer candidates than the engine's "
        "threshold, it scores them exactly (cheap, exact); a broad filter walks the HNSW graph with the filter "
        "applied during the walk. Post-filtering is never used: with a 1% tenant it would discard 99% of the k "
        "neighbours and return too few, or another tenant's.",
        f"- **Lambda concurrency.** Concurrency = requests per second x seconds per request: "
        f"{p['queries_per_second']} queries/s x {p['query_seconds']} s = {concurrency:.1f} concurrent query "
        "functions, far under the default account limit of 1,000; ingestion fans out per upload, so the "
        "embed stage's reserved concurrency is what protects the embedding quota.",
        f"- **Bedrock throughput.** Embedding models are throttled by requests per minute, one chunk a request "
        f"for Titan v2: at {p['requests_per_minute']:,} requests a minute (an example; the account's quota is in "
        f"Service Quotas), {n:,} chunks take {n:,} / {p['requests_per_minute']:,} / 60 = {hours:.1f} hours. A first "
        "load that size belongs in a Bedrock batch inference job; the content-hash cache makes re-uploads free.",
        "",
    ]


def render(results: dict[str, Any], data: Path) -> str:
    m = results["machine"]
    lines = [
        "# citewell benchmarks",
        "",
        f"Written by `make {'bench-quick' if results['mode'] == 'quick' else 'bench'}` on {results['started']} (UTC), "
        f"{results['mode']} mode, in {results['seconds'] / 60:.1f} minutes{_kept(results)}. Every figure below is from that run.",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory']}; Python {m['python']}, {m['os']}; citewell at commit "
        f"{m['commit']}. Data: `{data}`.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        *[f"| {t} | {v} | {'yes' if ok else '**no**'} |" for t, v, ok in targets(results)],
        "",
        "## Retrieval quality",
        "",
        "The peer is Haystack (`haystack-ai`) with its in-memory BM25 retriever (BM25L, its default), its "
        "in-memory embedding retriever and its `DocumentJoiner` in reciprocal-rank-fusion mode, run in the same "
        "process over the very same chunks and vectors (citewell's MiniLM wrapped as a Haystack component), "
        "with the same tenant and role filter. Its vector lane is exact, and so is citewell's on these corpora "
        "(its clusters start at 100,000 chunks), so the two agree.",
        "",
        *_quality(results, data),
        "## Answers: citewell's answer set",
        "",
        *(_answers(results["answers"]) if "answers" in results else ["Not run."]),
        "## Honesty: SQuAD 2.0 dev, held-out half",
        "",
        *_honesty(results["honesty"]),
        "## Search and answer latency",
        "",
        *_latency(results),
        "## Serving over HTTP: `citewell serve`",
        "",
        *(_serving(results["serve"]) if "serve" in results else ["Not run."]),
        "## Ingestion throughput",
        "",
        *_ingest(results["ingest"]),
        *(_large_files(results["large_files"]) if "large_files" in results else []),
        *(_crawl(results["crawl"]) if "crawl" in results else []),
        *(_searchable(results["searchable"]) if "searchable" in results else []),
        "## Cold import of the Lambda handlers",
        "",
        "Median of fresh interpreters importing `functions/NAME/app.py` (`-X importtime`), X-Ray off.",
        "",
        *_imports(results["imports"]),
        "## Scale on paper: 10M chunks on OpenSearch",
        "",
        *paper(),
        "## Commands",
        "",
        "Every phase ran as its own process, in this order:",
        "",
        "```",
        *results["commands"],
        "```",
        "",
    ]
    return "\n".join(lines)


def headline(results: dict[str, Any]) -> str:
    """The README's summary: a few figures, each from this run."""
    lines = [HEADLINE_START, ""]
    m = results["machine"]
    lines.append(f"From `make bench` on {results['started'][:10]} ({m['cores']} cores, {m['memory']}, models on the CPU); "
                 "every figure with its command in [BENCHMARKS.md](BENCHMARKS.md).")
    lines.append("")
    lines.append("| measure | citewell | Haystack peer |")
    lines.append("|---|---|---|")
    for q in results["quality"]:
        lines.append(f"| {q['dataset']} hybrid nDCG@10 | **{q['citewell']['hybrid']['ndcg_at_10']:.4f}** | "
                     f"{q['peer_lanes']['hybrid']['ndcg_at_10']:.4f} |")
    peers = {p["chunks"]: p for p in _speed(results, "peer")}
    for s in _speed(results, "citewell"):
        peer = peers.get(s["chunks"])
        theirs = f"{peer['hybrid']['p50_ms']:.1f} ms" if peer else "not run"
        lines.append(f"| hybrid search p50 at {s['chunks']:,} chunks, query embedding included | "
                     f"**{s['hybrid']['p50_ms']:.1f} ms** | {theirs} |")
    h, i = results["honesty"], results["ingest"]
    held = results.get("answers", {}).get("splits", {}).get("held_out", {}).get("overall")
    if held:
        lines.append(f"| answer set, held out: right answers / right refusals | {held['answer_accuracy']:.3f} / "
                     f"{held['refusal_accuracy']:.3f} | n/a |")
    lines.append(f"| SQuAD 2.0 held-out half: unanswerable questions refused | {h['refusal_rate_unanswerable']:.3f} | n/a |")
    lines.append(f"| ingestion, chunks/s (share of the raw embedder) | {i['chunks_per_second']:.1f} "
                 f"({i['pipeline_share_of_embedder']:.0%}) | n/a |")
    lines += ["", HEADLINE_END]
    return "\n".join(lines)


FUZZ_START, FUZZ_END = "<!-- fuzz:start -->", "<!-- fuzz:end -->"


COLD_START, COLD_END = "<!-- cold-cli:start -->", "<!-- cold-cli:end -->"
REALDOCS_START, REALDOCS_END = "<!-- realdocs:start -->", "<!-- realdocs:end -->"
VERIFIER_START, VERIFIER_END = "<!-- verifier:start -->", "<!-- verifier:end -->"  # benchmarks/train_verifier's runs
OCR_START, OCR_END = "<!-- ocr:start -->", "<!-- ocr:end -->"  # python -m benchmarks.ocr --write
CONVERSATIONS_START, CONVERSATIONS_END = "<!-- conversations:start -->", "<!-- conversations:end -->"
# A section measured by its own command sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``
# (NAME not ``bench:headline``, the README's); `make bench` keeps every such block as it was.
KEPT_BLOCK = re.compile(r"<!-- (?P<name>[a-z0-9-]+):start -->.*?<!-- (?P=name):end -->", re.DOTALL)


def write_block(path: Path, block: str, start_marker: str, end_marker: str) -> None:
    """Puts ``block`` (which opens and closes with the markers) in place of the old one, or at the end."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start, end = text.find(start_marker), text.find(end_marker)
    if start >= 0 and end >= 0:
        text = text[:start] + block + text[end + len(end_marker):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def keep_blocks(path: Path, rendered: str) -> str:
    """Sections measured by their own commands (`make fuzz`, the cold CLI before and after a
    change, the filter and reranker costs...) live in BENCHMARKS.md between markers; a bench run
    keeps each of them as it was, in the order the file had them, after what it rendered."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    out = rendered
    for block in KEPT_BLOCK.finditer(old):
        if block.group(0) not in out:
            out = out.rstrip("\n") + "\n\n" + block.group(0) + "\n"
    return out


def update_readme(readme: Path, results: dict[str, Any]) -> None:
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(HEADLINE_START), text.find(HEADLINE_END)
    if start < 0 or end < 0:
        return
    readme.write_text(text[:start] + headline(results) + text[end + len(HEADLINE_END):], encoding="utf-8")
