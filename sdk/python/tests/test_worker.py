"""The Worker against a real telha serve: results, failures, heartbeats, progress, cancellation,
timeouts, fencing and the graceful close."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from collections.abc import AsyncIterator

import pytest
from conftest import OPERATOR, TENANT, WORKER, TelhaServer, eventually, heartbeats, signalled

from telha import (
    CANCELLED,
    LEASE_LOST,
    TIMEOUT,
    Client,
    InvalidArgument,
    JobContext,
    JobFailed,
    JobState,
    LeaseConflict,
    NewJob,
    NotFound,
    PermanentError,
    PermissionDenied,
    SyncJobContext,
    Worker,
)
from telha._gen.telha.v1 import queue_pb2 as pb


@pytest.fixture
async def worker_client(server: TelhaServer) -> AsyncIterator[Client]:
    async with Client(server.address, token=WORKER) as client:
        yield client


async def test_works_a_job_and_its_result_is_awaited(client: Client, worker_client: Client, kind: str) -> None:
    worker = Worker(worker_client)

    @worker.handler(kind)
    async def add(job: JobContext) -> dict[str, int]:
        numbers = job.json()
        return {"sum": numbers["a"] + numbers["b"]}

    async with worker:
        job = (await client.enqueue(kind, {"a": 1, "b": 2}, scope="acme")).job
        assert (await client.result(job.job_id)).json() == {"sum": 3}


async def test_a_completed_job_enqueues_its_chained_successors(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client)

    @worker.handler(kind)
    async def first(job: JobContext) -> None:
        job.chain(NewJob("next." + kind, {"from": job.id}))

    async with worker:
        job = (await client.enqueue(kind, scope="acme")).job
        await client.result(job.job_id)
    (successor,) = (await client.list(scope="acme", kind_prefix="next." + kind)).jobs
    assert successor.payload_json() == {"from": job.job_id}


async def test_a_failing_handler_is_retried_and_a_permanent_error_dead_letters_at_once(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client)
    attempts: list[int] = []

    @worker.handler(kind)
    async def flaky(job: JobContext) -> str:
        attempts.append(job.attempts)
        if job.json() == {"mode": "permanent"}:
            raise PermanentError("cannot ever work")
        if len(attempts) == 1:
            raise RuntimeError("first try fails")
        return "ok"

    async with worker:
        retried = (await client.enqueue(kind, {"mode": "retried"}, scope="acme")).job
        assert (await client.result(retried.job_id)).json() == "ok"
        dead = (await client.enqueue(kind, {"mode": "permanent"}, scope="acme", max_attempts=5)).job
        with pytest.raises(JobFailed) as raised:
            await client.result(dead.job_id)
    assert raised.value.job.state is JobState.DEAD and "cannot ever work" in str(raised.value)
    assert raised.value.job.attempts == 1


async def test_a_dead_head_blocks_its_ordered_key_until_an_operator_releases_it(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client)

    @worker.handler(kind)
    async def handle(job: JobContext) -> str:
        if job.json() == {"step": 1}:
            raise PermanentError("bad ledger line")
        return "ok"

    async with worker:
        head = (await client.enqueue(kind, {"step": 1}, scope="acme", order_key=kind)).job
        behind = (await client.enqueue(kind, {"step": 2}, scope="acme", order_key=kind)).job
        with pytest.raises(JobFailed):
            await client.result(head.job_id)
        blocked = [key for key in await client.blocked_keys(scope="acme") if key.order_key == kind]
        assert len(blocked) == 1 and blocked[0].tenant == "acme" and blocked[0].waiting == 1
        assert blocked[0].head is not None and blocked[0].head.job_id == head.job_id
        assert (await client.show(behind.job_id)).order_waiting, "the next job waits behind the dead head"
        released = await client.release_key(kind, scope="acme")
        assert released is not None and released.job_id == behind.job_id
        assert (await client.result(behind.job_id)).json() == "ok"
    assert [key for key in await client.blocked_keys(scope="acme") if key.order_key == kind] == []
    # Every job of the key is done: nothing is left to release.
    with pytest.raises(NotFound):
        await client.release_key(kind, scope="acme")


async def test_runs_at_most_its_concurrency_of_handlers_at_once(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client, concurrency=2, prefetch=2)
    active, most = 0, 0
    two_running, gate = asyncio.Event(), asyncio.Event()

    @worker.handler(kind)
    async def held(job: JobContext) -> None:
        nonlocal active, most
        active += 1
        most = max(most, active)
        if active == 2:
            two_running.set()
        await gate.wait()
        active -= 1

    async with worker:
        jobs = [r.job for r in await client.enqueue_batch([NewJob(kind, i) for i in range(5)], scope="acme")]
        await signalled(two_running, "two handlers running")
        gate.set()
        for job in jobs:
            await client.result(job.job_id)
    assert most == 2


async def test_a_kinds_own_concurrency_bounds_it_while_other_kinds_use_the_rest(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client, concurrency=4, prefetch=4)
    narrow, wide = kind + ".narrow", kind + ".wide"
    active = {narrow: 0, wide: 0}
    most = {narrow: 0, wide: 0}
    wide_all_running, gate = asyncio.Event(), asyncio.Event()

    async def held(job: JobContext) -> None:
        active[job.kind] += 1
        most[job.kind] = max(most[job.kind], active[job.kind])
        if active[wide] == 3:
            wide_all_running.set()
        await gate.wait()
        active[job.kind] -= 1

    worker.handler(narrow, concurrency=1)(held)
    worker.handler(wide)(held)
    async with worker:
        jobs = [r.job for r in await client.enqueue_batch([NewJob(narrow, i) for i in range(3)], scope="acme")]
        jobs += [r.job for r in await client.enqueue_batch([NewJob(wide, i) for i in range(3)], scope="acme")]
        # One narrow job holds its kind's only slot; the three wide ones fill the rest of the four.
        await signalled(wide_all_running, "the wide jobs to run beside one narrow job")
        assert active == {narrow: 1, wide: 3}
        gate.set()
        for job in jobs:
            await client.result(job.job_id)
    assert most == {narrow: 1, wide: 3}


async def test_jobs_waiting_for_their_kinds_slot_do_not_hold_the_slots_other_kinds_need(
    client: Client, worker_client: Client, kind: str
) -> None:
    # Three narrow jobs ahead of one wide, two slots, no prefetch, narrow ones one at a time: the
    # narrow jobs waiting for their kind's slot must not hold the worker's credit, or the wide job
    # is never leased and the first narrow one (which waits for it) never ends.
    worker = Worker(worker_client, concurrency=2, prefetch=0)
    narrow, wide = kind + ".narrow", kind + ".wide"
    narrow_running = 0
    most_narrow = 0
    wide_beside = asyncio.Event()

    @worker.handler(narrow, concurrency=1)
    async def slow(job: JobContext) -> None:
        nonlocal narrow_running, most_narrow
        narrow_running += 1
        most_narrow = max(most_narrow, narrow_running)
        await wide_beside.wait()
        narrow_running -= 1

    @worker.handler(wide)
    async def quick(job: JobContext) -> None:
        if narrow_running > 0:
            wide_beside.set()

    jobs = [r.job for r in await client.enqueue_batch([NewJob(narrow, i) for i in range(3)], scope="acme")]
    jobs.append((await client.enqueue(wide, {}, scope="acme")).job)
    async with worker:
        await signalled(wide_beside, "the wide job to run beside a narrow one")
        for job in jobs:
            await client.result(job.job_id)
    assert most_narrow == 1


async def test_a_tenant_token_may_not_work_and_sees_no_other_tenants_results(
    server: TelhaServer, client: Client, kind: str
) -> None:
    theirs = (await client.enqueue(kind, {"who": "other"}, scope="other")).job
    async with Client(server.address, token=TENANT) as acme:
        worker = Worker(acme)

        @worker.handler(kind)
        async def never(job: JobContext) -> None:
            raise AssertionError("a tenant's worker ran a job")

        with pytest.raises(PermissionDenied):
            await worker.start()
        await worker.close()
        with pytest.raises(NotFound):
            await acme.result(theirs.job_id)
    shown = await client.show(theirs.job_id)
    assert (shown.state, shown.attempts) == (JobState.PENDING, 0)


async def test_the_token_is_in_no_log_record_and_no_repr(
    client: Client, worker_client: Client, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="telha")
    worker = Worker(worker_client)

    @worker.handler(kind)
    async def failing(job: JobContext) -> None:
        raise PermanentError("fails on purpose")

    async with worker:
        job = (await client.enqueue(kind, scope="acme")).job
        with pytest.raises(JobFailed):
            await client.result(job.job_id)
    assert any("fails on purpose" in record.getMessage() for record in caplog.records)
    for shown in (caplog.text, repr(worker_client), repr(client), repr(worker)):
        assert WORKER not in shown and OPERATOR not in shown


async def test_a_sync_handler_runs_in_a_thread_while_heartbeats_keep_its_lease(
    client: Client, worker_client: Client, kind: str
) -> None:
    """The lease lasts 3 s without a heartbeat; the handler holds its thread past that."""
    worker = Worker(worker_client)
    release = threading.Event()
    threads: list[str] = []

    @worker.handler(kind)
    def cpu_bound(job: SyncJobContext) -> str:
        threads.append(threading.current_thread().name)
        release.wait(60)
        return "done"

    async with worker:
        job = (await client.enqueue(kind, scope="acme")).job

        async def extended_past_its_first_lease() -> bool:
            return await heartbeats(client, job.job_id) >= 3

        await eventually(extended_past_its_first_lease, "three heartbeats")
        release.set()
        assert (await client.result(job.job_id)).json() == "done"
    assert threads and threads[0].startswith("telha-handler")


async def test_progress_and_checkpoint_are_stored_with_the_job(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client)
    stored, finish = asyncio.Event(), asyncio.Event()

    @worker.handler(kind)
    async def reports(job: JobContext) -> None:
        await job.progress({"done": 40, "of": 100})
        await job.checkpoint(b"page=4")
        stored.set()
        await finish.wait()

    async with worker:
        job = (await client.enqueue(kind, scope="acme")).job
        await signalled(stored, "progress and checkpoint stored")
        shown = await client.show(job.job_id)
        finish.set()
        await client.result(job.job_id)
    assert shown.progress == '{"done":40,"of":100}' and shown.continuation == b"page=4"


async def test_cancelling_a_job_cancels_its_running_handler(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client)
    started, stopped = asyncio.Event(), asyncio.Event()
    reasons: list[object] = []

    @worker.handler(kind)
    async def forever(job: JobContext) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            reasons.append(job.cancel_reason)
            stopped.set()
            raise

    async with worker:
        job = (await client.enqueue(kind, scope="acme")).job
        await signalled(started, "the handler to start")
        await client.cancel(job.job_id, reason="stop it")
        await signalled(stopped, "the handler to be cancelled")
    assert reasons == [CANCELLED]
    assert (await client.show(job.job_id)).state is JobState.CANCELLED


async def test_a_sync_handler_sees_its_job_cancelled_through_ctx_cancelled(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client)
    started, seen = threading.Event(), threading.Event()

    @worker.handler(kind)
    def polite(job: SyncJobContext) -> None:
        started.set()
        if job.cancelled.wait(60):
            seen.set()

    async with worker:
        job = (await client.enqueue(kind, scope="acme")).job
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 60)
        await client.cancel(job.job_id)
        assert await asyncio.get_running_loop().run_in_executor(None, seen.wait, 60)


async def test_a_handler_past_its_jobs_timeout_is_cancelled_and_the_job_reaped(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client)
    stopped = asyncio.Event()
    reasons: list[object] = []

    @worker.handler(kind)
    async def slow(job: JobContext) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            reasons.append(job.cancel_reason)
            stopped.set()

    async with worker:
        job = (await client.enqueue(kind, scope="acme", timeout=1, max_attempts=1)).job
        await signalled(stopped, "the handler to time out")
        with pytest.raises(JobFailed):
            await client.result(job.job_id)
    assert reasons == [TIMEOUT]
    assert any(e.transition == "reaped" and (e.detail or "").endswith(" timeout") for e in (await client.show(job.job_id)).events)


async def test_a_handler_whose_lease_was_lost_is_cancelled_while_the_jobs_next_attempt_runs_on(
    client: Client, worker_client: Client, kind: str
) -> None:
    """A worker whose clock runs an hour behind sends its first heartbeat far too late: the lease
    lapses, the reaper takes the job back and the server pushes it to the same worker again. The first
    attempt learns it lost its lease at its next call and is cancelled; the second is not touched."""
    worker = Worker(worker_client, concurrency=2, clock=lambda: time.time() - 3600)
    leased_again, first_cancelled = asyncio.Event(), asyncio.Event()
    outcomes: list[object] = []

    @worker.handler(kind)
    async def attempt(job: JobContext) -> str:
        if job.job.lease_generation > 1:
            await first_cancelled.wait()
            return "second attempt"
        await leased_again.wait()
        with pytest.raises(LeaseConflict) as raised:
            await job.progress("too late")
        outcomes.append(raised.value.reason)
        try:
            await asyncio.Event().wait()
        finally:
            outcomes.append(job.cancel_reason)
            first_cancelled.set()
        return "first attempt"

    events = client.watch(kind_prefix=kind)
    await events.open()
    await worker.start()
    try:
        job = (await client.enqueue(kind, scope="acme")).job
        transitions = []
        async for event in events:
            transitions.append(event.transition)
            if transitions.count("leased") == 2:
                break
        await events.aclose()
        leased_again.set()
        await signalled(first_cancelled, "the first attempt to be cancelled for its lost lease")
        assert (await client.result(job.job_id, timeout=60)).json() == "second attempt"
    finally:
        # Bounded: a handler the worker lost track of would keep close() waiting.
        await asyncio.wait_for(worker.close(), 60)
    assert transitions[:4] == ["enqueued", "leased", "reaped", "leased"]
    assert outcomes == ["generation_superseded", LEASE_LOST]


async def test_a_late_completion_after_a_reap_raises_lease_conflict_and_changes_nothing(
    client: Client, worker_client: Client, kind: str
) -> None:
    async def lease(worker_id: str) -> pb.Job:
        answer = await worker_client._call(
            worker_client.stub.Lease, pb.LeaseRequest(worker_id=worker_id, kinds=[kind], limit=1, wait_ms=10_000)
        )
        (leased,) = answer.jobs
        return leased

    def fence(job: pb.Job, worker_id: str) -> pb.Fence:
        return pb.Fence(job_id=job.job_id, worker_id=worker_id, lease_generation=job.lease_generation)

    events = client.watch(kind_prefix=kind)
    await events.open()
    job = (await client.enqueue(kind, scope="acme")).job
    stale = await lease("worker-a")
    # worker-a goes quiet: its lease expires and the reaper takes the job back.
    async for event in events:
        if event.transition == "reaped":
            break
    await events.aclose()
    current = await lease("worker-b")
    with pytest.raises(LeaseConflict) as raised:
        await worker_client._call(
            worker_client.stub.Complete, pb.CompleteRequest(fence=fence(stale, "worker-a"), result=b'"late"')
        )
    assert raised.value.reason == "worker_mismatch" and raised.value.job_id == job.job_id
    shown = await client.show(job.job_id)
    assert (shown.state, shown.worker_id, shown.result) == (JobState.LEASED, "worker-b", None)
    await worker_client._call(worker_client.stub.Complete, pb.CompleteRequest(fence=fence(current, "worker-b")))
    assert (await client.show(job.job_id)).state is JobState.COMPLETED


async def test_a_worker_closed_right_after_start_leaves_nothing_leased_and_charges_no_attempt(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client, concurrency=1, prefetch=3, shutdown_timeout=0)
    started = asyncio.Event()

    @worker.handler(kind)
    async def held(job: JobContext) -> None:
        started.set()
        await asyncio.Event().wait()

    jobs = [r.job for r in await client.enqueue_batch([NewJob(kind, i) for i in range(4)], scope="acme")]
    await worker.start()
    await signalled(started, "one handler to start")
    await worker.close()
    after = [await client.show(j.job_id) for j in jobs]
    assert [(j.state, j.attempts) for j in after] == [(JobState.PENDING, 0)] * 4
    assert sum(any(e.transition == "released" for e in j.events) for j in after) >= 1


async def test_close_waits_for_a_running_handler_within_its_timeout_and_submits_its_result(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client, concurrency=1)
    started, finish = asyncio.Event(), asyncio.Event()

    @worker.handler(kind)
    async def finishing(job: JobContext) -> str:
        started.set()
        await finish.wait()
        return "finished while closing"

    await worker.start()
    job = (await client.enqueue(kind, scope="acme")).job
    await signalled(started, "the handler to start")
    closing = asyncio.ensure_future(worker.close(timeout=60))
    await asyncio.sleep(0)  # one turn of the loop: close() runs up to its wait for the handler
    assert worker._closing is not None and worker._closing.is_set() and not closing.done()
    finish.set()
    await closing
    shown = await client.show(job.job_id)
    assert (shown.state, shown.result) == (JobState.COMPLETED, b'"finished while closing"')


async def test_sigterm_closes_a_worker_process_gracefully_handing_its_jobs_back(
    server: TelhaServer, client: Client, kind: str
) -> None:
    jobs = [r.job for r in await client.enqueue_batch([NewJob(kind, i) for i in range(3)], scope="acme")]
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).parent / "sigterm_worker.py"), server.address, WORKER, kind,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    assert (await asyncio.wait_for(child.stdout.readline(), 60)).startswith(b"started ")
    child.send_signal(signal.SIGTERM)
    rest, _ = await asyncio.wait_for(child.communicate(), 60)
    assert (child.returncode, rest) == (0, b"closed\n")
    after = [await client.show(j.job_id) for j in jobs]
    assert [(j.state, j.attempts) for j in after] == [(JobState.PENDING, 0)] * 3


async def leased(client: Client, kind: str) -> int:
    return len((await client.list(scope="acme", state=JobState.LEASED, kind_prefix=kind)).jobs)


class _Gated:
    """Handlers that return at once while ``fast``, else wait for ``gate``; ``running`` is set once
    ``concurrency`` of them wait."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.fast = True
        self.active = 0
        self.running, self.gate = asyncio.Event(), asyncio.Event()

    async def run(self, job: JobContext) -> None:
        if self.fast:
            return
        self.active += 1
        if self.active == self.concurrency:
            self.running.set()
        try:
            await self.gate.wait()
            await asyncio.sleep(0.1)  # the work: slow, so the running average stays above 25 ms x concurrency
        finally:
            self.active -= 1

    def reset(self) -> None:
        self.running, self.gate = asyncio.Event(), asyncio.Event()


