"""The no-op job every system runs in bench/python/drain.py, and what it records: when the first
handler of this process started, when the last one ended, and how many ran. Celery and RQ import
it by name (their workers find their tasks by module); Telha's handler calls ``record`` too."""

from __future__ import annotations

import threading
import time

from celery import Celery

BROKER = "redis://127.0.0.1:6379/14"

first_start: float = 0.0
last_end: float = 0.0
ran = 0
#: Celery's thread pool runs handlers in threads.
_lock = threading.Lock()
#: Called (once) when ``expected`` handlers have run in this process.
on_all_ran = None
expected = 0


def record() -> None:
    global first_start, last_end, ran
    now = time.perf_counter()
    with _lock:
        if ran == 0:
            first_start = now
        ran += 1
        last_end = now
        done = ran == expected and on_all_ran is not None
    if done:
        on_all_ran()  # type: ignore[misc]


def noop() -> None:
    """RQ's job."""
    record()


celery_app = Celery("telha_bench", broker=BROKER)
celery_app.conf.update(
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    worker_redirect_stdouts=False,
    broker_connection_retry_on_startup=True,
)


_redis = None


@celery_app.task(name="bench.noop", ignore_result=True)
def celery_noop(counter: str, jobs: int) -> None:
    """Celery's job. Its handlers run in the pool's processes, so they count in Redis (one INCR each,
    a round trip of ~0.1 ms beside Celery's own per-task cost) and the last tells the worker to stop."""
    global _redis
    if _redis is None:
        import redis

        _redis = redis.Redis.from_url(BROKER)
    now = time.perf_counter()
    done = _redis.incr(counter)
    if done == 1:
        _redis.set(counter + "-first", repr(now))
    if done == jobs:
        _redis.set(counter + "-last", repr(time.perf_counter()))
        import os
        import signal

        os.kill(os.getppid(), signal.SIGTERM)  # a warm shutdown of the worker
