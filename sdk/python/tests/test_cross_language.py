"""Cross-language: a job enqueued by the TypeScript SDK is worked by a Python worker and its result
awaited in TypeScript, and the reverse (test/support/python-peer.ts is the TypeScript side)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from conftest import OPERATOR, REPO, WORKER, TelhaServer

from telha import Client, JobContext, Worker

PEER = str(REPO / "test" / "support" / "python-peer.ts")


async def peer(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "node", "--import", "tsx", PEER, *args, cwd=REPO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )


async def line(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    return (await asyncio.wait_for(process.stdout.readline(), 120)).decode().rstrip("\n")


@pytest.fixture
async def worker_client(server: TelhaServer) -> AsyncIterator[Client]:
    async with Client(server.address, token=WORKER) as client:
        yield client


async def test_a_typescript_producers_job_is_worked_in_python_and_its_result_awaited_in_typescript(
    server: TelhaServer, worker_client: Client, kind: str
) -> None:
    worker = Worker(worker_client)

    @worker.handler(kind)
    async def double(job: JobContext) -> dict[str, object]:
        return {"worker": "python", "doubled": job.json()["n"] * 2}

    async with worker:
        producer = await peer("produce", server.address, OPERATOR, kind, json.dumps({"n": 21}))
        job_id = await line(producer)
        result = json.loads(await line(producer))
        assert await producer.wait() == 0
    assert job_id and result == {"worker": "python", "doubled": 42}


async def test_a_python_producers_job_is_worked_in_typescript_and_its_result_awaited_in_python(
    server: TelhaServer, client: Client, kind: str
) -> None:
    worker = await peer("work", server.address, WORKER, kind)
    try:
        assert await line(worker) == "ready"
        job = (await client.enqueue(kind, {"n": 1}, scope="acme")).job
        assert (await client.result(job.job_id)).json() == {"worker": "ts", "payload": {"n": 1}}
    finally:
        assert worker.stdin is not None
        worker.stdin.close()
        assert await worker.wait() == 0
