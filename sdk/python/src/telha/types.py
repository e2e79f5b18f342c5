"""The values the SDK hands out and takes in, and their wire form (messages generated from ``proto/``)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union, cast

from ._gen.telha.v1 import queue_pb2 as pb
from .errors import InvalidArgument


class JobState(enum.IntEnum):
    """Where a job is in its life (the wire's ``JobState``)."""

    PENDING = pb.JOB_STATE_PENDING
    LEASED = pb.JOB_STATE_LEASED
    COMPLETED = pb.JOB_STATE_COMPLETED
    DEAD = pb.JOB_STATE_DEAD
    CANCELLED = pb.JOB_STATE_CANCELLED

    @property
    def final(self) -> bool:
        return self in (JobState.COMPLETED, JobState.DEAD, JobState.CANCELLED)


@dataclass(frozen=True)
class Scope:
    """Which namespace a call addresses: a tenant's, or the system scope. ``None`` in a call means the
    token's own scope (tenants) or every scope (operators), as the call allows."""

    tenant: Optional[str] = None
    system: bool = False

    @classmethod
    def of(cls, tenant: str) -> "Scope":
        return cls(tenant=tenant)

    def to_wire(self) -> pb.Scope:
        return pb.Scope(system=True) if self.system else pb.Scope(tenant=self.tenant or "")


#: The system scope (``system:`` kinds live there).
SYSTEM = Scope(system=True)

ScopeLike = Union[Scope, str, None]


def state_to_wire(state: Optional[JobState]) -> "pb.JobState":
    """The wire's number for ``state`` (the same numbers), ``UNSPECIFIED`` (0) for ``None``."""
    return cast("pb.JobState", int(state) if state is not None else pb.JOB_STATE_UNSPECIFIED)


def scope_to_wire(scope: ScopeLike) -> Optional[pb.Scope]:
    """``None`` stays unset; a string names a tenant."""
    if scope is None:
        return None
    return Scope(tenant=scope).to_wire() if isinstance(scope, str) else scope.to_wire()


def payload_bytes(payload: Any) -> bytes:
    """Bytes travel as they are, a string as its UTF-8 bytes (as the TypeScript SDK sends them),
    anything else as JSON text; ``None`` is an empty payload."""
    if payload is None:
        return b""
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload)
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(to_json_value(payload), separators=(",", ":")).encode()


