"""A server restarted under the SDK: safe calls retried with backoff until it answers, result waiters
and workers carried across, nothing lost and nothing run twice. Each test has a server of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from conftest import OPERATOR, WORKER, TelhaServer, signalled

from telha import Client, JobContext, JobFailed, JobState, Unavailable, Worker
from telha._gen.telha.v1 import queue_pb2 as pb


@pytest.fixture
def slow_leases_server(tmp_path: Path) -> Iterator[TelhaServer]:
    """A server whose leases outlast a restart, so what a restart does is not confused with an expiry."""
    running = TelhaServer(tmp_path, lease_ttl_secs=60)
    running.start()
    yield running
    running.stop()


async def test_a_read_is_retried_with_backoff_until_a_restarted_server_answers_but_a_plain_enqueue_is_not(
    own_server: TelhaServer, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Client(own_server.address, token=OPERATOR) as operator:
        job = (await operator.enqueue(kind, {"n": 1}, scope="acme")).job
        refused = 0
        refused_often = asyncio.Event()
        show = operator.stub.Show

        async def counting_show(request: pb.ShowRequest, **kwargs: Any) -> pb.ShowResponse:
            nonlocal refused
            try:
                return await show(request, **kwargs)
            except grpc.aio.AioRpcError as raw:
                if raw.code() is grpc.StatusCode.UNAVAILABLE:
                    refused += 1
                    if refused > 5:
                        refused_often.set()
                raise

        monkeypatch.setattr(operator.stub, "Show", counting_show)
        own_server.stop()
        # An enqueue may have been written before the connection dropped: sent again, it could enqueue twice.
        with pytest.raises(Unavailable):
            await operator.enqueue(kind, scope="acme")
        reading = asyncio.ensure_future(operator.show(job.job_id))
        # Refused more than a few times and still waiting: it outlasts a restart, not a fixed count.
        often = asyncio.ensure_future(refused_often.wait())
        await asyncio.wait({reading, often}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
        assert often.done() and not reading.done(), "the read gave up while the server was away"
        own_server.start()
        shown = await reading
    assert shown.job_id == job.job_id and shown.payload_json() == {"n": 1}


async def test_a_result_waiter_is_carried_across_a_server_restart(
    own_server: TelhaServer, kind: str
) -> None:
    async with Client(own_server.address, token=OPERATOR) as operator:
        waited, done = [(await operator.enqueue(kind, i, scope="acme")).job for i in range(2)]
        waiting = asyncio.ensure_future(operator.result(waited.job_id))
        await operator.cancel(done.job_id)
        # Answered only once the waiters' shared stream is open: the first waiter's is too.
        with pytest.raises(JobFailed):
            await operator.result(done.job_id)
        own_server.restart()
        async with Client(own_server.address, token=WORKER) as worker_client:
            worker = Worker(worker_client)

            @worker.handler(kind)
            async def echo(job: JobContext) -> Any:
                return {"echo": job.json()}

            async with worker:
                assert (await asyncio.wait_for(waiting, 60)).json() == {"echo": 0}


async def test_a_worker_reconnects_after_a_restart_and_delivers_a_result_finished_while_the_server_was_away(
    slow_leases_server: TelhaServer, kind: str
) -> None:
    server = slow_leases_server
    runs: list[str] = []
    started, finish, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()
    async with Client(server.address, token=OPERATOR) as operator, Client(
        server.address, token=WORKER
    ) as worker_client:
        worker = Worker(worker_client, concurrency=2)

        @worker.handler(kind)
        async def held(job: JobContext) -> Any:
            runs.append(job.id)
            if job.json() == {"step": "held"}:
                started.set()
                await finish.wait()
                finished.set()
            return {"ran": job.json()}

        async with worker:
            first = (await operator.enqueue(kind, {"step": "held"}, scope="acme")).job
            await signalled(started, "the first job to start")
            server.stop()
            finish.set()
            await signalled(finished, "the handler to finish while the server is away")
            server.start()
            # The result finished meanwhile reaches the server once it is back, on the first lease.
            assert (await operator.result(first.job_id, timeout=60)).json() == {"ran": {"step": "held"}}
            # And the worker took up its stream again: a job enqueued now is worked.
            second = (await operator.enqueue(kind, {"step": "after"}, scope="acme")).job
            assert (await operator.result(second.job_id, timeout=60)).json() == {"ran": {"step": "after"}}
        shown = await operator.show(first.job_id)
    assert runs == [first.job_id, second.job_id]
    # Leased once and completed on that lease: neither reaped nor handed back and leased again.
    assert shown.state is JobState.COMPLETED
    assert [e.transition for e in shown.events if e.transition not in ("enqueued", "extended")] == ["leased", "completed"]
