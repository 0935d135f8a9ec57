"""Which process holds a document in flight, so the audit can tell a dead owner from a slow one.

A document is ``processing`` or ``deleting`` while one process works on it. When that process
dies (kill -9, a power cut, a closed terminal) nothing moves the record on; the audit would
otherwise have to wait ``CITEWELL_STUCK_MINUTES`` before calling it stuck. The record carries
the owner's lease (host, process id, and when that process started, so a reused process id is
not mistaken for the owner); on the same host the audit can see at once that it is gone.
Elsewhere (another host, a Lambda) a lease proves nothing and the time limit applies.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class Lease(BaseModel):
    model_config = ConfigDict(frozen=True)

    host: str
    pid: int = Field(gt=0)
    started: int | None = None  # the process's start time in clock ticks since boot (Linux), None elsewhere
    boot: str | None = None  # the boot the process ran in (Linux): after a reboot every process is gone

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}"


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, start time)`` of a process from /proc, or None where /proc has no such entry."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[0], int(fields[19])


@cache
def _boot() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def current() -> Lease:
    """The lease of this process."""
    stat = _stat(os.getpid())
    return Lease(host=socket.gethostname(), pid=os.getpid(), started=stat[1] if stat else None, boot=_boot())


def is_dead(lease: Lease) -> bool:
    """True only when sure: the owner ran on this host and no longer runs (or is a zombie)."""
    if lease.host != socket.gethostname():
        return False
    if lease.boot is not None and _boot() is not None and lease.boot != _boot():
        return True
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, under another user
        pass
    stat = _stat(lease.pid)
    if stat is None:
        return False
    state, started = stat
    return state in ("Z", "X") or (lease.started is not None and started != lease.started)
