"""Answers on real documents nobody on the project wrote: ``python -m benchmarks.realdocs --data DIR [DIR ...]``.

Each ``DIR`` is a realdocs folder (``docs/ops``, ``docs/dev``, ``questions.jsonl``): man pages,
manuals, READMEs, config files, PDFs and tables in two role groups, and labelled questions in
the answer-set format. Its files are ingested into the tenant its questions name as
``GROUP/NAME``, readable by the role ``GROUP``; every question is asked as its caller, and the
figures the targets name are printed for each folder and for all together: answers right and
wrong, refusals, and how often a refusal's first closest passage held the answer (retrieval
found it; the decision to answer did not).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from citewell.answers.service import ask
from citewell.evaluation.answers import AnswerCase, Report, evaluate, judge, load_cases
from citewell.ingest.runner import ingest
from citewell.ingest.stages import IngestRequest
from citewell.models.answers import Answer
from citewell.services import Services

TENANT = "realdocs"
GROUPS = ("ops", "dev")


def tenant_of(folder: Path) -> str:
    """The tenant the folder's questions are asked in (realdocs-tune: ``realdocs``; realdocs-tune2: ``realdocs2``)."""
    tenants = {case.tenant for case in load_cases(folder / "questions.jsonl")}
    return tenants.pop() if len(tenants) == 1 else TENANT


def requests(folder: Path) -> list[IngestRequest]:
    """One request a file of ``folder/docs/GROUP``, in name order, in the tenant its questions are asked in."""
    tenant = tenant_of(folder)
    return [
        IngestRequest(document_id=f"{group}/{path.name}", tenant=tenant, allowed_roles=frozenset({group}),
                      data=path.read_bytes(), filename=path.name, source=f"docs/{group}/{path.name}")
        for group in GROUPS for path in sorted((folder / "docs" / group).iterdir()) if path.is_file()
    ]


def ingest_realdocs(services: Services, folder: Path) -> list[str]:
    """Ingests the documents; returns those that did not publish, with why (they are part of the result)."""
    outcomes = ingest(services, requests(folder))
    return [f"{o.document_id}: {o.status} {o.error.message if o.error else ''}".strip()
            for o in outcomes if o.status not in ("published", "unchanged")]


def _holds(text: str, case: AnswerCase) -> bool:
    normal = " ".join(text.split()).lower()
    return bool(case.must_contain) and all(" ".join(f.split()).lower() in normal for f in case.must_contain)


def breakdown(cases: list[AnswerCase], answers: list[Answer], report: Report) -> dict[str, object]:
    """The figures the targets read, from one run: ``eval-answers``'s own counts, and how often a
    non-answer's first closest passage held the fact (retrieval found it; the decision did not)."""
    scores = report.overall
    mine, refusals = scores.answerable_outcomes, scores.must_refuse_outcomes
    first_held = sum(bool(a.closest) and _holds(a.closest[0].text, c)
                     for c, a, j in zip(cases, answers, report.judgements) if not c.refuse and not j.answered)
    n, m = scores.answerable or 1, scores.must_refuse or 1
    return {
        "answerable": scores.answerable, "must_refuse": scores.must_refuse,
        "answered_right": mine.answered_right, "answered_wrong": mine.answered_wrong,
        "refused_answerable": scores.answerable - mine.answered_right - mine.answered_wrong,
        "unconfirmed_holding_fact": mine.unconfirmed_with_fact, "refused_with_answer_first_closest": first_held,
        "answered_must_refuse": refusals.answered,
        "answered_right_share": round(mine.answered_right / n, 4), "answered_wrong_share": round(mine.answered_wrong / n, 4),
        "answered_or_unconfirmed_holding_share": scores.fact_shown or 0.0,
        "answered_must_refuse_share": round(refusals.answered / m, 4), "forbidden_text": scores.forbidden_text,
    }


TARGETS = (  # (figure, at least or at most, bound): from the issue that set them
    ("answered_right_share", ">=", 0.75), ("answered_must_refuse_share", "<=", 1 / 12),
    ("answered_wrong_share", "<=", 0.05), ("answered_or_unconfirmed_holding_share", ">=", 0.9),
)


def meets(figures: dict[str, object], key: str, op: str, bound: float) -> bool:
    """Whether ``figures[key]`` is on the right side of one of ``TARGETS``' bounds."""
    value = float(figures[key])  # type: ignore[arg-type]
    return value >= bound if op == ">=" else value <= bound


