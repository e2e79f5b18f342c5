"""Two ``telha serve`` processes on one PostgreSQL schema: a producer on one, a worker on the other.
Each job is worked once and its result awaited through the server that did not work it, and the
fence holds across servers (a late completion sent to one server after the other's worker took the
job raises LeaseConflict and changes nothing)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from conftest import OPERATOR, WORKER, TelhaServer, signalled

from telha import Client, JobContext, JobState, LeaseConflict, NewJob, Worker
from telha._gen.telha.v1 import queue_pb2 as pb

Servers = tuple[TelhaServer, TelhaServer]


async def test_jobs_enqueued_on_one_server_are_worked_once_on_the_other_and_awaited_on_the_first(
    postgres_servers: Servers,
) -> None:
    one, other = postgres_servers
    calls: Counter[str] = Counter()
    async with Client(one.address, token=OPERATOR) as producer, Client(other.address, token=WORKER) as worked_on:
        worker = Worker(worked_on, concurrency=4)

        @worker.handler("pg.square")
        async def square(job: JobContext) -> dict[str, int]:
            calls[job.id] += 1
            return {"square": job.json()["n"] ** 2}

        async with worker:
            enqueued = await producer.enqueue_batch([NewJob("pg.square", {"n": n}) for n in range(20)], scope="acme")
            results = [(await producer.result(r.job.job_id)).json() for r in enqueued]
        shown = [await producer.show(r.job.job_id) for r in enqueued]
    assert results == [{"square": n * n} for n in range(20)]
    assert calls == Counter({r.job.job_id: 1 for r in enqueued})
    # Leased once, by the worker on the other server, and completed by it: no second lease anywhere.
    trails = {(j.state, *[(e.transition, e.detail) for e in j.events if e.transition in ("leased", "completed")]) for j in shown}
    assert trails == {
        (
            JobState.COMPLETED,
            ("leased", f"worker={worker.worker_id} generation=1"),
            ("completed", f"worker={worker.worker_id} generation=1"),
        )
    }


async def test_a_late_completion_on_one_server_after_the_other_servers_worker_took_the_job_raises_lease_conflict(
    postgres_servers: Servers,
) -> None:
    one, other = postgres_servers
    async with Client(one.address, token=OPERATOR) as operator, Client(one.address, token=WORKER) as quiet, Client(
        other.address, token=WORKER
    ) as worked_on:
        events = operator.watch(kind_prefix="pg.fenced")
        await events.open()
        job = (await operator.enqueue("pg.fenced", scope="acme")).job
        # A worker on the first server leases the job and goes quiet: its lease expires and a reaper
        # (either server's) takes the job back.
        (stale,) = (
            await quiet._call(
                quiet.stub.Lease, pb.LeaseRequest(worker_id="quiet", kinds=["pg.fenced"], limit=1, wait_ms=10_000)
            )
        ).jobs
        async for event in events:
            if event.transition == "reaped":
                break
        await events.aclose()

        worker = Worker(worked_on)
        running, finish = asyncio.Event(), asyncio.Event()

        @worker.handler("pg.fenced")
        async def held(ctx: JobContext) -> str:
            running.set()
            await finish.wait()
            return "from the other server"

        async with worker:
            await signalled(running, "the other server's worker to take the job")
            late = pb.CompleteRequest(
                fence=pb.Fence(job_id=job.job_id, worker_id="quiet", lease_generation=stale.lease_generation),
                result=b'"late"',
            )
            with pytest.raises(LeaseConflict) as raised:
                await quiet._call(quiet.stub.Complete, late)
            assert (raised.value.reason, raised.value.job_id) == ("worker_mismatch", job.job_id)
            shown = await operator.show(job.job_id)
            assert (shown.state, shown.worker_id, shown.result) == (JobState.LEASED, worker.worker_id, None)
            finish.set()
            assert (await operator.result(job.job_id)).json() == "from the other server"
        assert (await operator.show(job.job_id)).state is JobState.COMPLETED
