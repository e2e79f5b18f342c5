"""A real ``telha serve`` for the SDK's tests: a child process on a RocksDB store in a temp dir, or
several on one PostgreSQL schema of the test's own."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

SDK = Path(__file__).resolve().parent.parent
REPO = SDK.parent.parent
# The package from this checkout, not an installed one.
sys.path.insert(0, str(SDK / "src"))

from telha import Client  # noqa: E402

OPERATOR = "operator-token-for-tests"
WORKER = "worker-token-for-tests"
TENANT = "acme-tenant-token-for-tests"
OTHER_TENANT = "other-tenant-token-for-tests"

CONFIG = f"""
[jobs]
lease_ttl_secs = {{lease_ttl_secs}}
reaper_interval_secs = 1
backoff_base_secs = 0

[[server.tokens]]
token = "{OPERATOR}"
role = "operator"
name = "tests-operator"

[[server.tokens]]
token = "{WORKER}"
role = "worker"
name = "tests-worker"

[[server.tokens]]
token = "{TENANT}"
role = "tenant"
tenant = "acme"

[[server.tokens]]
token = "{OTHER_TENANT}"
role = "tenant"
tenant = "other"
"""


#: How to run ``telha``: the compiled CLI when npm test names it (test/sdk/python.test.ts builds it
#: once), which starts in half the time of the sources through tsx; else the sources, always current.
TELHA = (
    ["node", os.environ["TELHA_TEST_CLI"]]
    if os.environ.get("TELHA_TEST_CLI")
    else ["node", "--import", "tsx", "src/cli/main.ts"]
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class TelhaServer:
    """``telha serve`` on a fixed port and store directory, so a restart comes back at the same address."""

    directory: Path
    #: Short, so tests of expiry and heartbeats are quick; long where a restart must not expire a lease.
    lease_ttl_secs: int = 3
    port: int = field(default_factory=free_port)
    #: Settings over the config file's, as ``TELHA_SECTION__KEY`` variables (the storage backend, say).
    env: dict[str, str] = field(default_factory=dict)
    process: Optional[subprocess.Popen[str]] = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        config = self.directory / "telha.toml"
        config.write_text(CONFIG.replace("{lease_ttl_secs}", str(self.lease_ttl_secs)))
        env = {**os.environ, "TELHA_LOG_LEVEL": "warn", "TELHA_SERVER__HTTP_ADDRESS": "127.0.0.1:0", **self.env}
        self.process = subprocess.Popen(
            [*TELHA, "serve", "--config", str(config),
             "--data", str(self.directory / "data"), "--listen", self.address],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        # The server prints this line once it listens: no polling for the port.
        for line in self.process.stdout:
            if line.startswith("telha listening on "):
                break
        else:
            raise RuntimeError(f"telha serve exited before listening: {self.process.stderr.read() if self.process.stderr else ''}")
        # Keep reading its output so a full pipe never blocks it.
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        threading.Thread(target=self.process.stderr.read, daemon=True).start()  # type: ignore[union-attr]

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def server() -> Iterator[TelhaServer]:
    with tempfile.TemporaryDirectory(prefix="telha-py-") as directory:
        running = TelhaServer(Path(directory))
        running.start()
        yield running
        running.stop()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[TelhaServer]:
    """A server of the test's own, for tests that stop or restart it."""
    running = TelhaServer(tmp_path)
    running.start()
    yield running
    running.stop()


#: The PostgreSQL the TypeScript tests use too (test/support/postgres-url.ts).
PG_URL = os.environ.get("TELHA_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/test")

DROP_SCHEMA = """
import pg from 'pg';
const admin = new pg.Client({ connectionString: process.argv[1] });
await admin.connect();
await admin.query(`DROP SCHEMA IF EXISTS "${process.argv[2]}" CASCADE`);
await admin.end();
"""


@pytest.fixture
def postgres_servers(tmp_path: Path) -> Iterator[tuple[TelhaServer, TelhaServer]]:
    """Two servers on one PostgreSQL schema of this test's own, dropped after (through the ``pg``
    package the server itself uses: no Python driver needed)."""
    schema = f"telha_py_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    env = {"TELHA_STORAGE__KIND": "postgres", "TELHA_STORAGE__URL": PG_URL, "TELHA_STORAGE__SCHEMA": schema}
    servers: list[TelhaServer] = []
    try:
        for name in ("a", "b"):
            # Each needs a --data directory, unused with PostgreSQL.
            (tmp_path / name).mkdir()
            servers.append(TelhaServer(tmp_path / name, env=env))
            servers[-1].start()
        yield servers[0], servers[1]
    finally:
        for running in servers:
            running.stop()
        subprocess.run(
            ["node", "--input-type=module", "-e", DROP_SCHEMA, PG_URL, schema], cwd=REPO, check=True, timeout=60
        )


@pytest.fixture
async def client(server: TelhaServer) -> AsyncIterator[Client]:
    async with Client(server.address, token=OPERATOR) as operator:
        yield operator


@pytest.fixture
def kind(request: pytest.FixtureRequest) -> str:
    """A kind no other test uses, so tests sharing the server never see each other's jobs."""
    return "py." + request.node.name.replace("[", ".").replace("]", "").replace("_", "-")[:200]


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 60.0) -> None:
    """Poll ``check`` until true. Only for state another process holds (the server's) that no stream
    reports; anything this process does, wait on its signal instead."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def heartbeats(client: Client, job_id: str) -> int:
    """How many heartbeats the job has had: they fold into one event, "generation=1 count=3"."""
    beats = [e.detail or "" for e in (await client.show(job_id)).events if e.transition == "extended"]
    return int(beats[-1].rsplit("count=", 1)[1]) if beats and "count=" in beats[-1] else 0


async def signalled(event: asyncio.Event, what: str, timeout: float = 60.0) -> None:
    """Wait for ``event``, failing (not hanging) if it never comes."""
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None
