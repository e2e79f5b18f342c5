"""Latest wins through the Python SDK against a real telha serve: supersede keys on enqueue, batch,
each and typed tasks, the leased mode, debounce, and what the server refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from conftest import WORKER, TelhaServer

from telha import Client, InvalidArgument, JobState, NewJob, task
from telha._gen.telha.v1 import queue_pb2 as pb


@pytest.fixture
async def worker_client(server: TelhaServer) -> AsyncIterator[Client]:
    async with Client(server.address, token=WORKER) as client:
        yield client


async def test_a_second_enqueue_with_the_key_cancels_the_pending_holder_and_links_it(client: Client, kind: str) -> None:
    first = (await client.enqueue(kind, {"v": 1}, scope="acme", supersede_key="user-7")).job
    second = (await client.enqueue(kind, {"v": 2}, scope="acme", supersede_key="user-7")).job
    assert (second.state, second.supersede_key, second.superseded_by) == (JobState.PENDING, "user-7", None)
    replaced = await client.show(first.job_id)
    assert (replaced.state, replaced.superseded_by, replaced.supersede_key) == (
        JobState.CANCELLED,
        second.job_id,
        "user-7",
    )
    # Another key, or none, replaces nothing.
    other = (await client.enqueue(kind, {"v": 3}, scope="acme", supersede_key="user-8")).job
    plain = (await client.enqueue(kind, {"v": 4}, scope="acme")).job
    assert plain.supersede_key is None
    assert [(await client.show(j.job_id)).state for j in (second, other, plain)] == [JobState.PENDING] * 3


async def test_the_leased_mode_cancels_a_leased_holder_and_the_default_lets_it_run(
    client: Client, worker_client: Client, kind: str
) -> None:
    async def lease_one() -> str:
        request = pb.LeaseRequest(worker_id="w", kinds=[kind], limit=1, scope=pb.Scope(tenant="acme"))
        (job,) = (await worker_client._call(worker_client.stub.Lease, request)).jobs
        return job.job_id

    await client.enqueue(kind, "a", scope="acme", supersede_key="k")
    running = await lease_one()
    spared = (await client.enqueue(kind, "b", scope="acme", supersede_key="k", supersede="pending")).job
    assert (await client.show(running)).state is JobState.LEASED
    leased_again = await lease_one()
    assert leased_again == spared.job_id
    latest = (await client.enqueue(kind, "c", scope="acme", supersede_key="k", supersede="leased")).job
    cancelled = await client.show(leased_again)
    assert (cancelled.state, cancelled.superseded_by) == (JobState.CANCELLED, latest.job_id)
    # The first one no longer held the key (the second took it), so it runs on.
    assert (await client.show(running)).state is JobState.LEASED


async def test_debounce_makes_the_latest_job_due_its_window_after_its_enqueue(client: Client, kind: str) -> None:
    await client.enqueue(kind, "v1", scope="acme", supersede_key="d", debounce_ms=60_000)
    latest = (await client.enqueue(kind, "v2", scope="acme", supersede_key="d", debounce_ms=60_000)).job
    assert latest.not_before_us is not None
    assert latest.not_before_us - latest.created_at_us == 60_000_000
    (pending,) = (await client.list(scope="acme", state=JobState.PENDING, kind_prefix=kind)).jobs
    assert pending.job_id == latest.job_id and pending.payload == b"v2"


async def test_debounce_max_wait_bounds_the_run_from_its_first_enqueue(client: Client, kind: str) -> None:
    first = (await client.enqueue(kind, "v1", scope="acme", supersede_key="m", debounce_ms=60_000, debounce_max_ms=90_000)).job
    assert first.debounce_until_us == first.created_at_us + 90_000_000
    latest = (await client.enqueue(kind, "v2", scope="acme", supersede_key="m", debounce_ms=60_000, debounce_max_ms=90_000)).job
    # The run's bound is the first enqueue's: the latest is due by then, not a whole window after itself.
    assert latest.debounce_until_us == first.debounce_until_us
    assert latest.not_before_us == min(latest.created_at_us + 60_000_000, first.debounce_until_us)
    with pytest.raises(InvalidArgument) as raised:
        await client.enqueue(kind, scope="acme", supersede_key="m", debounce_ms=60_000, debounce_max_ms=1_000)
    assert raised.value.field is not None and raised.value.field.endswith("debounce_max_ms")


async def test_batch_each_and_typed_tasks_carry_the_key(client: Client, kind: str) -> None:
    batch = await client.enqueue_batch([NewJob(kind, 1, supersede_key="b1"), NewJob(kind, 2, supersede_key="b2")], scope="acme")
    assert [r.job.supersede_key for r in batch] == ["b1", "b2"]
    (each,) = await client.enqueue_each([NewJob(kind, 3, supersede_key="b1")], scope="acme")
    assert not isinstance(each, Exception)
    assert (await client.show(batch[0].job.job_id)).superseded_by == each.job.job_id

    @task(kind)
    async def typed(payload: int) -> None:
        return None

    first = await typed.enqueue(client, 5, scope="acme", supersede_key="t", debounce_ms=1_000)
    second = await typed.enqueue(client, 6, scope="acme", supersede_key="t", debounce_ms=1_000)
    assert (await client.show(first.job.job_id)).superseded_by == second.job.job_id
    assert second.job.supersede_key == "t"


async def test_bad_supersede_options_are_refused_naming_the_field_and_nothing_is_written(
    client: Client, kind: str
) -> None:
    with pytest.raises(InvalidArgument) as raised:
        await client.enqueue(kind, scope="acme", supersede_key="k", supersede="running")  # type: ignore[arg-type]
    assert raised.value.field == "job.supersede"
    # The server's own checks: debounce needs a key, and a key is 1-255 bytes.
    with pytest.raises(InvalidArgument) as raised:
        await client.enqueue(kind, scope="acme", debounce_ms=1_000)
    assert raised.value.field is not None and raised.value.field.endswith("debounce_ms")
    with pytest.raises(InvalidArgument) as raised:
        await client.enqueue_batch([NewJob(kind, 1), NewJob(kind, 2, supersede_key="x" * 256)], scope="acme")
    assert raised.value.field is not None and raised.value.field.endswith("supersede_key")
    assert (await client.list(scope="acme", kind_prefix=kind)).jobs == []
