"""How soon a folder's small files are searchable while a large file beside them is ingested.

``python -m benchmarks.searchable --data DIR --work DIR [--small 300] [--megabytes 20]``

Writes a folder of ``--small`` files (SciFact and Cranfield abstracts, one a file, each with a
word of its own) beside one text of ``--megabytes`` (their sentences on one line, as
``benchmarks.large_files`` writes it), then starts a real ``citewell ingest`` of the folder into
an empty home and, from this process (a second reader, as a user's other shell would be), keeps
searching the home's lexical lane for the small files' words. It reports the seconds from the
start until the first small file is found and until all are, the seconds until each of the
``citewell`` process's stages had started (from its documents' records), then sends Ctrl-C and
reports how many documents stayed published. The load average before and after goes with the
figures: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.large_files import one_line, real_text
from citewell.deployments import open_local
from citewell.errors import CitewellError
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.search import search

TENANT, ROLE = "bench", "staff"
QUERY_WORDS = 40  # words of files not yet found, asked in one lexical query


def own_word(number: int) -> str:
    """A word no abstract holds, one a file: ``zqv`` and the number in letters."""
    letters = ""
    while True:
        number, digit = divmod(number, 26)
        letters = chr(ord("a") + digit) + letters
        if not number:
            return f"zqv{letters}"


def write_folder(folder: Path, data: Path, small: int, megabytes: float) -> dict[str, str]:
    """The files, and each small file's own word by its document id."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sentences, documents = real_text(data)
    words = {}
    for number, (title, text) in enumerate(documents[:small]):
        name = f"note-{number:04d}.md"
        word = own_word(number)
        (folder / name).write_text(f"# {title or name}\n\n{text}\n\nFiled under {word}.\n", encoding="utf-8")
        words[f"{folder.name}/{name}"] = word
    (folder / "big.txt").write_bytes(one_line(sentences, megabytes))
    return words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--megabytes", type=float, default=20)
    parser.add_argument("--timeout", type=float, default=600, help="give up after this many seconds")
    args = parser.parse_args()
    folder, home = args.work / "searchable" / "folder", args.work / "searchable" / "home"
    words = write_folder(folder, args.data, args.small, args.megabytes)
    shutil.rmtree(home, ignore_errors=True)
    load_before = os.getloadavg()
    argv = [sys.executable, "-m", "citewell", "--home", str(home), "ingest", str(folder), "--tenant", TENANT,
            "--allow-roles", ROLE, "--json"]
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    identity = Identity(tenant=TENANT, roles=frozenset({ROLE}))
    found: dict[str, float] = {}
    searches = 0
    services = None
    after_exit = 0  # searches once the ingest ended (a small run may end before a search saw every file)
    while len(found) < len(words) and time.monotonic() - started < args.timeout and after_exit < 3:
        after_exit += process.poll() is not None
        if services is None:
            try:
                services = open_local(home, existing=True)
            except (CitewellError, sqlite3.Error):  # the home is still being made by the ingest
                time.sleep(0.05)
                continue
        waiting = [word for document_id, word in words.items() if document_id not in found][:QUERY_WORDS]
        try:
            hits = search(services, identity, " ".join(waiting), k=2 * QUERY_WORDS, lanes=("bm25",)).hits
        except (CitewellError, sqlite3.Error):  # the index's first write is under way
            time.sleep(0.05)
            continue
        searches += 1
        now = time.monotonic() - started
        for hit in hits:
            if hit.document_id in words and hit.document_id not in found:
                found[hit.document_id] = now
        time.sleep(0.05)
    all_found = time.monotonic() - started
    load_after = os.getloadavg()
    big = services.documents.get_document(TENANT, f"{folder.name}/big.txt") if services else None
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=600)
    stopped = time.monotonic() - started
    outcomes = json.loads(out)["documents"] if out.strip() else []
    after = open_local(home, existing=True)
    published = [d for d in after.documents.list_documents(TENANT) if d.status is DocumentStatus.PUBLISHED]
    report = {
        "small_files": len(words), "big_megabytes": args.megabytes,
        "first_searchable_s": round(min(found.values()), 1) if found else None,
        "all_searchable_s": round(all_found, 1) if len(found) == len(words) else None,
        "found": len(found), "searches": searches,
        "big_file_status_when_all_found": big.status.value if big else None,
        "ctrl_c": {"exit": process.returncode, "seconds_to_stop": round(stopped - all_found, 1),
                   "published_after": len(published), "reported": len(outcomes),
                   "vectorless_documents": len({(t, d) for t, d, _, _ in after.index.vectorless()})},
        "load_average_before": [round(x, 2) for x in load_before], "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
