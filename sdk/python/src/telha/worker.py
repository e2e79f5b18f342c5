"""The worker: one Work stream, a concurrency limit (total and per kind), prefetch, heartbeats at a
fraction of the lease, cancellation delivered to the handler, and a graceful close that hands back
what has not started with the fenced release.

    async with Client(token=...) as client:
        worker = Worker(client, concurrency=8)

        @worker.handler("email.send")
        async def send(job: JobContext) -> dict:
            ...

        await worker.run_until_signalled()   # SIGTERM / SIGINT close it gracefully

Sync handlers run in a thread pool, or with ``executor="process"`` in a pool of processes (for
CPU-bound work that holds the GIL): see ``ProcessJobContext``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Optional, Union

from ._gen.telha.v1 import queue_pb2 as pb
from ._work_stream import WorkStream
from .client import Client
from .errors import InvalidArgument, LeaseConflict, PermanentError, TelhaError, Unavailable
from .types import Job, NewJob, ScopeLike, payload_bytes, scope_to_wire, to_json_value

if TYPE_CHECKING:
    from .tasks import Task

log = logging.getLogger("telha.worker")

#: Heartbeat after this fraction of the remaining lease has passed (as the TypeScript worker).
DEFAULT_HEARTBEAT_FRACTION = 1 / 3
#: Never heartbeat more often than this (seconds), however short the lease.
MIN_HEARTBEAT_INTERVAL = 0.05
#: How long ``close()`` waits for running handlers before cancelling them and handing their jobs back.
DEFAULT_SHUTDOWN_TIMEOUT = 30.0
#: Reconnecting a lost Work stream: first pause and ceiling (seconds), doubling in between.
RECONNECT_FIRST_DELAY = 0.05
RECONNECT_MAX_DELAY = 5.0
#: ``prefetch="auto"`` leases about this much handler time (seconds per slot) ahead of the free slots,
#: at most ``max(concurrency, AUTO_PREFETCH_MAX)`` jobs, from a running average of handler time that
#: each return moves by ``HANDLER_TIME_WEIGHT`` (the TypeScript worker's figures, src/worker/runner.ts).
AUTO_PREFETCH_AHEAD = 0.025
AUTO_PREFETCH_MAX = 100
HANDLER_TIME_WEIGHT = 0.2
#: The most credit a Work stream may have outstanding (the server refuses more: MAX_WORK_CREDIT).
MAX_WORK_CREDIT = 10_000

#: Why a handler was cancelled, as ``JobContext.cancel_reason`` says.
CANCELLED = "cancelled"  # the job was cancelled by an operator or its tenant
TIMEOUT = "timeout"  # the attempt's timeout passed; the server's reaper takes it back
LEASE_LOST = "lease_lost"  # the lease expired and went to another worker (or was reaped)
SHUTDOWN = "shutdown"  # the worker closed and gave up waiting for the handler; the job is released


class _JobView:
    """The job's own fields, as every handler's context shows them."""

    job: Job

    @property
    def id(self) -> str:
        return self.job.job_id

    @property
    def kind(self) -> str:
        return self.job.kind

    @property
    def tenant(self) -> str:
        return self.job.tenant

    @property
    def payload(self) -> bytes:
        return self.job.payload

    @property
    def attempts(self) -> int:
        return self.job.attempts

    @property
    def continuation(self) -> Optional[bytes]:
        """What the last ``checkpoint`` stored, for an attempt that resumes."""
        return self.job.continuation

    def json(self) -> Any:
        """The payload read as JSON."""
        return self.job.payload_json()


class ProcessJobContext(_JobView):
    """What a sync handler gets when the worker runs them in processes (``executor="process"``, or an
    executor other than a ``ThreadPoolExecutor``): the job, by value, as it was pickled to the process.

    The worker stays in its own process: it sends the heartbeats (so the handler may hold its GIL as
    long as it likes) and submits what the handler returns. So there is no ``progress``,
    ``checkpoint``, ``chain`` or ``cancelled`` here: a handler that needs them is async or runs in
    the thread pool. A process is never interrupted: when its job is cancelled, times out, or its
    lease is lost, the worker stops waiting for it, the handler runs to its end in its process, and
    what it returns is dropped (the job's fence would refuse it anyway).
    """

    def __init__(self, job: Job) -> None:
        self.job = job

    def __repr__(self) -> str:
        return f"ProcessJobContext(id={self.id!r}, kind={self.kind!r})"


class _Context(_JobView):
    def __init__(self, worker: "Worker", job: Job, fence: pb.Fence) -> None:
        self.job = job
        self._cancelled: Optional[threading.Event] = None
        self.cancel_reason: Optional[str] = None
        self._worker = worker
        self._fence = fence
        self._successors: list[NewJob] = []

    @property
    def cancelled(self) -> threading.Event:
        """Set when the handler should stop: see ``cancel_reason``. Sync handlers check it; async ones
        are also cancelled (``asyncio.CancelledError``)."""
        if self._cancelled is None:
            # Made on first use (a threading.Event is a lock and a condition: ~5% of a no-op job's
            # CPU); a sync context makes it up front, as its thread and the loop both reach it.
            self._cancelled = threading.Event()
            if self.cancel_reason is not None:
                self._cancelled.set()
        return self._cancelled

    def chain(self, *jobs: NewJob) -> None:
        """Enqueue these jobs in the same write that completes this one (in its scope)."""
        self._successors.extend(jobs)

    async def _progress(self, value: Any) -> None:
        text = json.dumps(to_json_value(value), separators=(",", ":"))
        await self._worker._extend(self, "heartbeats", pb.HeartbeatRequest(fence=self._fence, progress=text))

    async def _checkpoint(self, continuation: bytes) -> None:
        await self._worker._extend(
            self, "checkpoints", pb.CheckpointRequest(fence=self._fence, continuation=payload_bytes(continuation))
        )


class JobContext(_Context):
    """What an async handler gets: the job, and progress / checkpoint, which also extend the lease."""

    async def progress(self, value: Any) -> None:
        """Show progress (a JSON value, at most 4,096 characters as JSON) and extend the lease."""
        await self._progress(value)

    async def checkpoint(self, continuation: bytes) -> None:
        """Store a continuation (a retry resumes from ``ctx.continuation``) and extend the lease."""
        await self._checkpoint(continuation)


class SyncJobContext(_Context):
    """What a sync handler (run in the worker's thread pool) gets: blocking progress / checkpoint."""

    def __init__(self, worker: "Worker", job: Job, fence: pb.Fence) -> None:
        super().__init__(worker, job, fence)
        self._cancelled = threading.Event()

    def progress(self, value: Any) -> None:
        self._worker._blocking(self._progress(value))

    def checkpoint(self, continuation: bytes) -> None:
        self._worker._blocking(self._checkpoint(continuation))


Handler = Callable[..., Any]

#: Where sync handlers run: ``"thread"`` (a thread pool of ``concurrency`` threads), ``"process"``
#: (a pool of ``concurrency`` processes) or an executor of your own.
ExecutorOption = Union[Literal["thread", "process"], Executor]


@dataclass
class _Registration:
    kind: str
    run: Callable[[Any], Any]
    is_async: bool
    slots: Optional[asyncio.Semaphore]
    task: Optional["Task[Any, Any]"] = None


@dataclass
class _Running:
    context: _Context
    handler: Optional["asyncio.Future[Any]"] = None
    released: bool = False
    #: Whether the job still counts against the worker's credit: until its slot frees (or it goes back
    #: unstarted), not until its result is answered.
    holds: bool = True


class Worker:
    """Works the jobs of the kinds (or ``@task``s) registered on it, over one Work stream of ``client``.

    ``concurrency`` handlers at most run at once (and ``concurrency=`` per kind at ``handler()``); the
    server pushes ``prefetch`` more so the next job is ready when a slot frees. ``prefetch="auto"`` (the
    default) leases as many as keep every slot busy for about 25 ms at the handlers' running average
    time (at most ``max(concurrency, 100)``), and none before the first handler returns or while
    handlers take longer than 25 ms × ``concurrency``: short handlers never wait a round trip for their
    next job, and a slow worker never sits on jobs another worker could start. A number fixes it (0:
    lease only for free slots). A slot's credit goes back to the server as its handler returns, so
    the next job's lease overlaps the result's round trip. Jobs waiting for their kind's own slot hold
    none of the worker's credit (up to ``concurrency`` of them), so a backlog of one kind never keeps
    the others' jobs from being leased. Sync
    handlers run in a thread pool of ``concurrency`` threads, so blocking work does not hold up
    heartbeats; with ``executor="process"`` in a pool of ``concurrency`` processes (started with
    ``spawn``: forking a process that runs gRPC's threads is not safe), so CPU-bound work that holds
    the GIL does not either. Handlers that run in processes must be picklable (defined at the top level
    of an importable module) and get a ``ProcessJobContext``; what they return must be picklable too.
    An executor of your own is used as it is and not shut down by the worker: a
    ``ThreadPoolExecutor`` runs handlers in-process, any other as in a process pool.
    """

    def __init__(
        self,
        client: Client,
        tasks: Iterable["Task[Any, Any]"] = (),
        *,
        concurrency: int = 10,
        prefetch: Union[int, Literal["auto"], None] = "auto",
        scope: ScopeLike = None,
        worker_id: Optional[str] = None,
        heartbeat_fraction: float = DEFAULT_HEARTBEAT_FRACTION,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        executor: ExecutorOption = "thread",
        clock: Callable[[], float] = time.time,
    ) -> None:
        if concurrency < 1:
            raise InvalidArgument("concurrency must be at least 1", field="concurrency")
        if prefetch is None:  # what an unset option (the CLI's) passes: the default
            prefetch = "auto"
        if prefetch != "auto" and (isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0):
            raise InvalidArgument(f'prefetch must be a non-negative integer or "auto", not {prefetch!r}', field="prefetch")
        if not 0 < heartbeat_fraction < 1:
            raise InvalidArgument("heartbeat_fraction must be between 0 and 1", field="heartbeat_fraction")
        if not isinstance(executor, Executor) and executor not in ("thread", "process"):
            raise InvalidArgument(
                f'executor must be "thread", "process" or a concurrent.futures.Executor, not {executor!r}',
                field="executor",
            )
        self.client = client
        self.executor = executor
        self.concurrency = concurrency
        self.prefetch: Union[int, Literal["auto"]] = prefetch
        self.scope = scope
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.heartbeat_fraction = heartbeat_fraction
        self.shutdown_timeout = shutdown_timeout
        self._clock = clock
        self._registry: dict[str, _Registration] = {}
        self._slots: Optional[asyncio.Semaphore] = None
        #: Jobs pushed and waiting for their kind's own slot: they hold none of the worker's credit.
        self._waiting_for_kind = 0
        self._pool: Optional[Executor] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stream: Optional[WorkStream] = None
        # By job and lease generation: a job whose lease this worker lost can come back to it (a new
        # generation) while the old attempt's handler still runs, and each must keep its own entry.
        self._running: dict[tuple[str, int], _Running] = {}
        self._executions: set[asyncio.Task[None]] = set()
        #: Jobs pushed and not yet out of their slot (running, or waiting for one), and the credit
        #: granted on this stream that no job has used yet: together never above concurrency + prefetch,
        #: besides up to ``concurrency`` more waiting for their kind's own slot.
        self._held = 0
        self._granted = 0
        #: Running average of handler time (seconds), for ``prefetch="auto"``; ``None`` before the first returns.
        self._handler_time: Optional[float] = None
        self._closing: Optional[asyncio.Event] = None
        self._closed: Optional[asyncio.Event] = None
        self._run_task: Optional[asyncio.Task[None]] = None
        for task in tasks:
            self.add(task)

    def __repr__(self) -> str:
        return f"Worker(worker_id={self.worker_id!r}, kinds={self.kinds!r})"

    @property
    def kinds(self) -> list[str]:
        """The kinds (prefixes) registered, in the order they were."""
        return list(self._registry)

    # Registering

    def handler(self, kind: str, *, concurrency: Optional[int] = None) -> Callable[[Handler], Handler]:
        """Register the decorated function for ``kind``: ``async def f(job: JobContext)`` or a plain
        ``def f(job: SyncJobContext)`` (run in the thread pool; with ``executor="process"``, ``def f(job:
        ProcessJobContext)`` in the process pool). What it returns is the job's result."""

        def register(fn: Handler) -> Handler:
            self._register(kind, fn, concurrency, None)
            return fn

        return register

    def add(self, task: "Task[Any, Any]", *, concurrency: Optional[int] = None) -> None:
        """Work a ``@task``: its handler gets the typed payload (and the context, if it takes two arguments)."""
        self._register(task.kind, task.fn, concurrency if concurrency is not None else task.concurrency, task)

    def _register(
        self, kind: str, fn: Handler, concurrency: Optional[int], task: Optional["Task[Any, Any]"]
    ) -> None:
        if kind in self._registry:
            raise InvalidArgument(f"a handler for {kind!r} is registered already", field="kind")
        is_async = inspect.iscoroutinefunction(task.fn if task is not None else fn)
        slots = asyncio.Semaphore(concurrency) if concurrency is not None else None
        self._registry[kind] = _Registration(kind, fn, is_async, slots, task)

    # Running

    async def __aenter__(self) -> "Worker":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Open the Work stream; returns once the server accepted it. ``close()`` ends it."""
        if self._run_task is not None:
            return
        if not self._registry:
            raise InvalidArgument("register a handler or a task before starting the worker", field="kinds")
        if self._in_processes:
            self._check_picklable()
        self._loop = asyncio.get_running_loop()
        self._slots = asyncio.Semaphore(self.concurrency)
        if self.executor == "thread":
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="telha-handler")
        elif self.executor == "process":
            spawn = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(max_workers=self.concurrency, mp_context=spawn)
        else:
            self._pool = self.executor
        self._closing = asyncio.Event()
        self._closed = asyncio.Event()
        opened: asyncio.Future[None] = self._loop.create_future()
        self._run_task = asyncio.create_task(self._run(opened))
        await opened

    @property
    def _in_processes(self) -> bool:
        """Whether sync handlers run out of this process (and so get a ``ProcessJobContext``)."""
        return self.executor == "process" or (
            isinstance(self.executor, Executor) and not isinstance(self.executor, ThreadPoolExecutor)
        )

    def _check_picklable(self) -> None:
        """At start, not at registration: a decorated module-level function is bound to its name only
        after its decorator returns, and pickle finds functions by name."""
        for registration in self._registry.values():
            if registration.is_async:
                continue
            try:
                pickle.dumps(_process_target(registration))
            except Exception as error:  # PicklingError, AttributeError, TypeError: whichever pickle raises
                raise InvalidArgument(
                    f"the handler of {registration.kind!r} runs in a process, so it must be picklable: a function "
                    f"or @task defined at the top level of an importable module ({error})",
                    field="handler",
                ) from None

    async def run(self) -> None:
        """Start, and work until ``close()`` (from another task or a signal) has finished."""
        await self.start()
        assert self._closed is not None
        await self._closed.wait()

    async def run_until_signalled(self, signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT)) -> None:
        """Work until SIGTERM or SIGINT, then close gracefully: unstarted jobs handed back at once, running
        ones given ``shutdown_timeout`` seconds."""
        self.install_signal_handlers(signals)
        await self.run()

    def install_signal_handlers(self, signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT)) -> None:
        """On each of ``signals``, close this worker gracefully (on the running event loop)."""
        loop = asyncio.get_running_loop()
        for sig in signals:
            loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        log.info("%s received: closing the worker", sig.name)
        asyncio.ensure_future(self.close())

    async def _run(self, opened: "asyncio.Future[None]") -> None:
        assert self._closing is not None and self._closed is not None
        delay = RECONNECT_FIRST_DELAY
        try:
            while not self._closing.is_set():
                stream = WorkStream(self.client.stub, self.client.metadata, self._open_message(), self._on_jobs)
                # Credit is the stream's: what the last one had outstanding ended with it.
                self._granted = 0
                self._stream = stream
                try:
                    await stream.opened
                except TelhaError as error:
                    if not opened.done() and not error.retryable:
                        opened.set_exception(error)
                        return
                    log.warning("could not open the work stream (%s); retrying", error.code)
                else:
                    delay = RECONNECT_FIRST_DELAY
                    if not opened.done():
                        opened.set_result(None)
                    # Jobs still running hold their slots: ask only for what is free.
                    self._grant_free_slots()
                    ended_with = await stream.ended
                    if self._closing.is_set():
                        break
                    log.warning("the work stream ended (%s); reconnecting", ended_with.code if ended_with else "ok")
                try:
                    await asyncio.wait_for(self._closing.wait(), delay)
                except asyncio.TimeoutError:
                    pass
                delay = min(RECONNECT_MAX_DELAY, delay * 2)
        finally:
            if not opened.done():
                opened.set_exception(Unavailable("the worker closed before its work stream opened"))

    def _open_message(self) -> pb.WorkOpen:
        return pb.WorkOpen(
            worker_id=self.worker_id, kinds=list(self._registry), scope=scope_to_wire(self.scope), jobs_with_answers=True
        )

    def _on_jobs(self, jobs: Sequence[pb.Job]) -> None:
        self._granted = max(0, self._granted - len(jobs))
        self._held += len(jobs)
        for job in jobs:
            execution = asyncio.ensure_future(self._execute(Job.from_wire(job)))
            self._executions.add(execution)
            execution.add_done_callback(self._execution_done)

    def _execution_done(self, execution: "asyncio.Task[None]") -> None:
        self._executions.discard(execution)
        # One result fewer being settled: a backlog of them may have held leasing back.
        self._grant_free_slots()

    def _prefetch_now(self) -> int:
        """How many jobs to hold beyond ``concurrency`` now: ``prefetch``, or for ``"auto"`` about
        ``AUTO_PREFETCH_AHEAD`` seconds of every slot's work at the running average handler time."""
        if self.prefetch != "auto":
            return self.prefetch
        if self._handler_time is None:
            return 0
        ahead = int(self.concurrency * AUTO_PREFETCH_AHEAD / max(self._handler_time, 1e-6))
        return min(ahead, max(self.concurrency, AUTO_PREFETCH_MAX))

    def _grant_free_slots(self) -> None:
        """Tell the server how many more jobs it may push: concurrency + prefetch, less the jobs held and
        the credit not yet used. Only a backlog of more than ``concurrency`` results still being settled
        (a slow server) holds leasing back further."""
        stream = self._stream
        if stream is None or not stream.writable or self._closing is None or self._closing.is_set():
            return
        settling = len(self._executions) - self._held
        # Jobs waiting for their kind's slot (not the worker's) hold no credit, up to ``concurrency`` of
        # them: else a backlog of one kind could take every slot's credit and starve the others.
        counted = self._held - min(self._waiting_for_kind, self.concurrency)
        wanted = self.concurrency + self._prefetch_now() - counted - max(0, settling - self.concurrency)
        free = min(wanted, MAX_WORK_CREDIT) - self._granted
        if free <= 0:
            return
        self._granted += free
        stream.grant(free)

    def _vacate(self, running: _Running) -> None:
        """The job no longer holds a slot (its handler returned, or it went back unstarted): its credit
        goes back to the server at once, not after its result is answered."""
        if running.holds:
            running.holds = False
            self._held -= 1
            self._grant_free_slots()

    async def close(self, timeout: Optional[float] = None) -> None:
        """Stop taking jobs, hand back those not started (fenced release: no attempt charged), wait up to
        ``timeout`` (default ``shutdown_timeout``) seconds for running handlers, then cancel the rest and
        hand their jobs back too; then end the stream. A second call waits for the first."""
        if self._closing is None or self._closed is None:
            return
        if self._closing.is_set():
            await self._closed.wait()
            return
        self._closing.set()
        try:
            handlers = [r.handler for r in self._running.values() if r.handler is not None]
            if handlers:
                await asyncio.wait(handlers, timeout=self.shutdown_timeout if timeout is None else timeout)
            for running in list(self._running.values()):
                self._cancel(running, SHUTDOWN)
            # Every job settles (or goes back) on the stream before it is half-closed.
            while self._executions:
                await asyncio.gather(*list(self._executions), return_exceptions=True)
            stream = self._stream
            if stream is not None:
                stream.end()
                await stream.ended
            if self._run_task is not None:
                await self._run_task
            # Jobs pushed while the stream was ending go back too (by unary release, the stream being
            # gone): close() returns once each of them is answered, as for every job before.
            while self._executions:
                await asyncio.gather(*list(self._executions), return_exceptions=True)
        finally:
            # A handler still running in a process (its job cancelled or timed out) runs to its end
            # there; the interpreter waits for it at exit. An executor of the caller's is theirs to shut.
            if self._pool is not None and self._pool is not self.executor:
                self._pool.shutdown(wait=False, cancel_futures=True)
            self._closed.set()

    # One job

    def _cancel(self, running: _Running, reason: str) -> None:
        context = running.context
        if context.cancel_reason is None:
            context.cancel_reason = reason
        context.cancelled.set()
        if running.handler is not None and not running.handler.done():
            running.handler.cancel()

    def _lost(self, context: _Context, error: LeaseConflict) -> None:
        running = self._running.get(_attempt(context.job))
        if running is None or running.released:
            return
        if error.reason == "cancelled":
            log.info("job %s was cancelled; cancelling its handler", context.id)
            self._cancel(running, CANCELLED)
        else:
            log.warning("lost the lease of job %s (%s); cancelling its handler", context.id, error.reason)
            self._cancel(running, LEASE_LOST)

    async def _send(self, field_name: str, request: Any) -> Any:
        """On the stream while it is open; else the unary call that does the same."""
        stream = self._stream
        if stream is not None and stream.writable:
            try:
                return await stream.send(field_name, request)
            except Unavailable:
                # The stream ended under it (a server restart): not lost, sent again below.
                log.debug("work stream ended before answering a %s of job %s", field_name, request.fence.job_id)
        unary = {
            "completes": self.client.stub.Complete,
            "fails": self.client.stub.Fail,
            "releases": self.client.stub.Release,
            "heartbeats": self.client.stub.Heartbeat,
            "checkpoints": self.client.stub.Checkpoint,
        }[field_name]
        # A fenced call cannot apply twice (a second one meets the changed generation), so it may
        # wait out a server restart: a result finished meanwhile is not lost to a lease expiry.
        response = await self.client._call(unary, request, safe=True)
        return getattr(response, "lease_deadline_us", None)

    async def _extend(self, context: _Context, field_name: str, request: Any) -> None:
        try:
            deadline = await self._send(field_name, request)
        except LeaseConflict as error:
            self._lost(context, error)
            raise
        running = self._running.get(_attempt(context.job))
        if running is not None and deadline:
            context.job = _with_deadline(context.job, deadline)

    def _blocking(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _until_next_heartbeat(self, context: _Context) -> float:
        """Seconds until ``heartbeat_fraction`` of the lease left has passed (at least ``MIN_HEARTBEAT_INTERVAL``)."""
        deadline = context.job.lease_deadline_us
        remaining = (deadline / 1e6 - self._clock()) if deadline else 0.0
        return max(MIN_HEARTBEAT_INTERVAL, remaining * self.heartbeat_fraction)

    async def _heartbeats(self, context: _Context, fence: pb.Fence) -> None:
        while True:
            try:
                await self._extend(context, "heartbeats", pb.HeartbeatRequest(fence=fence))
            except LeaseConflict:
                return
            except TelhaError as error:
                # A transient failure: try again soon, well before the deadline.
                log.debug("heartbeat of job %s failed (%s)", context.id, error.code)
            await asyncio.sleep(self._until_next_heartbeat(context))

    async def _take_slot(self, registration: _Registration) -> bool:
        """Wait for a slot (the kind's, then the total); False when the worker closes first. The kind's
        comes first so that jobs waiting on their kind's bound do not hold total slots that other kinds'
        jobs could run in."""
        assert self._slots is not None and self._closing is not None
        taken: list[asyncio.Semaphore] = []
        for slots in (registration.slots, self._slots):
            if slots is None:
                continue
            if not slots.locked():
                # Free now: taken without the two tasks a wait needs (most jobs, with prefetch).
                await slots.acquire()
                taken.append(slots)
                continue
            acquiring = asyncio.ensure_future(slots.acquire())
            closing = asyncio.ensure_future(self._closing.wait())
            kinds_own = slots is registration.slots
            if kinds_own:
                # Waiting for its kind's slot, the job gives its credit back: lease another.
                self._waiting_for_kind += 1
                self._grant_free_slots()
            try:
                await asyncio.wait({acquiring, closing}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if kinds_own:
                    self._waiting_for_kind -= 1
            closing.cancel()
            if not acquiring.done() or self._closing.is_set():
                acquiring.cancel()
                if acquiring.done() and not acquiring.cancelled():
                    taken.append(slots)
                for held in taken:
                    held.release()
                return False
            taken.append(slots)
        return True

    def _free_slot(self, registration: _Registration) -> None:
        assert self._slots is not None
        self._slots.release()
        if registration.slots is not None:
            registration.slots.release()

    async def _execute(self, job: Job) -> None:
        assert self._closing is not None
        fence = pb.Fence(job_id=job.job_id, worker_id=self.worker_id, lease_generation=job.lease_generation)
        registration = self._registry.get(job.kind) or self._registry_for_prefix(job.kind)
        context: _Context = (SyncJobContext if registration and not registration.is_async else JobContext)(
            self, job, fence
        )
        running = _Running(context)
        self._running[_attempt(job)] = running
        heartbeats = _Heartbeats(self, context, fence)
        timer: Optional[asyncio.TimerHandle] = None
        try:
            if registration is None or self._closing.is_set() or not await self._take_slot(registration):
                # Pushed while closing, or waiting for a slot when it did: never started, so straight back.
                await self._release(running, fence)
                return
            try:
                if job.attempt_deadline_us is not None:
                    assert self._loop is not None
                    timer = self._loop.call_later(
                        max(0.0, job.attempt_deadline_us / 1e6 - self._clock()), self._cancel, running, TIMEOUT
                    )
                started = time.perf_counter()
                outcome = await self._run_handler(registration, running)
                if context.cancel_reason != SHUTDOWN:
                    took = time.perf_counter() - started
                    average = self._handler_time
                    self._handler_time = took if average is None else average + HANDLER_TIME_WEIGHT * (took - average)
            finally:
                self._free_slot(registration)
                self._vacate(running)
            if timer is not None:
                timer.cancel()
            heartbeats.cancel()
            reason = context.cancel_reason
            if reason == SHUTDOWN:
                await self._release(running, fence)
            elif reason == TIMEOUT:
                log.warning("job %s: attempt timed out; the server's reaper takes the job back", job.job_id)
            elif reason is None:
                await self._settle(running, fence, registration, outcome)
        except LeaseConflict as error:
            self._lost(context, error)
        except TelhaError as error:
            # The result could not be delivered: the lease will expire and the job run again.
            log.warning("job %s: could not submit its result (%s); it will be retried", job.job_id, error.code)
        finally:
            heartbeats.cancel()
            if timer is not None:
                timer.cancel()
            self._running.pop(_attempt(job), None)
            self._vacate(running)

    def _registry_for_prefix(self, kind: str) -> Optional[_Registration]:
        matches = [r for k, r in self._registry.items() if kind.startswith(k)]
        return max(matches, key=lambda r: len(r.kind)) if matches else None

    async def _run_handler(self, registration: _Registration, running: _Running) -> tuple[bool, Any]:
        """(True, what it returned) or (False, what it raised); cancellation is read from the context."""
        context = running.context
        call = registration.task.invoke if registration.task is not None else registration.run
        arguments = (context,)
        handler: asyncio.Future[Any]
        if registration.is_async:
            handler = asyncio.ensure_future(call(*arguments))
        else:
            assert self._loop is not None and self._pool is not None
            if self._in_processes:
                run = functools.partial(
                    _run_in_process, _process_target(registration), ProcessJobContext(context.job)
                )
            else:
                run = functools.partial(contextvars.copy_context().run, call, *arguments)
            handler = asyncio.ensure_future(self._loop.run_in_executor(self._pool, run))
        running.handler = handler
        try:
            # A sync handler cannot be interrupted: cancelling stops waiting for it (its thread or process
            # runs on, and what it returns is dropped) and, in a thread, it is told through ``ctx.cancelled``.
            return True, await handler
        except asyncio.CancelledError:
            if context.cancel_reason is None:
                raise
            return False, None
        except Exception as error:  # the handler's failure is the job's
            return False, error

    async def _settle(self, running: _Running, fence: pb.Fence, registration: _Registration, outcome: tuple[bool, Any]) -> None:
        context = running.context
        ok, value = outcome
        if ok:
            request = pb.CompleteRequest(fence=fence, successors=[j.to_wire() for j in context._successors])
            result = _result_bytes(value)
            if result is not None:
                request.result = result
            try:
                await self._send("completes", request)
                log.debug("job %s completed", context.id)
                return
            except InvalidArgument as refused:
                # Refused (a result too big, a bad successor): nothing was written and the lease is held,
                # so the attempt fails with the reason in its trail.
                value = refused
        permanent = isinstance(value, PermanentError)
        message = str(value) or type(value).__name__
        log.info("job %s failed%s: %s", context.id, " permanently" if permanent else "", message, exc_info=value)
        await self._send("fails", pb.FailRequest(fence=fence, error=message[:1024], permanent=permanent))

    async def _release(self, running: _Running, fence: pb.Fence) -> None:
        running.released = True
        try:
            await self._send("releases", pb.ReleaseRequest(fence=fence))
        except TelhaError as error:
            log.warning("could not hand back job %s (%s); its lease will expire", fence.job_id, error.code)


class _Heartbeats:
    """A running job's heartbeats: a timer until the first is due, then a task that sends them. Most
    jobs end before their first heartbeat, and a timer costs a fraction of a task made and cancelled
    (the drain at concurrency 100 in bench/RESULTS.md, "The Python SDK beside Celery and RQ")."""

    def __init__(self, worker: Worker, context: _Context, fence: pb.Fence) -> None:
        assert worker._loop is not None
        self._worker, self._context, self._fence = worker, context, fence
        self._task: Optional[asyncio.Task[None]] = None
        self._timer: Optional[asyncio.TimerHandle] = worker._loop.call_later(
            worker._until_next_heartbeat(context), self._start
        )

    def _start(self) -> None:
        self._timer = None
        self._task = asyncio.ensure_future(self._worker._heartbeats(self._context, self._fence))

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None:
            self._task.cancel()
            self._task = None


def _attempt(job: Job) -> tuple[str, int]:
    """What tells one attempt of a job from another on this worker: its id and lease generation."""
    return (job.job_id, job.lease_generation)


def _process_target(registration: _Registration) -> Any:
    """What is pickled to the process: the task (by name, see ``Task.__reduce__``) or the function."""
    return registration.task if registration.task is not None else registration.run


def _run_in_process(target: Any, context: ProcessJobContext) -> Any:
    """Runs in the pool's process: a task decodes its typed payload there, a plain handler gets the context."""
    from .tasks import Task

    return target.invoke(context) if isinstance(target, Task) else target(context)


def _result_bytes(value: Any) -> Optional[bytes]:
    """What a handler returned as the job's result: bytes as they are, ``None`` as no result, else JSON."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return json.dumps(to_json_value(value), separators=(",", ":")).encode()


def _with_deadline(job: Job, deadline_us: int) -> Job:
    from dataclasses import replace

    return replace(job, lease_deadline_us=deadline_us)


__all__ = [
    "CANCELLED",
    "LEASE_LOST",
    "SHUTDOWN",
    "TIMEOUT",
    "ExecutorOption",
    "JobContext",
    "ProcessJobContext",
    "SyncJobContext",
    "Worker",
]
