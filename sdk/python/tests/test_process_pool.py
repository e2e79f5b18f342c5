"""Sync handlers in a process pool (``Worker(executor="process")`` or an executor of your own): a
CPU-bound handler keeps its lease while it holds its process's GIL, typed tasks decode their payload
in the process, what a handler raises there fails the job as in a thread, a handler that cannot be
pickled is refused at start, and a cancelled job's handler runs to its end in its process with what
it returns dropped."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cpu_handlers
import pytest
from conftest import WORKER, TelhaServer, eventually, heartbeats

from telha import Client, InvalidArgument, JobFailed, JobState, ProcessJobContext, Worker


@pytest.fixture
async def worker_client(server: TelhaServer) -> AsyncIterator[Client]:
    async with Client(server.address, token=WORKER) as client:
        yield client


async def test_a_cpu_bound_handler_in_a_process_keeps_its_lease_by_heartbeats_and_its_result_arrives(
    client: Client, worker_client: Client, kind: str, tmp_path: Path
) -> None:
    """The lease lasts 3 s without a heartbeat; the handler holds its process's GIL past that."""
    worker = Worker(worker_client, concurrency=1, executor="process")
    worker.handler(kind)(cpu_handlers.spin_until_released)
    release = tmp_path / "release"
    async with worker:
        job = (await client.enqueue(kind, {"release": str(release)}, scope="acme")).job

        async def extended_past_its_first_lease() -> bool:
            return await heartbeats(client, job.job_id) >= 4

        await eventually(extended_past_its_first_lease, "four heartbeats")
        release.touch()
        result = (await client.result(job.job_id)).json()
    assert result["pid"] != os.getpid() and result["attempts"] == 0
    events = (await client.show(job.job_id)).events
    assert [e.transition for e in events if e.transition in ("leased", "reaped")] == ["leased"]


async def test_a_typed_task_decodes_its_payload_in_the_process(client: Client, worker_client: Client) -> None:
    async with Worker(worker_client, [cpu_handlers.add_up], executor="process"):
        enqueued = await client.enqueue(cpu_handlers.add_up, {"values": [1, 2, 3]}, scope="acme")
        total = await cpu_handlers.add_up.result(client, enqueued.job.job_id)
    assert total.total == 6 and total.pid != os.getpid()


async def test_a_permanent_error_raised_in_the_process_dead_letters_the_job(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client, executor="process")
    worker.handler(kind)(cpu_handlers.refuse)
    async with worker:
        job = (await client.enqueue(kind, scope="acme", max_attempts=5)).job
        with pytest.raises(JobFailed) as raised:
            await client.result(job.job_id)
    assert raised.value.job.state is JobState.DEAD and raised.value.job.attempts == 1
    assert "refused in process" in str(raised.value) and f"process {os.getpid()}" not in str(raised.value)


async def test_a_handler_that_cannot_be_pickled_is_refused_at_start(worker_client: Client, kind: str) -> None:
    worker = Worker(worker_client, executor="process")

    @worker.handler(kind)
    def nested(job: ProcessJobContext) -> None:  # a local function: no name a process could import
        pass

    with pytest.raises(InvalidArgument) as raised:
        await worker.start()
    assert raised.value.field == "handler" and repr(kind) in str(raised.value) and "picklable" in str(raised.value)


async def test_a_cancelled_jobs_handler_runs_to_its_end_in_its_process_and_its_result_is_dropped(
    client: Client, worker_client: Client, kind: str, tmp_path: Path
) -> None:
    # A pool of the test's own, so it can wait for the process to finish after the worker has closed.
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    worker = Worker(worker_client, concurrency=1, executor=pool)
    worker.handler(kind)(cpu_handlers.spin_until_released)
    started, release = tmp_path / "started", tmp_path / "release"
    try:
        async with worker:
            job = (await client.enqueue(kind, {"release": str(release), "started": str(started)}, scope="acme")).job

            async def running_in_its_process() -> bool:
                return started.exists()

            await eventually(running_in_its_process, "the handler to start in its process")
            await client.cancel(job.job_id)
            release.touch()
    finally:
        # The worker leaves a pool of the caller's open; this waits for the handler to return.
        pool.shutdown(wait=True)
    shown = await client.show(job.job_id)
    assert (shown.state, shown.result) == (JobState.CANCELLED, None)
