"""``make demo`` (``python -m citewell.demo DIR``): the sample corpus written to ``DIR/samples``,
ingested into the home ``DIR/home`` folder by folder with its roles, then searched, asked, a
document deleted and the stores audited, each step through the CLI as a user would type it.

Run again on the same folder it rebuilds the demo in place and keeps what the user made there
while following the README's tour: the samples are the same bytes each time (so re-ingesting them
is ``unchanged``), the travel policy is ingested and deleted again, and the user's own documents,
uploads, conversations and feedback in the home stay. ``make demo-reset`` starts from nothing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from citewell import cli
from citewell.samples.writer import write_samples

ASK_STAFF = ("--tenant", "northpier", "--roles", "staff")


@dataclass(frozen=True)
class Step:
    """One CLI command of the demo, the line said before it, and the exit code it must end with."""

    caption: str | None
    argv: tuple[str, ...]
    exit_code: int = cli.EXIT_OK


def steps(samples: Path, home: Path) -> list[Step]:
    def folder(tenant: str, audience: str) -> str:
        return str(samples / tenant / audience)

    return [
        Step(f"ingest a sample corpus of two organisations into {home}, each folder readable by its roles",
             ("ingest", folder("northpier", "staff"), "--tenant", "northpier", "--allow-roles", "staff")),
        Step(None, ("ingest", folder("northpier", "engineering"), "--tenant", "northpier",
                    "--allow-roles", "engineering,support")),
        Step(None, ("ingest", folder("northpier", "hr"), "--tenant", "northpier", "--allow-roles", "hr")),
        Step(None, ("ingest", folder("bluefen", "staff"), "--tenant", "bluefen", "--allow-roles", "staff")),
        Step("two files that cannot be used (a blank scan, a text file named .pdf): each fails with its reason, "
             "the batch goes on (exit 1)",
             ("ingest", folder("northpier", "unreadable"), "--tenant", "northpier", "--allow-roles", "staff"), cli.EXIT_FAILED),
        Step("northpier staff: how much leave?",
             ("search", "How many days of annual leave do I get?", *ASK_STAFF, "--k", "2")),
        Step("bluefen staff, same question: only bluefen's guide",
             ("search", "How many days of annual leave do I get?", "--tenant", "bluefen", "--roles", "staff", "--k", "2")),
        Step("northpier support: what is E1027?",
             ("search", "What does error E1027 mean?", "--tenant", "northpier", "--roles", "support", "--k", "2")),
        Step("northpier staff, same question: error codes are not theirs to read",
             ("search", "What does error E1027 mean?", *ASK_STAFF, "--k", "2")),
        Step("northpier hr: salary band of a shift lead",
             ("search", "salary range for a shift lead", "--tenant", "northpier", "--roles", "hr", "--k", "2")),
        Step("northpier staff: a memo that exists only as a scan (no text layer), read by OCR and cited by page",
             ("ask", "When does the east gate close in winter?", *ASK_STAFF)),
        Step("no roles: nothing", ("search", "annual leave", "--tenant", "northpier", "--roles", "", "--k", "2")),
        Step("answers, each cited: how much leave, when carried days expire, the hotel allowance",
             ("ask", "How many days of annual leave do full-time staff get?", *ASK_STAFF)),
        Step(None, ("ask", "When do carried days of leave expire?", *ASK_STAFF)),
        Step(None, ("ask", "How much is the hotel allowance per night in port cities?", *ASK_STAFF)),
        Step("a question the documents do not answer: no answer is claimed (at most the nearest passage, "
             "labelled not confirmed)",
             ("ask", "Who is the chief executive of Northpier?", "--tenant", "northpier", "--roles", "staff,hr,engineering")),
        Step("northpier support: what to do for error E1027",
             ("ask", "What should the operator do for error E1027?", "--tenant", "northpier", "--roles", "support")),
        Step("the same question as staff: the error codes are not theirs to read, so it is refused as if absent",
             ("ask", "What should the operator do for error E1027?", *ASK_STAFF)),
        Step("delete the travel policy: every trace goes, and answers resting on it are withdrawn",
             ("delete", "staff/travel-policy.pdf", "--tenant", "northpier")),
        Step(None, ("ask", "How much is the hotel allowance per night in port cities?", *ASK_STAFF)),
        Step("the audit: records, objects, index and caches agree", ("audit",)),
    ]


def run(folder: Path) -> int:
    """Every step in order; the first that ends otherwise than it should stops the demo with exit 1
    (130 after Ctrl-C)."""
    samples, home = folder / "samples", folder / "home"
    write_samples(samples)
    for step in steps(samples, home):
        if step.caption:
            print(f"--- {step.caption}", flush=True)
        code = cli.main(["--home", str(home), *step.argv])
        sys.stdout.flush()
        if code != step.exit_code:
            print(f"the demo stopped: `citewell {' '.join(step.argv)}` ended with exit {code}, not {step.exit_code}",
                  file=sys.stderr)
            return code if code == cli.EXIT_INTERRUPTED else cli.EXIT_FAILED
    return cli.EXIT_OK


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m citewell.demo DIR")
    sys.exit(run(Path(sys.argv[1])))
