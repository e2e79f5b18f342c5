"""Telha's errors: one exception per code, built from a gRPC status and its metadata.

The same closed set of codes the server maps to gRPC status in one place
(``src/server/status.ts``) and the TypeScript SDK maps back (``src/client/errors.ts``):
an ``except LeaseConflict`` here catches what ``LeaseConflictError`` catches there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal, Optional, Union, cast

import grpc

if TYPE_CHECKING:
    from ._gen.telha.v1 import queue_pb2 as pb
    from .types import Job

REASON_HEADER = "telha-reason"
FIELD_HEADER = "telha-field"
JOB_HEADER = "telha-job-id"
RESUME_TOKEN_HEADER = "telha-resume-token"

LeaseConflictReason = Literal["worker_mismatch", "generation_superseded", "cancelled"]


class TelhaError(Exception):
    """Every error Telha raises on purpose: a stable ``code``, and ``field`` for bad input."""

    code: str = "internal"
    #: Whether the same call may succeed if sent again after a pause.
    retryable: bool = False

    def __init__(self, message: str, *, field: Optional[str] = None, status: Optional[grpc.StatusCode] = None):
        super().__init__(message)
        self.message = message
        #: The offending input, for ``InvalidArgument``.
        self.field = field
        #: The gRPC status the server answered with, when it came from the wire.
        self.status = status


class LeaseConflict(TelhaError):
    """A fenced call from a worker that no longer holds the lease; ``reason`` says why. Nothing was written."""

    code = "lease_conflict"

    def __init__(self, job_id: str, reason: LeaseConflictReason, message: str, **kwargs: object):
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.job_id = job_id
        self.reason: LeaseConflictReason = reason


class NotFound(TelhaError):
    """An unknown job id, or a job outside the caller's scope."""

    code = "not_found"


class InvalidArgument(TelhaError):
    """Bad input; ``field`` names it. Nothing was written."""

    code = "invalid_argument"


class FailedPrecondition(TelhaError):
    """The job (or the system) is not in a state the call applies to: retrying will not help as is."""

    code = "failed_precondition"


class CorruptRecord(TelhaError):
    code = "corrupt_record"


class Unauthenticated(TelhaError):
    """No token, or one the server does not know."""

    code = "unauthenticated"


class PermissionDenied(TelhaError):
    """The token's role may not make this call, or not in this scope."""

    code = "permission_denied"


class ResourceExhausted(TelhaError):
    """The server is overloaded (or out of disk): retry later."""

    code = "resource_exhausted"
    retryable = True


class Unavailable(TelhaError):
    """No server answered, the connection dropped, or the server is shutting down: retry after a pause."""

    code = "unavailable"
    retryable = True


class Internal(TelhaError):
    code = "internal"


class JobFailed(FailedPrecondition):
    """``Client.result`` for a job that ended Dead or Cancelled: ``job`` is its record."""

    def __init__(self, job: "Job"):
        from .types import JobState

        state = "dead" if job.state is JobState.DEAD else "cancelled"
        wanted = "failed" if state == "dead" else "cancelled"
        why = next((e.detail for e in reversed(job.events) if e.transition == wanted and e.detail), None)
        super().__init__(f"job {job.job_id} is {state}" + (f": {why}" if why else ""))
        self.job = job


class PermanentError(Exception):
    """Raise from a handler to dead-letter the job at once, whatever attempts remain."""


_BY_STATUS: Mapping[grpc.StatusCode, type[TelhaError]] = {
    grpc.StatusCode.ABORTED: LeaseConflict,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.DATA_LOSS: CorruptRecord,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: Unavailable,
    grpc.StatusCode.CANCELLED: Unavailable,
}

_STATUS_BY_NUMBER: Mapping[int, grpc.StatusCode] = {code.value[0]: code for code in grpc.StatusCode}

Metadata = Union[Mapping[str, str], Iterable[tuple[str, Union[str, bytes]]], None]


def headers_of(metadata: Metadata) -> dict[str, str]:
    if metadata is None:
        return {}
    # grpc.aio.Metadata iterates as (key, value) pairs, though it registers as a Mapping; a dict as keys.
    items: Iterable[tuple[str, Union[str, bytes]]] = (
        metadata.items() if isinstance(metadata, dict) else cast(Iterable[tuple[str, Union[str, bytes]]], metadata)
    )
    headers: dict[str, str] = {}
    for key, value in items:
        headers.setdefault(key, value.decode() if isinstance(value, bytes) else value)
    return headers


def _reason(value: Optional[str]) -> LeaseConflictReason:
    """A reason this SDK does not know reads as ``worker_mismatch``: the lease is lost, whatever the cause."""
    if value == "generation_superseded":
        return "generation_superseded"
    if value == "cancelled":
        return "cancelled"
    return "worker_mismatch"


def from_status(status: grpc.StatusCode, details: str, metadata: Metadata = None) -> TelhaError:
    """The error a gRPC status and its trailing metadata stand for."""
    headers = headers_of(metadata)
    cls = _BY_STATUS.get(status, Internal)
    if cls is LeaseConflict:
        message = details
        prefix = "lease conflict on job "
        if message.startswith(prefix) and ": " in message:
            message = message.split(": ", 1)[1]
        return LeaseConflict(
            headers.get(JOB_HEADER, ""), _reason(headers.get(REASON_HEADER)), message, status=status
        )
    return cls(details, field=headers.get(FIELD_HEADER), status=status)


def from_rpc_error(error: grpc.RpcError) -> TelhaError:
    """A failed call (``grpc.aio.AioRpcError`` or a sync ``grpc.RpcError``) as a Telha error."""
    # grpc.RpcError itself declares none of these; the errors gRPC raises (grpc.Call) have them all.
    code = getattr(error, "code", lambda: grpc.StatusCode.UNKNOWN)()
    details = getattr(error, "details", lambda: None)() or str(error)
    trailers = getattr(error, "trailing_metadata", lambda: None)()
    return from_status(code, details, trailers)


def from_outcome(outcome: "pb.ItemOutcome", job_id: str) -> Optional[TelhaError]:
    """A batch item's outcome as the error its single call would have raised; ``None`` when accepted."""
    if outcome.code == 0:
        return None
    headers = {JOB_HEADER: job_id}
    if outcome.reason:
        headers[REASON_HEADER] = outcome.reason
    if outcome.field:
        headers[FIELD_HEADER] = outcome.field
    status = _STATUS_BY_NUMBER.get(outcome.code, grpc.StatusCode.UNKNOWN)
    return from_status(status, outcome.message, headers)
