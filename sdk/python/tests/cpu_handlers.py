"""Handlers for the process pool's tests (tests/test_process_pool.py): module-level, so a spawned
process imports this module and finds them by name. Nothing here imports pytest."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from telha import PermanentError, ProcessJobContext, task


def spin_until_released(job: ProcessJobContext) -> dict[str, int]:
    """CPU-bound until the file the payload names exists: each ``sum`` is one C call that holds this
    process's GIL throughout (a thread doing this would starve the worker's event loop). Touches the
    file named ``started``, if any, first."""
    payload = job.json()
    if "started" in payload:
        Path(payload["started"]).touch()
    release = Path(payload["release"])
    rounds = 0
    while not release.exists():
        sum(range(2_000_000))
        rounds += 1
    return {"pid": os.getpid(), "attempts": job.attempts}


@dataclass
class Numbers:
    values: list[int]


@dataclass
class Total:
    total: int
    pid: int


@task("py.process.typed")
def add_up(numbers: Numbers) -> Total:
    return Total(total=sum(numbers.values), pid=os.getpid())


def refuse(job: ProcessJobContext) -> None:
    """Raises in the process: the exception comes back pickled and fails the job as it would in a thread."""
    raise PermanentError(f"refused in process {os.getpid()}")
