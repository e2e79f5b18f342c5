"""The asyncio client: enqueue, read, cancel, retry, await results and watch transitions.

Speaks only the wire API in ``proto/`` (stubs generated into ``telha._gen``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
import builtins
from typing import Any, Optional, Protocol, TypeVar, Union

import grpc
import grpc.aio

from ._gen.telha.v1 import queue_pb2 as pb
from ._gen.telha.v1 import queue_pb2_grpc as pb_grpc
from .errors import (
    RESUME_TOKEN_HEADER,
    JobFailed,
    TelhaError,
    Unavailable,
    from_outcome,
    from_rpc_error,
    headers_of,
)
from .types import (
    BlockedKey,
    CountRow,
    EnqueueResult,
    Job,
    JobResult,
    JobState,
    KindLimit,
    KindPause,
    NewJob,
    Page,
    Schedule,
    ScopeLike,
    SupersedeMode,
    TenantLimit,
    WatchEvent,
    scope_to_wire,
    state_to_wire,
)

log = logging.getLogger("telha.client")

#: Where ``telha serve`` listens by default.
DEFAULT_ADDRESS = "127.0.0.1:7070"
#: Seconds a call that does not wait may take (as the TypeScript client's ``timeoutMs``, 30 s).
DEFAULT_TIMEOUT = 30.0
#: A call that is safe to repeat is sent again on UNAVAILABLE or RESOURCE_EXHAUSTED until its
#: ``timeout`` has passed (a restarting server takes seconds to listen again): first after this
#: pause, doubled each time up to ``RETRY_MAX_DELAY``.
RETRY_FIRST_DELAY = 0.05
RETRY_MAX_DELAY = 2.0
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

T = TypeVar("T")


def final_outcome(job: Job) -> Optional[JobResult]:
    """A Completed job's result; raises ``JobFailed`` for a Dead or Cancelled one; ``None`` while it may still run."""
    if job.state is JobState.COMPLETED:
        return JobResult(job, job.result)
    if job.state in (JobState.DEAD, JobState.CANCELLED):
        raise JobFailed(job)
    return None


