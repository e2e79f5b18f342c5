"""``python -m telha worker module:attr`` as a real process: it works the module's tasks and closes
gracefully on SIGTERM or SIGINT, handing back what it had not started."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import SDK, WORKER, TelhaServer

from telha import Client, JobState, NewJob

TASKS = '''
import asyncio
import os
from dataclasses import dataclass

from telha import JobContext, Worker, task


@dataclass
class Pair:
    a: int
    b: int


@task("{kind}.add")
async def add(pair: Pair) -> int:
    return pair.a + pair.b


@task("{kind}.multiply")
def multiply(pair: Pair) -> list[int]:
    return [pair.a * pair.b, os.getpid()]


HELD = asyncio.Event()


def setup(worker: Worker) -> None:
    worker.add(add)

    @worker.handler("{kind}.held", concurrency=1)
    async def held(job: JobContext) -> None:
        print("held", job.id, flush=True)
        await HELD.wait()
'''


async def start_worker(server: TelhaServer, directory: Path, target: str, *options: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SDK / "src"), str(directory)]),
        "TELHA_ADDRESS": server.address,
        "TELHA_TOKEN": WORKER,
    }
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "telha", "worker", target, *options,
        cwd=directory, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )


async def line_with(stream: "asyncio.StreamReader | None", text: str) -> str:
    assert stream is not None
    while True:
        line = (await asyncio.wait_for(stream.readline(), 60)).decode()
        assert line, f"the worker exited before printing {text!r}"
        if text in line:
            return line


@pytest.fixture
def tasks_module(tmp_path: Path, kind: str) -> Path:
    (tmp_path / "cli_tasks.py").write_text(TASKS.replace("{kind}", kind))
    return tmp_path


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
async def test_a_worker_process_works_a_modules_tasks_and_stops_gracefully_on_a_signal(
    server: TelhaServer, client: Client, kind: str, tasks_module: Path, stop: signal.Signals
) -> None:
    child = await start_worker(server, tasks_module, "cli_tasks:setup", "--concurrency", "2", "--shutdown-timeout", "0")
    try:
        ready = await line_with(child.stderr, "working")
        assert f"{kind}.add" in ready and WORKER not in ready  # the token is never logged
        added = (await client.enqueue(kind + ".add", {"a": 2, "b": 3}, scope="acme")).job
        assert (await client.result(added.job_id)).json() == 5
        held = [r.job for r in await client.enqueue_batch([NewJob(kind + ".held", i) for i in range(3)], scope="acme")]
        running = (await line_with(child.stdout, "held ")).split()[1]
        child.send_signal(stop)
        _, errors = await asyncio.wait_for(child.communicate(), 60)
    finally:
        if child.returncode is None:
            child.kill()
    assert child.returncode == 0, errors.decode()
    assert b"stopped" in errors
    after = {j.job_id: await client.show(j.job_id) for j in held}
    # The running one was cancelled at the shutdown timeout and handed back; the others never started.
    assert running in after
    assert [(j.state, j.attempts) for j in after.values()] == [(JobState.PENDING, 0)] * 3


async def test_without_an_attribute_it_works_every_task_the_module_defines(
    server: TelhaServer, client: Client, kind: str, tasks_module: Path
) -> None:
    child = await start_worker(server, tasks_module, "cli_tasks")
    try:
        ready = await line_with(child.stderr, "working")
        assert f"{kind}.add" in ready and f"{kind}.held" not in ready
        added = (await client.enqueue(kind + ".add", {"a": 1, "b": 1}, scope="acme")).job
        assert (await client.result(added.job_id)).json() == 2
        child.send_signal(signal.SIGTERM)
        await asyncio.wait_for(child.communicate(), 60)
    finally:
        if child.returncode is None:
            child.kill()
    assert child.returncode == 0


async def test_with_executor_process_sync_tasks_run_in_processes_of_the_workers_own(
    server: TelhaServer, client: Client, kind: str, tasks_module: Path
) -> None:
    child = await start_worker(server, tasks_module, "cli_tasks:multiply", "--executor", "process")
    try:
        await line_with(child.stderr, "working")
        job = (await client.enqueue(kind + ".multiply", {"a": 6, "b": 7}, scope="acme")).job
        product, pid = (await client.result(job.job_id)).json()
        child.send_signal(signal.SIGTERM)
        await asyncio.wait_for(child.communicate(), 60)
    finally:
        if child.returncode is None:
            child.kill()
    assert child.returncode == 0 and product == 42 and pid != child.pid


async def test_a_target_that_does_not_exist_exits_with_an_error_naming_it(
    server: TelhaServer, tasks_module: Path
) -> None:
    child = await start_worker(server, tasks_module, "cli_tasks:nothing_here")
    _, errors = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 2 and b"'nothing_here'" in errors


def test_the_telha_worker_console_script_runs_the_same_command() -> None:
    scripts = tomllib.loads((SDK / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["telha-worker"].partition(":")
    from telha import cli

    assert module == "telha.cli" and getattr(cli, function) is cli.worker_main