async def test_auto_prefetch_leases_ahead_once_handlers_are_short_and_close_hands_those_jobs_back(
    client: Client, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client, concurrency=2, shutdown_timeout=0)
    assert worker.prefetch == "auto"
    handler = _Gated(2)
    worker.handler(kind)(handler.run)
    async with worker:
        # Short handlers: the running average says ~0 ms, so it holds up to max(2, 100) jobs ahead.
        for result in await client.enqueue_batch([NewJob(kind, i) for i in range(20)], scope="acme"):
            await client.result(result.job.job_id)
        handler.fast = False
        held = [r.job for r in await client.enqueue_batch([NewJob(kind, i) for i in range(12)], scope="acme")]
        await signalled(handler.running, "two handlers to wait")

        async def all_leased() -> bool:
            return await leased(client, kind) == 12

        # Two run; the ten others wait in the worker for a slot, leased to it.
        await eventually(all_leased, "every job to be leased to the worker, ten of them prefetched")
    after = [await client.show(j.job_id) for j in held]
    # Handed back, the two running and the ten prefetched, with no attempt charged.
    assert [(j.state, j.attempts) for j in after] == [(JobState.PENDING, 0)] * 12
    assert all(any(e.transition == "released" for e in j.events) for j in after)


@pytest.mark.parametrize("prefetch", ["auto", 3])
async def test_auto_prefetch_leases_none_ahead_before_a_handler_returns_or_while_handlers_are_slow(
    client: Client, worker_client: Client, kind: str, prefetch: object
) -> None:
    worker = Worker(worker_client, concurrency=2, prefetch=prefetch, shutdown_timeout=0)  # type: ignore[arg-type]
    handler = _Gated(2)
    handler.fast = False
    worker.handler(kind)(handler.run)
    ahead = 0 if prefetch == "auto" else 3
    async with worker:
        for round in range(2):
            # Round 0: no handler has returned yet; round 1: they took over 100 ms each, so 25 ms ×
            # concurrency of work ahead is less than one job.
            jobs = [r.job for r in await client.enqueue_batch([NewJob(kind, i) for i in range(6)], scope="acme")]
            await signalled(handler.running, "two handlers to wait")

            async def as_many_leased() -> bool:
                return await leased(client, kind) >= 2 + ahead

            await eventually(as_many_leased, "the running jobs and those prefetched to be leased")
            # The credit went out before these jobs were enqueued (with the last slot freed), so the
            # server pushed at once all it was going to; with a fixed prefetch the three more show.
            assert await leased(client, kind) == 2 + ahead
            handler.gate.set()
            for job in jobs:
                await client.result(job.job_id)
            handler.reset()


def test_prefetch_is_a_non_negative_integer_or_auto(worker_client: Client) -> None:
    for bad in (-1, "many", 1.5, True):
        with pytest.raises(InvalidArgument) as raised:
            Worker(worker_client, prefetch=bad)  # type: ignore[arg-type]
        assert raised.value.field == "prefetch"
    assert Worker(worker_client, prefetch=0).prefetch == 0
    assert Worker(worker_client, prefetch=None).prefetch == "auto"