class Client:
    """A connection to ``telha serve``. Use as ``async with Client() as client:``, or ``await client.close()``.

    ``address`` defaults to ``$TELHA_ADDRESS`` (else ``127.0.0.1:7070``), ``token`` to ``$TELHA_TOKEN``.
    With ``tls=True`` the system's roots are trusted, or ``ca`` (PEM bytes).
    """

    def __init__(
        self,
        address: Optional[str] = None,
        *,
        token: Optional[str] = None,
        tls: bool = False,
        ca: Optional[bytes] = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.address = address or os.environ.get("TELHA_ADDRESS") or DEFAULT_ADDRESS
        token = token if token is not None else os.environ.get("TELHA_TOKEN") or None
        self.timeout = timeout
        options = [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            # Reconnect quickly when a restarted server comes back (as the TypeScript client).
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 2_000),
        ]
        if tls or ca is not None:
            self._channel = grpc.aio.secure_channel(self.address, grpc.ssl_channel_credentials(ca), options=options)
        else:
            self._channel = grpc.aio.insecure_channel(self.address, options=options)
        # The token travels in metadata only; it is never logged or shown in repr().
        self._metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        # The gRPC plugin's stubs carry no type hints: each method is a grpc.aio multi-callable.
        self.stub: Any = pb_grpc.QueueServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._results: Optional[_ResultFollower] = None
        self._closed = False

    def __repr__(self) -> str:
        return f"Client(address={self.address!r})"

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Ends every call of this client (watches, result waits) and its connection. A second call does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._results is not None:
            await self._results.close()
        await self._channel.close()

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    async def wait_ready(self, timeout: Optional[float] = None) -> None:
        """Wait until the server at ``address`` is reachable (``Unavailable`` after ``timeout``)."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(), timeout if timeout is not None else self.timeout)
        except asyncio.TimeoutError:
            raise Unavailable(f"no Telha server reachable at {self.address}") from None

    async def _call(self, method: Callable[..., Awaitable[T]], request: Any, *, safe: bool = False) -> T:
        """One unary call; errors as ``TelhaError``. A ``safe`` call (a read, or a write that cannot
        apply twice) is sent again with backoff on UNAVAILABLE or RESOURCE_EXHAUSTED for as long as
        the client's ``timeout`` allows, so it outlasts a server restart."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        delay = RETRY_FIRST_DELAY
        while True:
            try:
                return await method(request, metadata=self._metadata, timeout=max(0.0, deadline - loop.time()))
            except grpc.aio.AioRpcError as raw:
                error = from_rpc_error(raw)
                if not (safe and error.retryable) or loop.time() + delay >= deadline or self._closed:
                    raise error from None
                log.debug("retrying %s after %s (%s)", type(request).__name__, error.code, error.message)
            await asyncio.sleep(delay)
            delay = min(RETRY_MAX_DELAY, delay * 2)

    # Producing

    async def enqueue(
        self,
        kind: Union[str, NewJob, "TaskLike"],
        payload: Any = None,
        *,
        scope: ScopeLike = None,
        priority: Optional[int] = None,
        delay: Optional[float] = None,
        not_before: Any = None,
        max_attempts: Optional[int] = None,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
        supersede_key: Optional[str] = None,
        supersede: Optional[SupersedeMode] = None,
        debounce_ms: Optional[int] = None,
        debounce_max_ms: Optional[int] = None,
        order_key: Optional[str] = None,
        order_on_dead: Optional[str] = None,
    ) -> EnqueueResult:
        """Enqueue one job. ``kind`` may be a kind, a ``NewJob``, or a ``@task`` (whose payload type is then
        checked here: ``InvalidArgument`` naming the field). With an ``idempotency_key`` already used in the
        scope, the existing job comes back with ``created=False``. With a ``supersede_key``, latest wins:
        the Pending job holding the key in the scope is cancelled in the same write (``superseded_by``
        names this job); ``supersede="leased"`` cancels a Leased holder too; ``debounce_ms`` makes the
        job due that long after the latest enqueue with the key, and ``debounce_max_ms`` at most that long
        after the first enqueue of the run (see ``NewJob``)."""
        job = (
            kind
            if isinstance(kind, NewJob)
            else _new_job(
                kind,
                payload,
                priority=priority,
                delay=delay,
                not_before=not_before,
                max_attempts=max_attempts,
                idempotency_key=idempotency_key,
                timeout=timeout,
                supersede_key=supersede_key,
                supersede=supersede,
                debounce_ms=debounce_ms,
                debounce_max_ms=debounce_max_ms,
                order_key=order_key,
                order_on_dead=order_on_dead,
            )
        )
        request = pb.EnqueueRequest(scope=scope_to_wire(scope), job=job.to_wire())
        response = await self._call(self.stub.Enqueue, request, safe=job.idempotency_key is not None)
        return EnqueueResult.from_wire(response.result)

    async def enqueue_batch(self, jobs: Iterable[NewJob], *, scope: ScopeLike = None) -> builtins.list[EnqueueResult]:
        """Enqueue several jobs in one atomic write: all of them, or (an error raised) none."""
        request = pb.EnqueueBatchRequest(scope=scope_to_wire(scope), jobs=[j.to_wire() for j in jobs])
        response = await self._call(self.stub.EnqueueBatch, request)
        return [EnqueueResult.from_wire(r) for r in response.results]

    async def enqueue_each(
        self, jobs: Iterable[NewJob], *, scope: ScopeLike = None
    ) -> builtins.list[Union[EnqueueResult, TelhaError]]:
        """Enqueue several jobs, each on its own: an invalid one comes back as its error, the others are stored."""
        jobs = list(jobs)
        request = pb.EnqueueEachRequest(scope=scope_to_wire(scope), jobs=[j.to_wire() for j in jobs])
        response = await self._call(self.stub.EnqueueEach, request)
        answers: builtins.list[Union[EnqueueResult, TelhaError]] = []
        for answer in response.answers:
            if answer.WhichOneof("answer") == "result":
                answers.append(EnqueueResult.from_wire(answer.result))
            else:
                answers.append(from_outcome(answer.error, "") or TelhaError("empty answer"))
        return answers

    # Reading

    async def show(self, job_id: str) -> Job:
        """The whole record of one job, with its events. ``NotFound`` for an unknown id."""
        response = await self._call(self.stub.Show, pb.ShowRequest(job_id=job_id), safe=True)
        return Job.from_wire(response.job)

    get = show

    async def list(
        self,
        *,
        scope: ScopeLike = None,
        state: Optional[JobState] = None,
        kind_prefix: str = "",
        limit: int = 100,
        page_token: Optional[str] = None,
    ) -> Page:
        """One page of jobs in key order; pass ``next_page_token`` back for the next."""
        request = pb.ListRequest(
            scope=scope_to_wire(scope),
            state=state_to_wire(state),
            kind_prefix=kind_prefix,
            limit=limit,
            page_token=page_token or "",
        )
        response = await self._call(self.stub.List, request, safe=True)
        return Page([Job.from_wire(j) for j in response.jobs], response.next_page_token or None)

    async def jobs(
        self, *, scope: ScopeLike = None, state: Optional[JobState] = None, kind_prefix: str = "", page_size: int = 1000
    ) -> AsyncIterator[Job]:
        """Every matching job, page after page."""
        token: Optional[str] = None
        while True:
            page = await self.list(scope=scope, state=state, kind_prefix=kind_prefix, limit=page_size, page_token=token)
            for job in page.jobs:
                yield job
            if page.next_page_token is None:
                return
            token = page.next_page_token

    async def counts(self, scope: ScopeLike = None) -> builtins.list[CountRow]:
        """Jobs per state and kind."""
        response = await self._call(self.stub.Counts, pb.CountsRequest(scope=scope_to_wire(scope)), safe=True)
        return [CountRow(JobState(r.state), r.kind, r.count) for r in response.rows]

    # Managing

    async def cancel(self, job_id: str, reason: Optional[str] = None) -> Job:
        """Cancel a pending or leased job; its worker is fenced out (``LeaseConflict``, reason ``cancelled``)."""
        request = _with(pb.CancelRequest(job_id=job_id), reason=reason)
        response = await self._call(self.stub.Cancel, request)
        return Job.from_wire(response.job)

    async def cancel_matching(
        self, *, scope: ScopeLike = None, state: Optional[JobState] = None, kind_prefix: str = ""
    ) -> int:
        """Cancel every pending or leased job of a scope and kind prefix; how many were cancelled."""
        request = pb.CancelMatchingRequest(
            scope=scope_to_wire(scope), state=state_to_wire(state), kind_prefix=kind_prefix
        )
        return int((await self._call(self.stub.CancelMatching, request)).cancelled)

    async def retry(self, job_id: str) -> Job:
        """Move a dead or cancelled job back to pending with its attempts reset (operators)."""
        response = await self._call(self.stub.Retry, pb.RetryRequest(job_id=job_id))
        return Job.from_wire(response.job)

    async def retry_many(self, job_ids: Iterable[str]) -> builtins.list[Union[Job, TelhaError]]:
        """Retry each job on its own: a job that cannot be retried comes back as its error."""
        outcomes: builtins.list[Union[Job, TelhaError]] = []
        for job_id in job_ids:
            try:
                outcomes.append(await self.retry(job_id))
            except TelhaError as error:
                outcomes.append(error)
        return outcomes

    async def retry_matching(
        self, *, scope: ScopeLike = None, kind_prefix: str = "", state: JobState = JobState.DEAD
    ) -> builtins.list[Union[Job, TelhaError]]:
        """Retry every Dead (or Cancelled) job of a scope and kind prefix."""
        ids = [job.job_id async for job in self.jobs(scope=scope, state=state, kind_prefix=kind_prefix)]
        return await self.retry_many(ids)

    # Pauses, kind limits and schedules (operators, and tenants in their own scope where allowed)

    async def pause(self, kind_prefix: str, *, scope: ScopeLike = None, everywhere: bool = False) -> KindPause:
        request = pb.PauseKindsRequest(scope=scope_to_wire(scope), everywhere=everywhere, kind_prefix=kind_prefix)
        return KindPause.from_wire((await self._call(self.stub.PauseKinds, request, safe=True)).pause)

    async def resume(self, kind_prefix: str, *, scope: ScopeLike = None, everywhere: bool = False) -> None:
        request = pb.ResumeKindsRequest(scope=scope_to_wire(scope), everywhere=everywhere, kind_prefix=kind_prefix)
        await self._call(self.stub.ResumeKinds, request)

    async def pauses(self, scope: ScopeLike = None) -> builtins.list[KindPause]:
        response = await self._call(self.stub.ListPauses, pb.ListPausesRequest(scope=scope_to_wire(scope)), safe=True)
        return [KindPause.from_wire(p) for p in response.pauses]

    async def set_kind_limit(
        self, kind_prefix: str, *, concurrency: Optional[int] = None, rate: Optional[str] = None
    ) -> KindLimit:
        """At most ``concurrency`` jobs of the prefix leased at once and ``rate`` (``"100/s"``) leases per period."""
        request = _with(pb.SetKindLimitRequest(kind_prefix=kind_prefix), concurrency=concurrency, rate=rate)
        return KindLimit.from_wire((await self._call(self.stub.SetKindLimit, request, safe=True)).limit)

    async def clear_kind_limit(self, kind_prefix: str) -> None:
        await self._call(self.stub.ClearKindLimit, pb.ClearKindLimitRequest(kind_prefix=kind_prefix))

    async def kind_limits(self) -> builtins.list[KindLimit]:
        response = await self._call(self.stub.ListKindLimits, pb.ListKindLimitsRequest(), safe=True)
        return [KindLimit.from_wire(limit) for limit in response.limits]

    async def set_tenant_limit(
        self,
        tenant: str,
        *,
        concurrency: Optional[int] = None,
        rate: Optional[str] = None,
        weight: Optional[int] = None,
    ) -> TenantLimit:
        """At most ``concurrency`` of the tenant's jobs leased at once, ``rate`` (``"100/s"``) leases per
        period, and ``weight`` (1-1,000) in the fleet's fair order. Operators only."""
        request = _with(
            pb.SetTenantLimitRequest(tenant=tenant), concurrency=concurrency, rate=rate, weight=weight
        )
        return TenantLimit.from_wire((await self._call(self.stub.SetTenantLimit, request, safe=True)).limit)

    async def clear_tenant_limit(self, tenant: str) -> None:
        await self._call(self.stub.ClearTenantLimit, pb.ClearTenantLimitRequest(tenant=tenant))

    async def tenant_limits(self) -> builtins.list[TenantLimit]:
        response = await self._call(self.stub.ListTenantLimits, pb.ListTenantLimitsRequest(), safe=True)
        return [TenantLimit.from_wire(limit) for limit in response.limits]

    async def blocked_keys(self, *, scope: ScopeLike = None, limit: int = 0) -> builtins.list[BlockedKey]:
        """The ordered keys a dead head blocks, in ``scope`` (operators: unset for every scope; tenants:
        their own), at most ``limit`` (0: 100)."""
        request = pb.ListBlockedKeysRequest(scope=scope_to_wire(scope), limit=limit)
        response = await self._call(self.stub.ListBlockedKeys, request, safe=True)
        return [BlockedKey.from_wire(key) for key in response.keys]

    async def release_key(self, order_key: str, *, scope: ScopeLike = None) -> Optional[Job]:
        """Let a blocked ordered key move on: its dead head leaves the key (it stays dead) and the next job
        runs; returns that job, or ``None`` when none waited. ``FailedPrecondition`` when the key is not
        blocked, ``NotFound`` when it has no jobs."""
        request = pb.ReleaseKeyRequest(scope=scope_to_wire(scope), order_key=order_key)
        response = await self._call(self.stub.ReleaseKey, request)
        return Job.from_wire(response.next) if response.HasField("next") else None

    async def create_schedule(
        self,
        name: str,
        job: NewJob,
        *,
        cron: Optional[str] = None,
        every_secs: Optional[int] = None,
        timezone: Optional[str] = None,
        paused: bool = False,
        scope: ScopeLike = None,
    ) -> Schedule:
        """Enqueue ``job`` at each due time of ``cron`` or every ``every_secs``; exactly one of them."""
        schedule = _with(
            pb.Schedule(scope=scope_to_wire(scope), name=name, job=job.to_wire(), paused=paused),
            cron=cron,
            every_secs=every_secs,
            timezone=timezone,
        )
        response = await self._call(self.stub.CreateSchedule, pb.CreateScheduleRequest(schedule=schedule))
        return Schedule.from_wire(response.schedule)

    async def update_schedule(
        self,
        name: str,
        *,
        scope: ScopeLike = None,
        cron: Optional[str] = None,
        every_secs: Optional[int] = None,
        timezone: Optional[str] = None,
        job: Optional[NewJob] = None,
        paused: Optional[bool] = None,
    ) -> Schedule:
        request = _with(
            pb.UpdateScheduleRequest(scope=scope_to_wire(scope), name=name, job=job.to_wire() if job else None),
            cron=cron,
            every_secs=every_secs,
            timezone=timezone,
            paused=paused,
        )
        return Schedule.from_wire((await self._call(self.stub.UpdateSchedule, request)).schedule)

    async def get_schedule(self, name: str, *, scope: ScopeLike = None) -> Schedule:
        request = pb.GetScheduleRequest(scope=scope_to_wire(scope), name=name)
        return Schedule.from_wire((await self._call(self.stub.GetSchedule, request, safe=True)).schedule)

    async def schedules(self, *, scope: ScopeLike = None) -> builtins.list[Schedule]:
        """Every schedule of the scope (all scopes for an operator without one), page after page."""
        found: builtins.list[Schedule] = []
        token = ""
        while True:
            request = pb.ListSchedulesRequest(scope=scope_to_wire(scope), limit=1000, page_token=token)
            response = await self._call(self.stub.ListSchedules, request, safe=True)
            found.extend(Schedule.from_wire(s) for s in response.schedules)
            token = response.next_page_token
            if not token:
                return found

    async def delete_schedule(self, name: str, *, scope: ScopeLike = None) -> None:
        await self._call(self.stub.DeleteSchedule, pb.DeleteScheduleRequest(scope=scope_to_wire(scope), name=name))

    async def run_schedule(self, name: str, *, scope: ScopeLike = None) -> EnqueueResult:
        """Enqueue the schedule's job now, outside its timing: its next due time stays, and a paused schedule
        stays paused. ``created`` is False when a run in the same millisecond enqueued it already."""
        request = pb.RunScheduleRequest(scope=scope_to_wire(scope), name=name)
        response = await self._call(self.stub.RunSchedule, request)
        return EnqueueResult(job=Job.from_wire(response.job), created=response.created)

    # Watching

    def watch(
        self,
        *,
        scope: ScopeLike = None,
        kind_prefix: str = "",
        job_id: str = "",
        states: Iterable[JobState] = (),
        resume_token: Optional[str] = None,
    ) -> "Watch":
        """The transitions of jobs as the server commits them, as an async iterator (``async for event in
        client.watch(...)``); ``await watch.open()`` first to know every later transition is seen. When the
        server goes away (a restart, a dropped connection) it waits for it and resumes after the last event
        seen: none missed, none repeated. Pass an event's ``resume_token`` to continue a watch later. A token
        the server no longer holds the events after raises ``FailedPrecondition``: read the jobs, then watch
        again without one."""
        return Watch(
            self._watch_responses(
                scope=scope, kind_prefix=kind_prefix, job_id=job_id, states=states, resume_token=resume_token
            )
        )

    async def _watch_responses(
        self,
        *,
        scope: ScopeLike = None,
        kind_prefix: str = "",
        job_id: str = "",
        states: Iterable[JobState] = (),
        resume_token: Optional[str] = None,
    ) -> AsyncGenerator[pb.WatchResponse, None]:
        """Watch's messages, the first (no events) once the watch is open; reopened with the last token
        when the server drops it for a reason a reopen cures."""
        token = resume_token or ""
        wire_states = [state_to_wire(state) for state in states]
        while True:
            request = pb.WatchRequest(
                scope=scope_to_wire(scope), kind_prefix=kind_prefix, job_id=job_id, states=wire_states, resume_token=token
            )
            call = self.stub.Watch(request, metadata=self._metadata)
            try:
                async for response in call:
                    token = response.resume_token or token
                    yield response
                return
            except grpc.aio.AioRpcError as raw:
                code = raw.code()
                trailers = headers_of(raw.trailing_metadata())
                resumable = code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED) or (
                    code == grpc.StatusCode.RESOURCE_EXHAUSTED and RESUME_TOKEN_HEADER in trailers
                )
                if not resumable or token == "" or self._closed:
                    raise from_rpc_error(raw) from None
                log.info("watch ended (%s); resuming after the last event", code.name)
            finally:
                call.cancel()
            # A restarting server is not listening yet: wait for it rather than spin.
            await self._channel.channel_ready()

    async def result(self, job_id: str, *, timeout: Optional[float] = None) -> JobResult:
        """Wait for a job's outcome, without polling: its result once Completed; ``JobFailed`` once Dead
        or Cancelled; ``Unavailable`` after ``timeout`` seconds (default: no limit). Every waiter of this
        client shares one Watch stream."""
        if self._results is None:
            self._results = _ResultFollower(self)
        try:
            return await asyncio.wait_for(self._results.wait(job_id), timeout)
        except asyncio.TimeoutError:
            raise Unavailable(f"job {job_id} has no outcome after {timeout} s") from None