def to_json_value(value: Any) -> Any:
    """A pydantic model (v1 or v2) or a dataclass as plain JSON values; anything else as it is."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "json") and hasattr(value, "__fields__") and not isinstance(value, type):
        return json.loads(value.json())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _json(data: Optional[bytes], what: str) -> Any:
    if data is None or data == b"":
        return None
    try:
        return json.loads(data.decode())
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"the {what} is {len(data)} bytes that are not UTF-8 JSON text") from error


@dataclass(frozen=True)
class JobEvent:
    at_us: int
    transition: str
    detail: Optional[str]


@dataclass(frozen=True)
class Job:
    """One job as the server holds it. Times are µs since the epoch, as on the wire."""

    job_id: str
    tenant: str
    kind: str
    payload: bytes
    priority: int
    created_at_us: int
    state: JobState
    attempts: int
    #: The fencing token: incremented on every lease.
    lease_generation: int
    effective_max_attempts: int
    worker_id: Optional[str] = None
    lease_deadline_us: Optional[int] = None
    not_before_us: Optional[int] = None
    idempotency_key: Optional[str] = None
    max_attempts: Optional[int] = None
    continuation: Optional[bytes] = None
    attempt_deadline_us: Optional[int] = None
    timeout_secs: Optional[int] = None
    #: What the handler returned, as stored (JSON text unless it returned bytes).
    result: Optional[bytes] = None
    #: The last progress reported, as JSON text.
    progress: Optional[str] = None
    events: Sequence[JobEvent] = ()
    #: The producer's W3C trace context as a carrier (``traceparent``, and ``tracestate`` when set), for an
    #: OpenTelemetry propagator's ``extract``; ``None`` when the producer traced nothing.
    trace_context: Optional[dict[str, str]] = None
    #: The latest-wins key it was enqueued with.
    supersede_key: Optional[str] = None
    #: The job that replaced this one (it was cancelled with reason superseded).
    superseded_by: Optional[str] = None
    #: With ``debounce_max_ms``: the latest this job's debounce run may become due (µs since the epoch).
    debounce_until_us: Optional[int] = None
    #: The ordered key the job was enqueued with; ``None`` for none.
    order_key: Optional[str] = None
    #: True while the job waits for its turn behind the head of its ordered key.
    order_waiting: bool = False

    def payload_json(self) -> Any:
        """The payload read as JSON."""
        return _json(self.payload, "payload")

    def result_json(self) -> Any:
        """The result read as JSON; ``None`` for none."""
        return _json(self.result, "result")

    @classmethod
    def from_wire(cls, job: pb.Job) -> "Job":
        def opt(name: str) -> Any:
            return getattr(job, name) if job.HasField(name) else None

        return cls(
            job_id=job.job_id,
            tenant=job.tenant,
            kind=job.kind,
            payload=job.payload,
            priority=job.priority,
            created_at_us=job.created_at_us,
            state=JobState(job.state),
            attempts=job.attempts,
            lease_generation=job.lease_generation,
            effective_max_attempts=job.effective_max_attempts,
            worker_id=opt("worker_id"),
            lease_deadline_us=opt("lease_deadline_us"),
            not_before_us=opt("not_before_us"),
            idempotency_key=opt("idempotency_key"),
            max_attempts=opt("max_attempts"),
            continuation=opt("continuation"),
            attempt_deadline_us=opt("attempt_deadline_us"),
            timeout_secs=opt("timeout_secs"),
            result=opt("result"),
            progress=opt("progress"),
            events=tuple(
                JobEvent(e.at_us, e.transition, e.detail if e.HasField("detail") else None) for e in job.events
            ),
            trace_context=_carrier(job.trace_context) if job.HasField("trace_context") else None,
            supersede_key=opt("supersede_key"),
            superseded_by=opt("superseded_by"),
            debounce_until_us=opt("debounce_until_us"),
            order_key=opt("order_key"),
            order_waiting=job.order_waiting,
        )


def _carrier(context: pb.TraceContext) -> dict[str, str]:
    carrier = {"traceparent": context.traceparent}
    if context.tracestate:
        carrier["tracestate"] = context.tracestate
    return carrier


Seconds = Union[float, dt.timedelta]

#: What an enqueue with a ``supersede_key`` does to a Leased holder of the key: ``"pending"`` (the
#: default) replaces only a Pending one, ``"leased"`` cancels a Leased one too (its fence refuses
#: whatever it submits later).
SupersedeMode = Literal["pending", "leased"]
_SUPERSEDE_MODES = {"pending": pb.SUPERSEDE_MODE_PENDING, "leased": pb.SUPERSEDE_MODE_LEASED}


def _seconds(value: Seconds) -> float:
    return value.total_seconds() if isinstance(value, dt.timedelta) else float(value)


@dataclass(frozen=True)
class NewJob:
    """A job to enqueue. ``payload``: bytes, a string, or a JSON value (a pydantic model or dataclass too)."""

    kind: str
    payload: Any = None
    #: 0-255, lower is sooner; the server's default is 128.
    priority: Optional[int] = None
    #: Not leased before this long from now (seconds or a timedelta).
    delay: Optional[Seconds] = None
    #: Not leased before this time (wins over ``delay``); a naive datetime is read as UTC.
    not_before: Optional[dt.datetime] = None
    max_attempts: Optional[int] = None
    #: A repeat in the same scope returns the first job (``created`` is False).
    idempotency_key: Optional[str] = None
    #: The longest one attempt may run, heartbeats or not (seconds or a timedelta).
    timeout: Optional[Seconds] = None
    #: A W3C trace context carrier (``traceparent``, optionally ``tracestate``), as an OpenTelemetry
    #: propagator's ``inject`` fills a dict: workers' attempts then join the producer's trace.
    trace_context: Optional[dict[str, str]] = None
    #: Latest wins (1-255 bytes): the Pending job holding this key in the scope is cancelled (reason
    #: superseded, linked to this job) in the same write.
    supersede_key: Optional[str] = None
    #: With ``supersede_key``: whether a Leased holder is cancelled too (``"leased"``) or runs on (``"pending"``).
    supersede: Optional[SupersedeMode] = None
    #: Debounce (trailing), with ``supersede_key``: due this many ms after the latest enqueue with the
    #: key, carrying the latest payload. Not with ``delay`` or ``not_before``.
    debounce_ms: Optional[int] = None
    #: With ``debounce_ms``: due at most this many ms after the first enqueue of the current debounce
    #: run, however many enqueues arrive after it (at least ``debounce_ms``).
    debounce_max_ms: Optional[int] = None
    #: Ordered key: jobs with the same key in the same scope run one at a time, in enqueue order
    #: (priority is not looked at within a key), and a failed job's backoff keeps the key.
    order_key: Optional[str] = None
    #: What going dead does to ``order_key``: ``"block"`` (the server's default) or ``"release"``.
    order_on_dead: Optional[str] = None

    def to_wire(self) -> pb.NewJob:
        message = pb.NewJob(kind=self.kind, payload=payload_bytes(self.payload))
        if self.priority is not None:
            message.priority = self.priority
        if self.delay is not None:
            message.delay_ms = round(_seconds(self.delay) * 1000)
        if self.not_before is not None:
            when = self.not_before if self.not_before.tzinfo else self.not_before.replace(tzinfo=dt.timezone.utc)
            message.not_before_us = round(when.timestamp() * 1_000_000)
        if self.max_attempts is not None:
            message.max_attempts = self.max_attempts
        if self.idempotency_key is not None:
            message.idempotency_key = self.idempotency_key
        if self.timeout is not None:
            message.timeout_secs = max(1, round(_seconds(self.timeout)))
        if self.trace_context is not None and "traceparent" in self.trace_context:
            message.trace_context.traceparent = self.trace_context["traceparent"]
            message.trace_context.tracestate = self.trace_context.get("tracestate", "")
        if self.supersede_key is not None:
            message.supersede_key = self.supersede_key
        if self.supersede is not None:
            if self.supersede not in _SUPERSEDE_MODES:
                raise InvalidArgument(
                    f'supersede must be "pending" or "leased", not {self.supersede!r}', field="job.supersede"
                )
            message.supersede = _SUPERSEDE_MODES[self.supersede]
        if self.debounce_ms is not None:
            message.debounce_ms = self.debounce_ms
        if self.debounce_max_ms is not None:
            message.debounce_max_ms = self.debounce_max_ms
        if self.order_key is not None:
            message.order_key = self.order_key
        if self.order_on_dead is not None:
            policy = _ORDER_DEAD_POLICIES.get(self.order_on_dead)
            message.order_on_dead = policy if policy is not None else cast(Any, -1)
        return message


# A policy this SDK does not know travels as -1, which the server refuses naming order_on_dead.
_ORDER_DEAD_POLICIES = {"block": pb.ORDER_DEAD_POLICY_BLOCK, "release": pb.ORDER_DEAD_POLICY_RELEASE}


@dataclass(frozen=True)
class EnqueueResult:
    job: Job
    #: False when the idempotency key matched an existing job (nothing was written).
    created: bool

    @classmethod
    def from_wire(cls, result: pb.EnqueueResult) -> "EnqueueResult":
        return cls(Job.from_wire(result.job), result.created)


@dataclass(frozen=True)
class Page:
    """One page of ``Client.list``: pass ``next_page_token`` back for the next; ``None`` at the end."""

    jobs: Sequence[Job]
    next_page_token: Optional[str]


@dataclass(frozen=True)
class CountRow:
    state: JobState
    kind: str
    count: int


@dataclass(frozen=True)
class WatchEvent:
    """One transition of one job, as ``Client.watch`` yields it."""

    sequence: int
    #: enqueued, leased, progress, completed, failed, dead, reaped, released, retried, cancelled
    transition: str
    detail: Optional[str]
    at_us: int
    #: The job as written, with its result; without payload and continuation.
    job: Job
    #: Pass as ``resume_token`` to continue after this event.
    resume_token: str


@dataclass(frozen=True)
class JobResult:
    """A completed job and what its handler returned."""

    job: Job
    result: Optional[bytes]

    def json(self) -> Any:
        return self.job.result_json()


@dataclass(frozen=True)
class KindPause:
    kind_prefix: str
    everywhere: bool
    tenant: Optional[str]
    system: bool
    paused_at_us: int
    paused_by: str

    @classmethod
    def from_wire(cls, pause: pb.KindPause) -> "KindPause":
        scope = pause.scope if pause.HasField("scope") else None
        return cls(
            kind_prefix=pause.kind_prefix,
            everywhere=pause.everywhere,
            tenant=scope.tenant if scope is not None and scope.WhichOneof("target") == "tenant" else None,
            system=scope is not None and scope.WhichOneof("target") == "system",
            paused_at_us=pause.paused_at_us,
            paused_by=pause.paused_by,
        )


@dataclass(frozen=True)
class KindLimit:
    kind_prefix: str
    concurrency: Optional[int]
    rate: Optional[str]
    set_by: str
    leased: int
    tokens: Optional[int]

    @classmethod
    def from_wire(cls, limit: pb.KindLimit) -> "KindLimit":
        return cls(
            kind_prefix=limit.kind_prefix,
            concurrency=limit.concurrency if limit.HasField("concurrency") else None,
            rate=limit.rate if limit.HasField("rate") else None,
            set_by=limit.set_by,
            leased=limit.leased,
            tokens=limit.tokens if limit.HasField("tokens") else None,
        )


@dataclass(frozen=True)
class TenantLimit:
    """A tenant's limit: ``concurrency`` leased at once, ``rate`` leases per period, ``weight`` in the fair order."""

    tenant: str
    concurrency: Optional[int]
    rate: Optional[str]
    weight: int
    set_by: str
    leased: int
    tokens: Optional[int]

    @classmethod
    def from_wire(cls, limit: pb.TenantLimit) -> "TenantLimit":
        return cls(
            tenant=limit.tenant,
            concurrency=limit.concurrency if limit.HasField("concurrency") else None,
            rate=limit.rate if limit.HasField("rate") else None,
            weight=limit.weight,
            set_by=limit.set_by,
            leased=limit.leased,
            tokens=limit.tokens if limit.HasField("tokens") else None,
        )


