"""A blocking facade over the asyncio ``Client``, for scripts and REPLs: ``with SyncClient() as client:``.

It runs the client on an event loop of its own in a background thread; every method blocks until
the call is answered and raises what the async one raises.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, Optional, TypeVar

from .client import Client

T = TypeVar("T")


class SyncClient:
    """The methods of :class:`telha.Client`, blocking. ``watch`` and ``jobs`` return plain iterators."""

    def __init__(self, address: Optional[str] = None, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="telha-sync-client", daemon=True)
        self._thread.start()

        async def make() -> Client:
            return Client(address, **options)

        self._client = self._run(make())
        self.address = self._client.address

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if name in ("watch", "jobs"):
            return lambda *args, **kwargs: self._iterate(method(*args, **kwargs))
        if not callable(method) or not asyncio.iscoroutinefunction(method):
            return method
        return lambda *args, **kwargs: self._run(method(*args, **kwargs))

    def _iterate(self, iterator: Any) -> Iterator[Any]:
        try:
            while True:
                try:
                    yield self._run(iterator.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self._run(iterator.aclose())

    def __repr__(self) -> str:
        return f"SyncClient(address={self.address!r})"

    def __enter__(self) -> "SyncClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client and stop its thread. A second call does nothing."""
        if not self._loop.is_running():
            return
        self._run(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