class Watch:
    """An open (or opening) Watch: an async iterator of ``WatchEvent`` and an async context manager."""

    def __init__(self, responses: AsyncGenerator[pb.WatchResponse, None]) -> None:
        self._responses = responses
        self._events: deque[WatchEvent] = deque()
        self._opened_at: Optional[str] = None

    async def open(self) -> str:
        """Wait until the server has opened the watch: every transition committed after this returns is
        seen. Returns the token it delivers from."""
        if self._opened_at is None:
            self._take(await self._responses.__anext__())
        assert self._opened_at is not None
        return self._opened_at

    def _take(self, response: pb.WatchResponse) -> None:
        if self._opened_at is None:
            self._opened_at = response.resume_token
        for event in response.events:
            self._events.append(
                WatchEvent(
                    sequence=event.sequence,
                    transition=event.transition,
                    detail=event.detail if event.HasField("detail") else None,
                    at_us=event.at_us,
                    job=Job.from_wire(event.job),
                    resume_token=event.resume_token,
                )
            )

    def __aiter__(self) -> "Watch":
        return self

    async def __anext__(self) -> WatchEvent:
        while not self._events:
            self._take(await self._responses.__anext__())
        return self._events.popleft()

    async def aclose(self) -> None:
        """End the watch (its stream is cancelled)."""
        await self._responses.aclose()

    async def __aenter__(self) -> "Watch":
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


