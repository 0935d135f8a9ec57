"""Real concurrent processes on one home: ``python -m citewell`` ingests, deletes, asks and
``audit --repair`` at once, some killed with SIGKILL at a random moment; then what a restarted
server runs (``adopt_orphans``, the uploads it resumes, the deletions it finishes) and the checks
of ``tests/interleavings.py`` that need no model: served text is the records' active upload's,
nothing current was removed, and at the end (all deleted, audit --repair, a read-only audit
that must say ok) no byte of any text under the home, tantivy's segments included."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from citewell import leases
from citewell.deletion import delete_document
from citewell.deployments import open_local
from citewell.errors import CitewellError, NotFound
from citewell.ingest.orphans import adopt_orphans
from citewell.ingest.stages import chunk_stage, embed_stage, parse_stage, publish_stage, release_embeddings
from citewell.keys import raw_key
from citewell.models.documents import DocumentStatus
from citewell.models.identity import Identity
from citewell.search import search
from tests.interleavings import IDENTITY_ROLES, ROLES, TOPICS, marker, text_of
from tests.residue import file_residue, tantivy_residue

TENANT = "northpier"
DOCUMENTS = ("policy.md", "guide.md", "notes.md")
ROUNDS = 4
TIMEOUT = 120.0  # seconds a surviving process may take before the run fails


class ProcessViolation(AssertionError):
    pass


def _cli(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "citewell", "--home", str(home), *args]


def _env() -> dict[str, str]:
    return {**os.environ, "CITEWELL_EMBED_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}


def _restart(home: Path) -> None:
    """What a restarted server does first: take over what dead processes left, and finish it."""
    services = open_local(home)
    adopted = adopt_orphans(services, leases.current())
    for upload in adopted.resumed:
        outcome = parse_stage(services, upload)
        if outcome.status != "parsed" or not outcome.revision or not outcome.content_sha256:
            continue
        chunked = chunk_stage(services, upload)
        if chunked is None:
            continue
        embed_stage(services, chunked.chunks)
        if publish_stage(services, upload, outcome.revision, outcome.content_sha256) is None:
            release_embeddings(services, chunked.chunks)
    for document in adopted.deleting:
        try:
            delete_document(services, document.tenant, document.document_id)
        except CitewellError:
            pass


def _check(home: Path, marker_of_text: dict[str, str]) -> None:
    """Served text is the active upload's, for callers it lets read; nothing current was removed."""
    services = open_local(home)
    for document in services.documents.all_documents():
        if document.active_revision is None or document.status is DocumentStatus.DELETING:
            continue
        revision = document.active_revision
        indexed = services.index.count(TENANT, document.document_id, revision)
        records = len(services.chunks.get_chunks(TENANT, document.document_id, revision))
        if indexed != document.chunk_count or records != document.chunk_count:
            raise ProcessViolation(f"{document.document_id}: active revision {revision[:8]} has {indexed} index rows and "
                                   f"{records} chunk records, the record says {document.chunk_count}")
        if document.active_upload and not services.objects.exists(raw_key(TENANT, document.document_id, document.active_upload)):
            raise ProcessViolation(f"{document.document_id}: the raw upload of the served upload was removed")
    for roles in IDENTITY_ROLES:
        caller = Identity(tenant=TENANT, roles=roles)
        for hit in search(services, caller, " ".join(TOPICS) + " procedure", k=10, lanes=("bm25",)).hits:
            document = services.documents.get_document(TENANT, hit.document_id)
            if document is None or not document.serves(hit.revision, caller):
                raise ProcessViolation(f"{sorted(roles)} were served {hit.document_id} at {hit.revision[:8]}, which its record does not serve them")
            words = {m for m in marker_of_text.values() if m in hit.text}
            if not words:
                raise ProcessViolation(f"{sorted(roles)} were served text no upload of the fuzz wrote: {hit.text!r}")


def run_processes(seed: int, rounds: int = ROUNDS) -> Counter[str]:
    """One seeded run; returns the operations run, raises ProcessViolation on a broken invariant."""
    rng = random.Random(seed)
    ops: Counter[str] = Counter()
    markers: set[str] = set()
    marker_of_text: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        home, files = Path(folder) / "home", Path(folder) / "files"
        files.mkdir()
        for round_ in range(rounds):
            running = []
            for _ in range(rng.randint(2, 3)):
                kind = rng.choice(("ingest", "ingest", "delete", "ask", "audit --repair"))
                document_id = rng.choice(DOCUMENTS)
                if kind == "ingest" or not (home / "metadata.db").exists():
                    kind, word = "ingest", marker(rng)
                    markers.add(word)
                    path = files / f"{round_}-{len(running)}-{document_id}"
                    path.write_text(text_of(word, rng.choice(TOPICS), TENANT))
                    marker_of_text[path.name] = word
                    args = ["ingest", str(path), "--doc-id", document_id, "--tenant", TENANT, "--replace",
                            "--allow-roles", ",".join(rng.sample(ROLES, rng.randint(1, 2)))]
                elif kind == "delete":
                    args = ["delete", document_id, "--tenant", TENANT]
                elif kind == "ask":
                    args = ["ask", f"What is the {rng.choice(TOPICS)} procedure?", "--tenant", TENANT,
                            "--roles", ",".join(rng.choice(IDENTITY_ROLES))]
                else:
                    args = ["audit", "--repair"]
                ops[f"process: {kind}"] += 1
                running.append(subprocess.Popen(_cli(home, *args, "--json"), env=_env(), stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL))
                if not (home / "metadata.db").exists():
                    running[-1].wait(TIMEOUT)  # the first ingest creates the home
            if round_ == 0 or rng.random() < 0.7:  # at least one kill -9 a run
                time.sleep(rng.uniform(0.5, 4.0))
                victim = rng.choice(running)
                if victim.poll() is None:
                    victim.send_signal(signal.SIGKILL)
                    ops["process: kill -9"] += 1
            for process in running:
                process.wait(TIMEOUT)
            _restart(home)
            ops["process: restart"] += 1
            _check(home, marker_of_text)
        services = open_local(home)
        for document_id in DOCUMENTS:
            try:
                delete_document(services, TENANT, document_id)
            except NotFound:
                pass
        del services
        subprocess.run(_cli(home, "audit", "--repair", "--json"), env=_env(), capture_output=True, timeout=TIMEOUT)
        result = subprocess.run(_cli(home, "audit", "--json"), env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
        report = json.loads(result.stdout)
        if not report.get("ok") or report.get("findings"):
            raise ProcessViolation(f"after every document was deleted and audit --repair ran, the audit finds: {report.get('findings')}")
        left = file_residue(home, markers) + [f"tantivy segment {s}: {t}" for s, t in tantivy_residue(home, markers).items()]
        if left:
            raise ProcessViolation(f"after every document was deleted and audit --repair ran, text is left: {left[:3]}")
    return ops


if __name__ == "__main__":
    print(dict(run_processes(int(sys.argv[1]) if len(sys.argv) > 1 else 1)))