@dataclass(frozen=True)
class BlockedKey:
    """An ordered key whose dead head holds it (``order_on_dead="block"``): nothing of the key runs until
    the head is retried or discarded, or the key is released (``Client.release_key``)."""

    #: ``None`` for the system scope.
    tenant: Optional[str]
    order_key: str
    #: The dead job holding the key; ``None`` when its record is gone (pruned past retention).
    head: Optional[Job]
    #: Jobs waiting behind it.
    waiting: int

    @classmethod
    def from_wire(cls, key: pb.BlockedKey) -> "BlockedKey":
        return cls(
            tenant=key.tenant or None,
            order_key=key.order_key,
            head=Job.from_wire(key.head) if key.HasField("head") else None,
            waiting=key.waiting,
        )


@dataclass(frozen=True)
class Schedule:
    name: str
    job: NewJob
    cron: Optional[str] = None
    timezone: Optional[str] = None
    every_secs: Optional[int] = None
    paused: bool = False
    next_due_us: Optional[int] = None
    last_due_us: Optional[int] = None
    tenant: Optional[str] = None
    raw: Optional[pb.Schedule] = field(default=None, repr=False, compare=False)

    @classmethod
    def from_wire(cls, schedule: pb.Schedule) -> "Schedule":
        job = schedule.job
        return cls(
            name=schedule.name,
            job=NewJob(
                kind=job.kind,
                payload=job.payload,
                priority=job.priority if job.HasField("priority") else None,
                max_attempts=job.max_attempts if job.HasField("max_attempts") else None,
                timeout=job.timeout_secs if job.HasField("timeout_secs") else None,
            ),
            cron=schedule.cron if schedule.HasField("cron") else None,
            timezone=schedule.timezone if schedule.HasField("timezone") else None,
            every_secs=schedule.every_secs if schedule.HasField("every_secs") else None,
            paused=schedule.paused,
            next_due_us=schedule.next_due_us if schedule.HasField("next_due_us") else None,
            last_due_us=schedule.last_due_us if schedule.HasField("last_due_us") else None,
            tenant=schedule.scope.tenant or None,
            raw=schedule,
        )