#: The states a job's outcome leaves it in: all the result stream asks the server for.
OUTCOME_STATES = (JobState.COMPLETED, JobState.DEAD, JobState.CANCELLED)


class _ResultFollower:
    """One Watch stream (every job in the token's reach, outcomes only) serving every ``result`` waiter
    of a client, open while anyone waits. A waiter watches before it reads the job, so a completion
    between the two is not missed.

    One stream, not one per waiter, and only outcomes on it: each stream is one more read of the
    server's log on every commit, and an unfiltered one carries every enqueue, lease and heartbeat of
    every job to a client that waits for a few completions (bench/RESULTS.md, "client.result with many
    waiters", measured it for the TypeScript client, which does the same)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._waiters: dict[str, list[asyncio.Future[JobResult]]] = {}
        self._task: Optional[asyncio.Task[None]] = None
        self._opened: Optional[asyncio.Future[None]] = None

    async def wait(self, job_id: str) -> JobResult:
        future: asyncio.Future[JobResult] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(job_id, []).append(future)
        try:
            await self._ensure_open()
            # The watch is open: any transition from here on reaches the waiter; read what came before.
            self._settle(await self._client.show(job_id))
            return await future
        finally:
            waiting = self._waiters.get(job_id, [])
            if future in waiting:
                waiting.remove(future)
            if not waiting:
                self._waiters.pop(job_id, None)
            if not self._waiters and self._task is not None:
                self._task.cancel()
                self._task = None
                self._opened = None

    async def _ensure_open(self) -> None:
        if self._task is None:
            self._opened = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._follow(self._opened))
        assert self._opened is not None
        await asyncio.shield(self._opened)

    def _settle(self, job: Job) -> None:
        waiting = self._waiters.get(job.job_id)
        if not waiting:
            return
        try:
            outcome = final_outcome(job)
        except JobFailed as failed:
            for future in waiting:
                if not future.done():
                    future.set_exception(failed)
            return
        if outcome is not None:
            for future in waiting:
                if not future.done():
                    future.set_result(outcome)

    async def _follow(self, opened: asyncio.Future[None]) -> None:
        lost_place = False
        try:
            while True:
                try:
                    async for response in self._client._watch_responses(states=OUTCOME_STATES):
                        if not opened.done():
                            opened.set_result(None)
                        if lost_place:
                            # Open again from now: what happened while we had no place is read from the jobs.
                            lost_place = False
                            for job_id in list(self._waiters):
                                self._settle(await self._client.show(job_id))
                        for event in response.events:
                            if event.job.job_id not in self._waiters:
                                continue
                            job = Job.from_wire(event.job)
                            # An event carries a small result only; a completion without one may have a bigger one.
                            if job.state is JobState.COMPLETED and job.result is None:
                                job = await self._client.show(job.job_id)
                            self._settle(job)
                    return
                except TelhaError as error:
                    if not opened.done():
                        opened.set_exception(error)
                        return
                    # The server no longer holds what followed our token (FAILED_PRECONDITION): watch afresh.
                    log.info("result watch lost its place (%s); watching again", error.code)
                    lost_place = True
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # reported to every waiter
            for waiting in self._waiters.values():
                for future in waiting:
                    if not future.done():
                        future.set_exception(error)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        for waiting in self._waiters.values():
            for future in waiting:
                if not future.done():
                    future.set_exception(Unavailable("the client was closed"))


class TaskLike(Protocol):
    """What ``Client.enqueue`` needs of a ``@task``: its kind, and its payload checked and encoded."""

    kind: str

    def payload_for_enqueue(self, payload: Any) -> Any: ...


M = TypeVar("M")


def _with(message: M, **fields: Any) -> M:
    """``message`` with each optional field that is not ``None`` set."""
    for name, value in fields.items():
        if value is not None:
            setattr(message, name, value)
    return message


def _new_job(kind: Union[str, TaskLike], payload: Any, **options: Any) -> NewJob:
    if not isinstance(kind, str):
        payload = kind.payload_for_enqueue(payload)
        kind = kind.kind
    return NewJob(kind=kind, payload=payload, **options)


def jobs_of(kind: Union[str, TaskLike], payloads: Iterable[Any], **options: Any) -> Sequence[NewJob]:
    """One ``NewJob`` per payload, for ``enqueue_batch`` / ``enqueue_each`` (a ``@task``'s payloads are checked)."""
    return [_new_job(kind, payload, **options) for payload in payloads]
