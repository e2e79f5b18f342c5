"""The Python side of ``npm run bench:python`` (bench/python.ts): a Telha Python worker, Celery 5 and
RQ on Redis, each draining jobs enqueued beforehand at a given concurrency, and each one's awaited
enqueue rate (one call at a time, each answered before the next). Prints one JSON line.

    python3 bench/python/drain.py telha|celery|rq CONCURRENCY JOBS [TELHA_ADDRESS]

A drain is timed from its first handler's start to its last job done: for Telha until the worker has
closed with every completion acknowledged by the server; for Celery and RQ until the last handler
returned (Celery acknowledges a message before running it; RQ writes the job's status after).
Worker processes are up and connected before the clock starts (RQ's N processes wait at a barrier).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# BENCH_PYTHON_SDK: another copy of the SDK (its src/), to compare two versions in one run.
sys.path.insert(0, os.environ.get("BENCH_PYTHON_SDK") or str(HERE.parent.parent / "sdk" / "python" / "src"))

import tasks  # noqa: E402

#: Enqueues timed one at a time for the awaited enqueue rate.
ENQUEUE_SAMPLE = int(os.environ.get("BENCH_PYTHON_ENQUEUES", "1000"))


def telha(concurrency: int, jobs: int, address: str) -> dict[str, float]:
    from telha import Client, JobContext, NewJob, Worker

    async def main() -> dict[str, float]:
        kind = f"bench.py.{uuid.uuid4().hex[:8]}"
        enqueue_kind = f"bench.py-enqueue.{uuid.uuid4().hex[:8]}"
        async with Client(address) as producer, Client(address) as worker_client:
            started = time.perf_counter()
            for _ in range(ENQUEUE_SAMPLE):
                await producer.enqueue(enqueue_kind, scope="bench")
            enqueue_rate = ENQUEUE_SAMPLE / (time.perf_counter() - started)
            for i in range(0, jobs, 1000):
                await producer.enqueue_batch([NewJob(kind) for _ in range(min(1000, jobs - i))], scope="bench")
            all_ran = asyncio.Event()
            tasks.expected = jobs
            tasks.on_all_ran = all_ran.set
            worker = Worker(worker_client, concurrency=concurrency)

            @worker.handler(kind)
            async def noop(job: JobContext) -> None:
                tasks.record()

            await worker.start()
            await all_ran.wait()
            await worker.close()
            drained = time.perf_counter()
            counts = {r.state.name: r.count for r in await producer.counts("bench") if r.kind == kind}
            assert counts == {"COMPLETED": jobs}, counts
            return {"drain": jobs / (drained - tasks.first_start), "enqueue": enqueue_rate}

    return asyncio.run(main())


def celery(concurrency: int, jobs: int) -> dict[str, float]:
    import redis

    queue = f"bench-celery-{uuid.uuid4().hex[:8]}"
    connection = redis.Redis.from_url(tasks.BROKER)
    started = time.perf_counter()
    for _ in range(ENQUEUE_SAMPLE):
        tasks.celery_noop.apply_async((queue + "-enqueue-count", 0), queue=queue + "-enqueue")
    enqueue_rate = ENQUEUE_SAMPLE / (time.perf_counter() - started)
    connection.delete(queue + "-enqueue")
    for _ in range(jobs):
        tasks.celery_noop.apply_async((queue + "-count", jobs), queue=queue)
    # The worker as Celery runs by default: a process of its own with the prefork pool, `concurrency`
    # child processes. (Its thread pool drained ~4 jobs/s at concurrency 1 here: not what users run.)
    subprocess.run(
        [sys.executable, str(HERE / "drain.py"), "celery-worker", str(concurrency), queue],
        capture_output=True, text=True, check=True,
    )
    first, last = (float(connection.get(queue + suffix) or "nan") for suffix in ("-count-first", "-count-last"))
    assert int(connection.get(queue + "-count") or 0) == jobs
    connection.delete(queue, queue + "-count", queue + "-count-first", queue + "-count-last")
    return {"drain": jobs / (last - first), "enqueue": enqueue_rate}


def celery_worker(concurrency: int, queue: str) -> None:
    worker = tasks.celery_app.Worker(
        queues=[queue], pool="prefork", concurrency=concurrency, loglevel="WARNING",
        without_heartbeat=True, without_mingle=True, without_gossip=True, quiet=True,
    )
    worker.start()


def rq(concurrency: int, jobs: int) -> dict[str, float]:
    import redis
    from rq import Queue

    connection = redis.Redis.from_url(tasks.BROKER)
    name = f"bench-rq-{uuid.uuid4().hex[:8]}"
    sample = Queue(name + "-enqueue", connection=connection)
    started = time.perf_counter()
    for _ in range(ENQUEUE_SAMPLE):
        sample.enqueue(tasks.noop)
    enqueue_rate = ENQUEUE_SAMPLE / (time.perf_counter() - started)
    sample.empty()
    queue = Queue(name, connection=connection)
    for i in range(0, jobs, 1000):
        queue.enqueue_many([Queue.prepare_data(tasks.noop) for _ in range(min(1000, jobs - i))])
    # RQ runs one job at a time per worker process: `concurrency` processes, each a SimpleWorker
    # (no fork per job), started and connected before the barrier lets them all go at once.
    barrier = name + "-go"
    children = [
        subprocess.Popen(
            [sys.executable, str(HERE / "drain.py"), "rq-worker", name, barrier],
            stdout=subprocess.PIPE, text=True,
        )
        for _ in range(concurrency)
    ]
    for _ in range(concurrency):
        connection.blpop([barrier + "-ready"])
    connection.rpush(barrier, *(["go"] * concurrency))
    spans = [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]
    ran = [s for s in spans if s["ran"]]
    assert sum(s["ran"] for s in ran) == jobs, spans
    drain = jobs / (max(s["last"] for s in ran) - min(s["first"] for s in ran))
    queue.delete(delete_jobs=True)
    return {"drain": drain, "enqueue": enqueue_rate}


def rq_worker(name: str, barrier: str) -> None:
    import redis
    from rq import Queue, SimpleWorker

    connection = redis.Redis.from_url(tasks.BROKER)
    worker = SimpleWorker([Queue(name, connection=connection)], connection=connection)
    connection.rpush(barrier + "-ready", "1")
    connection.blpop([barrier])
    worker.work(burst=True, logging_level="WARNING")
    # perf_counter is CLOCK_MONOTONIC on Linux: comparable across this machine's processes.
    print(json.dumps({"first": tasks.first_start, "last": tasks.last_end, "ran": tasks.ran}), flush=True)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "celery-worker":
        celery_worker(int(args[0]), args[1])
    elif command == "rq-worker":
        rq_worker(args[0], args[1])
    else:
        concurrency, jobs = int(args[0]), int(args[1])
        result = (
            telha(concurrency, jobs, args[2]) if command == "telha"
            else celery(concurrency, jobs) if command == "celery"
            else rq(concurrency, jobs)
        )
        print(json.dumps(result), flush=True)
