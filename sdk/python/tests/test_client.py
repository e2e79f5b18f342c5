"""The async Client against a real telha serve: enqueue, read, manage, results and watches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from conftest import OPERATOR, OTHER_TENANT, TENANT, WORKER, TelhaServer, signalled

from telha.sync import SyncClient
from telha import (
    Client,
    JobContext,
    InvalidArgument,
    JobFailed,
    JobState,
    NewJob,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    Worker,
)
from telha._gen.telha.v1 import queue_pb2 as pb

#: A well-formed job id that no job has.
UNKNOWN_ID = "00000000-0000-7000-8000-000000000000"


async def test_enqueues_a_job_with_its_options_and_shows_it(client: Client, kind: str) -> None:
    enqueued = await client.enqueue(
        kind, {"to": "a@example.com"}, scope="acme", priority=7, delay=3600, max_attempts=2, timeout=60
    )
    job = await client.show(enqueued.job.job_id)
    assert enqueued.created and job.state is JobState.PENDING and job.tenant == "acme"
    assert (job.priority, job.max_attempts, job.timeout_secs) == (7, 2, 60)
    assert job.payload_json() == {"to": "a@example.com"} and job.not_before_us is not None


async def test_carries_a_trace_context_a_propagator_filled_to_the_job(client: Client, kind: str) -> None:
    # What an OpenTelemetry propagator's inject(carrier) writes; a worker's extract(job.trace_context) reads it.
    carrier = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "congo=t61"}
    enqueued = await client.enqueue(NewJob(kind, "x", trace_context=carrier), scope="acme")
    assert (await client.show(enqueued.job.job_id)).trace_context == carrier
    plain = await client.enqueue(kind, "y", scope="acme")
    assert (await client.show(plain.job.job_id)).trace_context is None


async def test_jobs_of_an_order_key_wait_their_turn_and_a_bad_policy_is_refused(client: Client, kind: str) -> None:
    head = await client.enqueue(kind, b"1", scope="acme", order_key="account-7")
    second = await client.enqueue(kind, b"2", scope="acme", order_key="account-7", order_on_dead="release")
    assert head.job.order_key == "account-7" and not head.job.order_waiting
    assert second.job.order_waiting, "the second job waits for the head"
    with pytest.raises(InvalidArgument) as refused:
        await client.enqueue(kind, b"3", scope="acme", order_key="account-7", order_on_dead="later")
    assert refused.value.field == "job.order_on_dead"
    await client.cancel(head.job.job_id)
    assert not (await client.show(second.job.job_id)).order_waiting, "its turn came when the head finished"
    await client.cancel(second.job.job_id)


async def test_an_idempotency_key_used_again_returns_the_first_job(client: Client, kind: str) -> None:
    first = await client.enqueue(kind, b"one", scope="acme", idempotency_key="k1")
    again = await client.enqueue(kind, b"two", scope="acme", idempotency_key="k1")
    assert (again.created, again.job.job_id, again.job.payload) == (False, first.job.job_id, b"one")


async def test_a_batch_with_one_bad_job_enqueues_none(client: Client, kind: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        await client.enqueue_batch([NewJob(kind, 1), NewJob("has space", 2)], scope="acme")
    assert raised.value.field is not None and "kind" in raised.value.field
    assert (await client.list(scope="acme", kind_prefix=kind)).jobs == []


async def test_enqueue_each_stores_the_good_jobs_and_answers_the_bad_one_with_its_error(
    client: Client, kind: str
) -> None:
    good, bad = await client.enqueue_each([NewJob(kind, 1), NewJob("has space", 2)], scope="acme")
    assert not isinstance(good, Exception) and good.created
    assert isinstance(bad, InvalidArgument)
    assert [j.job_id for j in (await client.list(scope="acme", kind_prefix=kind)).jobs] == [good.job.job_id]


async def test_lists_page_by_page_and_counts_per_state(client: Client, kind: str) -> None:
    await client.enqueue_batch([NewJob(kind, i) for i in range(5)], scope="acme")
    first = await client.list(scope="acme", kind_prefix=kind, limit=2)
    assert len(first.jobs) == 2 and first.next_page_token is not None
    every = [job async for job in client.jobs(scope="acme", kind_prefix=kind, page_size=2)]
    assert len(every) == 5 and len({j.job_id for j in every}) == 5
    rows = [r for r in await client.counts("acme") if r.kind == kind]
    assert [(r.state, r.count) for r in rows] == [(JobState.PENDING, 5)]


async def test_cancels_a_job_and_retries_it_back_to_pending(client: Client, kind: str) -> None:
    job = (await client.enqueue(kind, scope="acme")).job
    cancelled = await client.cancel(job.job_id, reason="not needed")
    assert cancelled.state is JobState.CANCELLED
    assert (await client.retry(job.job_id)).state is JobState.PENDING


async def test_retries_many_and_by_filter_each_on_its_own(client: Client, kind: str) -> None:
    jobs = [r.job for r in await client.enqueue_batch([NewJob(kind, i) for i in range(3)], scope="acme")]
    assert await client.cancel_matching(scope="acme", kind_prefix=kind) == 3
    retried = await client.retry_many([jobs[0].job_id, UNKNOWN_ID])
    assert retried[0].state is JobState.PENDING and isinstance(retried[1], NotFound)  # type: ignore[union-attr]
    again = await client.retry_matching(scope="acme", kind_prefix=kind, state=JobState.CANCELLED)
    assert sorted(j.job_id for j in again) == sorted(j.job_id for j in jobs[1:])  # type: ignore[union-attr]


async def test_showing_an_unknown_job_raises_not_found(client: Client) -> None:
    with pytest.raises(NotFound):
        await client.show(UNKNOWN_ID)


async def test_a_tenant_token_is_sealed_in_its_own_scope(server: TelhaServer, client: Client, kind: str) -> None:
    theirs = (await client.enqueue(kind, scope="other")).job
    async with Client(server.address, token=TENANT) as acme:
        mine = (await acme.enqueue(kind)).job
        assert mine.tenant == "acme"
        with pytest.raises(NotFound):
            await acme.show(theirs.job_id)
        with pytest.raises(PermissionDenied):
            await acme.enqueue(kind, scope="other")
        assert [j.job_id for j in (await acme.list(kind_prefix=kind)).jobs] == [mine.job_id]
    async with Client(server.address, token=OTHER_TENANT) as other:
        with pytest.raises(NotFound):
            await other.cancel(mine.job_id)


async def test_a_call_without_a_known_token_is_unauthenticated(server: TelhaServer) -> None:
    async with Client(server.address, token="not-a-token-we-know") as stranger:
        with pytest.raises(Unauthenticated):
            await stranger.counts()


async def test_reads_address_and_token_from_the_environment(
    server: TelhaServer, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("TELHA_ADDRESS", server.address)
    monkeypatch.setenv("TELHA_TOKEN", TENANT)
    async with Client() as acme:
        assert (await acme.enqueue(kind)).job.tenant == "acme"
        assert TENANT not in repr(acme)


async def test_pauses_and_resumes_a_kind_and_sets_a_kind_limit(client: Client, kind: str) -> None:
    pause = await client.pause(kind, scope="acme")
    assert pause.kind_prefix == kind and pause.tenant == "acme"
    assert kind in [p.kind_prefix for p in await client.pauses("acme")]
    await client.resume(kind, scope="acme")
    assert kind not in [p.kind_prefix for p in await client.pauses("acme")]
    limit = await client.set_kind_limit(kind, concurrency=2, rate="10/s")
    assert (limit.concurrency, limit.rate) == (2, "10/1s")
    await client.clear_kind_limit(kind)
    assert kind not in [limit.kind_prefix for limit in await client.kind_limits()]


async def test_sets_lists_and_clears_a_tenant_limit_refusing_bad_ones(client: Client, kind: str) -> None:
    tenant = f"t-{kind[-100:]}"
    limit = await client.set_tenant_limit(tenant, concurrency=2, rate="10/s", weight=3)
    assert (limit.tenant, limit.concurrency, limit.rate, limit.weight) == (tenant, 2, "10/1s", 3)
    await client.enqueue(kind, scope=tenant)
    await client.enqueue(kind, scope=tenant)
    await client.enqueue(kind, scope=tenant)
    leased = await client.stub.Lease(
        pb.LeaseRequest(worker_id="w", kinds=[kind], limit=10), metadata=client.metadata
    )
    assert len(leased.jobs) == 2
    listed = [l for l in await client.tenant_limits() if l.tenant == tenant]
    assert [(l.leased, l.tokens) for l in listed] == [(2, 8)]
    with pytest.raises(InvalidArgument) as refused:
        await client.set_tenant_limit(tenant, weight=5000)
    assert refused.value.field == "weight"
    await client.clear_tenant_limit(tenant)
    assert tenant not in [l.tenant for l in await client.tenant_limits()]
    with pytest.raises(NotFound):
        await client.clear_tenant_limit(tenant)


async def test_creates_reads_runs_and_deletes_a_schedule(client: Client, kind: str) -> None:
    name = kind[-100:]
    created = await client.create_schedule(name, NewJob(kind, {"n": 1}), cron="0 3 * * *", scope="acme", paused=True)
    assert created.cron == "0 3 * * *" and created.paused
    updated = await client.update_schedule(name, scope="acme", every_secs=3600, paused=False)
    assert updated.every_secs == 3600 and updated.cron is None and not updated.paused
    assert name in [s.name for s in await client.schedules(scope="acme")]
    ran = await client.run_schedule(name, scope="acme")
    assert ran.created and ran.job.kind == kind and ran.job.tenant == "acme"
    assert (await client.get_schedule(name, scope="acme")).next_due_us == updated.next_due_us
    await client.delete_schedule(name, scope="acme")
    with pytest.raises(NotFound):
        await client.get_schedule(name, scope="acme")


async def _complete(server: TelhaServer, job_id: str, kind: str, result: bytes) -> None:
    """Work one job by hand, as any worker would: lease it and complete it with ``result``."""
    async with Client(server.address, token=WORKER) as worker:
        from telha._gen.telha.v1 import queue_pb2 as pb

        leased = await worker.stub.Lease(
            pb.LeaseRequest(worker_id="hand", kinds=[kind], limit=1, wait_ms=5000), metadata=worker.metadata
        )
        assert [j.job_id for j in leased.jobs] == [job_id]
        fence = pb.Fence(job_id=job_id, worker_id="hand", lease_generation=leased.jobs[0].lease_generation)
        await worker.stub.Complete(pb.CompleteRequest(fence=fence, result=result), metadata=worker.metadata)


async def test_result_awaits_the_completion_of_a_job(server: TelhaServer, client: Client, kind: str) -> None:
    job = (await client.enqueue(kind, scope="acme")).job
    waiting = asyncio.ensure_future(client.result(job.job_id))
    await _complete(server, job.job_id, kind, b'{"sum":3}')
    outcome = await waiting
    assert outcome.json() == {"sum": 3} and outcome.job.state is JobState.COMPLETED


async def test_result_of_a_finished_job_returns_at_once(server: TelhaServer, client: Client, kind: str) -> None:
    job = (await client.enqueue(kind, scope="acme")).job
    await _complete(server, job.job_id, kind, b"42")
    assert (await client.result(job.job_id)).json() == 42


async def test_result_of_a_cancelled_job_raises_job_failed(client: Client, kind: str) -> None:
    job = (await client.enqueue(kind, scope="acme")).job
    waiting = asyncio.ensure_future(client.result(job.job_id))
    await client.cancel(job.job_id, reason="changed my mind")
    with pytest.raises(JobFailed) as raised:
        await waiting
    assert raised.value.job.state is JobState.CANCELLED and "changed my mind" in str(raised.value)


class _RecordedWatch:
    """A Watch call that notes every event it delivers, and when it has opened."""

    def __init__(self, call: Any, log: list[pb.WatchEvent], positioned: asyncio.Event) -> None:
        self._call, self._log, self._positioned = call, log, positioned

    def __aiter__(self) -> AsyncIterator[pb.WatchResponse]:
        return self._responses()

    async def _responses(self) -> AsyncIterator[pb.WatchResponse]:
        async for response in self._call:
            self._log.extend(response.events)
            self._positioned.set()
            yield response

    def cancel(self) -> bool:
        return bool(self._call.cancel())


async def test_many_result_waiters_share_one_watch_stream_that_carries_only_outcomes(
    server: TelhaServer, client: Client, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[pb.WatchRequest] = []
    delivered: list[pb.WatchEvent] = []
    positioned = asyncio.Event()
    watch = client.stub.Watch

    def recording_watch(request: pb.WatchRequest, **kwargs: Any) -> _RecordedWatch:
        opened.append(request)
        return _RecordedWatch(watch(request, **kwargs), delivered, positioned)

    monkeypatch.setattr(client.stub, "Watch", recording_watch)
    jobs = [r.job for r in await client.enqueue_batch([NewJob(kind, i) for i in range(100)], scope="acme")]
    waiting = [asyncio.ensure_future(client.result(j.job_id)) for j in jobs]
    await signalled(positioned, "the result stream to open")
    # Half are worked to completion (leases and completions on the server), half cancelled.
    async with Client(server.address, token=WORKER) as worker_client:
        worker = Worker(worker_client, concurrency=10)

        @worker.handler(kind)
        async def echo(job: JobContext) -> Any:
            return job.json()

        for job in jobs[50:]:
            await client.cancel(job.job_id)
        async with worker:
            outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert [o.json() for o in outcomes[:50]] == list(range(50))  # type: ignore[union-attr]
    assert all(isinstance(o, JobFailed) for o in outcomes[50:])
    assert len(opened) == 1
    # The server skipped the leases (and the completions' heartbeats): only the 100 outcomes travelled.
    ours = [e for e in delivered if e.job.kind == kind]
    assert sorted(e.transition for e in ours) == ["cancelled"] * 50 + ["completed"] * 50


async def test_watch_yields_transitions_in_order_for_a_kind(client: Client, kind: str) -> None:
    async with client.watch(kind_prefix=kind) as events:
        job = (await client.enqueue(kind, scope="acme")).job
        await client.cancel(job.job_id)
        seen = [await events.__anext__(), await events.__anext__()]
    assert [(e.transition, e.job.job_id) for e in seen] == [("enqueued", job.job_id), ("cancelled", job.job_id)]


async def test_watch_resumes_across_a_server_restart_with_none_missing_or_repeated(
    own_server: TelhaServer, kind: str
) -> None:
    async with Client(own_server.address, token=OPERATOR) as operator:
        events = operator.watch(kind_prefix=kind)
        await events.open()
        before = [(await operator.enqueue(kind, i, scope="acme")).job.job_id for i in range(3)]
        seen = [(await events.__anext__()).job.job_id for _ in range(3)]
        assert seen == before
        # The server goes away mid-watch and comes back on the same store: the iterator resumes by itself.
        resumed = asyncio.ensure_future(events.__anext__())
        own_server.restart()
        after = [(await operator.enqueue(kind, i, scope="acme")).job.job_id for i in range(3)]
        seen_after = [(await resumed).job.job_id] + [(await events.__anext__()).job.job_id for _ in range(2)]
        await events.aclose()
        assert seen_after == after


async def test_watch_continues_after_a_token_from_an_earlier_watch(client: Client, kind: str) -> None:
    async with client.watch(kind_prefix=kind) as events:
        one = (await client.enqueue(kind, 1, scope="acme")).job
        token = (await events.__anext__()).resume_token
    two = (await client.enqueue(kind, 2, scope="acme")).job
    later = client.watch(kind_prefix=kind, resume_token=token)
    assert (await later.__anext__()).job.job_id == two.job_id != one.job_id
    await later.aclose()


def test_the_sync_client_enqueues_and_reads_from_a_plain_script(server: TelhaServer, kind: str) -> None:
    with SyncClient(server.address, token=OPERATOR) as client:
        job = client.enqueue(kind, {"n": 1}, scope="acme").job
        assert client.show(job.job_id).payload_json() == {"n": 1}
        assert [j.job_id for j in client.jobs(scope="acme", kind_prefix=kind)] == [job.job_id]
        client.cancel(job.job_id)
        with pytest.raises(JobFailed):
            client.result(job.job_id)