def block(figures: dict[str, object], command: str, commit: str, each: dict[str, dict[str, object]] | None = None) -> str:
    from datetime import UTC, datetime

    from benchmarks.report import REALDOCS_END, REALDOCS_START
    from citewell.answers.extractive.refusal import shipped_model

    fitted_on = shipped_model().fitted_on
    seen = [name for name in (each or {"realdocs-tune": {}}) if f"{name} (" in fitted_on or f"{name} and " in fitted_on]
    unseen = [name for name in (each or {}) if name not in seen]
    fitted = (f"The shipped answer models were fitted on {' and '.join(seen)}'s questions too (`calibrate_refusal --realdocs`); "
              if seen else "The shipped answer models were fitted on none of these questions; ") + (
              f"{' and '.join(unseen)} they never saw. " if unseen and seen else "") + \
        "Held-out real documents, kept outside the project, measure the result."
    names = {"answered_right_share": "answered right, of answerable",
             "answered_must_refuse_share": "answered though it must be refused, of those",
             "answered_wrong_share": "answered wrong (a fact missing), of answerable",
             "answered_or_unconfirmed_holding_share": "answered, or unconfirmed quoting the fact, of answerable"}
    each = each or {}
    rows = [f"| {names[key]} | {op} {bound:.3f} | {' | '.join(f'{f[key]:.3f}' for f in each.values())}"
            f"{' | ' if each else ''}{figures[key]:.3f} | {'yes' if meets(figures, key, op, bound) else '**no**'} |"
            for key, op, bound in TARGETS]
    heads = "".join(f" {name} |" for name in each) + (" together |" if each else " measured |")
    return "\n".join([
        REALDOCS_START, f"## Answers on real documents ({', '.join(each) or 'realdocs-tune'})", "",
        f"`{command}` on {datetime.now(UTC):%Y-%m-%d} at {commit}: {figures['answerable']} answerable questions and "
        f"{figures['must_refuse']} that must be refused (out of corpus, or the answer only where the caller may not read), "
        "over real files nobody here wrote (man pages, HTML manuals, READMEs in Markdown and reStructuredText, config "
        "files, PDFs, NEWS files, DOCX/XLSX/CSV tables) in two role groups. " + fitted, "",
        f"| figure | target |{heads} met |", "|---|---|" + "---|" * (len(each) + 1) + "---|", *rows, "",
        f"Counts: {figures['answered_right']} right, {figures['answered_wrong']} wrong, {figures['refused_answerable']} "
        f"not answered ({figures['unconfirmed_holding_fact']} of them unconfirmed quoting the fact; "
        f"{figures['refused_with_answer_first_closest']} with the fact in the first closest passage); "
        f"{figures['answered_must_refuse']} answered that must be refused; {figures['forbidden_text']} with text the "
        "caller may not read.", "", REALDOCS_END])


def replay(cases: list[AnswerCase], answers: list[Answer]) -> Callable[[AnswerCase], Answer]:
    """``evaluate``'s asker for questions already asked: each case's answer (by the case itself:
    two folders may use the same ids)."""
    by_case = {id(case): answer for case, answer in zip(cases, answers)}
    return lambda case: by_case[id(case)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True,
                        help="realdocs folders: docs/ops, docs/dev, questions.jsonl")
    parser.add_argument("--home", type=Path, default=Path(".eval/realdocs"), help="rebuilt on every run")
    parser.add_argument("--show", action="store_true", help="print every question with its answer or closest passage (stderr)")
    parser.add_argument("--out", type=Path, help="write the figures into this BENCHMARKS.md, between its realdocs markers")
    args = parser.parse_args()
    import shutil

    from citewell.deployments import open_local

    shutil.rmtree(args.home, ignore_errors=True)  # nothing of an earlier run's documents or answers stays
    services = open_local(args.home)
    failed: list[str] = []
    cases, answers, each = [], [], {}
    for folder in args.data:  # each in the tenant its questions name: the folders share the home, not the documents
        failed += ingest_realdocs(services, folder)
        mine = load_cases(folder / "questions.jsonl")
        theirs = [ask(services, case.identity, case.question) for case in mine]
        each[folder.name] = breakdown(mine, theirs, evaluate(mine, replay(mine, theirs)))
        cases += mine
        answers += theirs
    report = evaluate(cases, replay(cases, answers))
    figures = breakdown(cases, answers, report)
    if args.show:
        for case, answer in zip(cases, answers):
            j = judge(case, answer)
            mark = "RIGHT" if j.correct else ("WRONG" if j.answered else ("refused" if not case.refuse else "ok-refused"))
            shown = answer.answer if answer.answer else (answer.closest[0].text[:300] if answer.closest else "")
            print(f"--- {case.id} [{case.category}] {mark}: {case.question}"
                  f"\n    want {case.must_contain} in {case.expected_documents}"
                  f"\n    {answer.outcome}: {' '.join(shown.split())[:400]}",
                  file=sys.stderr)
    if args.out:
        from benchmarks.report import REALDOCS_END, REALDOCS_START, machine, write_block

        command = f"python -m benchmarks.realdocs --data {' '.join(map(str, args.data))}"
        write_block(args.out, block(figures, command, machine()["commit"], each if len(each) > 1 else None),
                    REALDOCS_START, REALDOCS_END)
    print(json.dumps({"not_published": failed, "overall": report.overall.model_dump(), **figures,
                      **({"each": each} if len(each) > 1 else {})}, indent=2))


if __name__ == "__main__":
    main()
