"""The client end of a Work stream: grant credit, receive leased jobs, send results and lease
extensions and await each one's outcome. What one turn of the event loop queues (freed slots,
finished results, heartbeats) goes out as one message, as the TypeScript SDK's WorkChannel does."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import grpc
import grpc.aio

from ._gen.telha.v1 import queue_pb2 as pb
from .errors import TelhaError, Unavailable, from_outcome, from_rpc_error, headers_of

log = logging.getLogger("telha.worker")

#: At most this many results of each type per message (the server's limit).
MAX_SETTLE_BATCH = 1000
WORK_OPEN_HEADER = "telha-work-open"

#: What a WorkRequest carries, by field: settles are answered with ItemOutcomes, extensions with LeaseOutcomes.
SETTLE_FIELDS = ("completes", "fails", "releases")
EXTEND_FIELDS = ("heartbeats", "checkpoints")
OUTCOME_FIELDS = {
    "completes": "complete_outcomes",
    "fails": "fail_outcomes",
    "releases": "release_outcomes",
    "heartbeats": "heartbeat_outcomes",
    "checkpoints": "checkpoint_outcomes",
}


@dataclass
class _Queued:
    field: str
    request: Any
    future: "asyncio.Future[Any]"


@dataclass
class _Sent:
    by_field: dict[str, list[_Queued]] = field(default_factory=dict)


class WorkStream:
    """One Work stream. ``opened`` resolves once the server accepted it; ``ended`` with the error it ended
    with (``None`` for a clean end)."""

    def __init__(
        self, stub: Any, metadata: Sequence[tuple[str, str]], open: pb.WorkOpen, on_jobs: Callable[[Sequence[pb.Job]], None]
    ) -> None:
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()
        self.ended: asyncio.Future[Optional[TelhaError]] = loop.create_future()
        self._open: Optional[pb.WorkOpen] = open
        self._on_jobs = on_jobs
        self._credit = 0
        self._queued: list[_Queued] = []
        self._awaiting: dict[int, _Sent] = {}
        self._next_settle_id = 1
        self._wake = asyncio.Event()
        self._half_closing = False
        self._call = stub.Work(metadata=tuple(metadata))
        self._writer = asyncio.create_task(self._write_loop())
        self._reader = asyncio.create_task(self._read_loop())
        self._wake.set()

    @property
    def writable(self) -> bool:
        return not self._half_closing and not self.ended.done()

    def grant(self, n: int) -> None:
        """Allow the server to push ``n`` more jobs."""
        if n > 0 and self.writable:
            self._credit += n
            self._wake.set()

    def send(self, field_name: str, request: Any) -> "asyncio.Future[Any]":
        """Queue a complete / fail / release (resolves with None) or a heartbeat / checkpoint (with the new
        lease deadline, µs) for this turn's message; rejects with the item's error."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if not self.writable:
            future.set_exception(Unavailable("the work stream is closed"))
            return future
        self._queued.append(_Queued(field_name, request, future))
        self._wake.set()
        return future

    def end(self) -> None:
        """Send what is queued, then half-close: the server answers what it has and ends the stream."""
        if self.writable:
            self._half_closing = True
            self._wake.set()

    def cancel(self) -> None:
        self._call.cancel()

    async def _write_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                # Let the rest of this turn (other handlers finishing, slots freeing) join the message.
                await asyncio.sleep(0)
                self._wake.clear()
                while self._queued or self._credit or self._open is not None:
                    await self._call.write(self._next_message())
                if self._half_closing:
                    await self._call.done_writing()
                    return
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError) as error:
            log.debug("work stream write failed: %s", error)
        except grpc.aio.UsageError:  # the call already ended; the reader reports why
            pass

    def _next_message(self) -> pb.WorkRequest:
        taken: dict[str, list[_Queued]] = {}
        rest: list[_Queued] = []
        for item in self._queued:
            bucket = taken.setdefault(item.field, [])
            (bucket if len(bucket) < MAX_SETTLE_BATCH else rest).append(item)
        self._queued = rest
        message = pb.WorkRequest(credit=self._credit)
        if self._open is not None:
            message.open.CopyFrom(self._open)
            self._open = None
        self._credit = 0
        if taken:
            settle_id = self._next_settle_id
            self._next_settle_id += 1
            message.settle_id = settle_id
            for name, items in taken.items():
                getattr(message, name).extend(item.request for item in items)
            self._awaiting[settle_id] = _Sent(taken)
        return message

    async def _read_loop(self) -> None:
        error: Optional[TelhaError] = None
        try:
            headers = headers_of(await self._call.initial_metadata())
            if headers.get(WORK_OPEN_HEADER) == "1" and not self.opened.done():
                self.opened.set_result(None)
            async for response in self._call:
                if not self.opened.done():
                    self.opened.set_result(None)
                self._receive(response)
        except grpc.aio.AioRpcError as raw:
            error = from_rpc_error(raw)
        except asyncio.CancelledError:
            error = Unavailable("the work stream was cancelled")
        finally:
            self._finish(error)

    def _receive(self, response: pb.WorkResponse) -> None:
        if response.jobs:
            self._on_jobs(response.jobs)
        if not response.settle_id:
            return
        sent = self._awaiting.pop(response.settle_id, None)
        if sent is None:
            return
        for name, items in sent.by_field.items():
            outcomes = getattr(response, OUTCOME_FIELDS[name])
            for item, outcome in zip(items, outcomes):
                if item.future.done():
                    continue
                extension = name in EXTEND_FIELDS
                error = from_outcome(outcome.outcome if extension else outcome, item.request.fence.job_id)
                if error is not None:
                    item.future.set_exception(error)
                else:
                    item.future.set_result(outcome.lease_deadline_us if extension else None)

    def _finish(self, error: Optional[TelhaError]) -> None:
        reason = error or Unavailable("the work stream ended before answering")
        for sent in self._awaiting.values():
            for items in sent.by_field.values():
                for item in items:
                    if not item.future.done():
                        item.future.set_exception(reason)
        self._awaiting.clear()
        for item in self._queued:
            if not item.future.done():
                item.future.set_exception(reason)
        self._queued.clear()
        if not self.opened.done():
            self.opened.set_exception(reason)
        if not self.ended.done():
            self.ended.set_result(error)
        self._writer.cancel()
