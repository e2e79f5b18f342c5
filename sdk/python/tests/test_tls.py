"""The client over TLS, as the TypeScript client connects: a server with ``server.tls_cert_file``
and ``server.tls_key_file`` (a self-signed certificate for 127.0.0.1 made by ``openssl``), a client
trusting it through ``ca=``, and a plaintext client refused."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OPERATOR, WORKER, TelhaServer

from telha import Client, JobContext, Unavailable, Worker


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[TelhaServer, bytes]]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )
    running = TelhaServer(
        tmp_path, env={"TELHA_SERVER__TLS_CERT_FILE": str(cert), "TELHA_SERVER__TLS_KEY_FILE": str(key)}
    )
    running.start()
    yield running, cert.read_bytes()
    running.stop()


async def test_a_client_trusting_the_servers_certificate_enqueues_works_and_awaits_over_tls(
    tls_server: tuple[TelhaServer, bytes],
) -> None:
    server, ca = tls_server
    async with Client(server.address, token=OPERATOR, ca=ca) as client, Client(
        server.address, token=WORKER, ca=ca
    ) as worker_client:
        worker = Worker(worker_client)

        @worker.handler("tls.echo")
        async def echo(job: JobContext) -> object:
            return job.json()

        async with worker:
            job = (await client.enqueue("tls.echo", {"over": "tls"}, scope="acme")).job
            assert (await client.result(job.job_id)).json() == {"over": "tls"}


async def test_a_plaintext_client_is_refused_by_a_tls_server(tls_server: tuple[TelhaServer, bytes]) -> None:
    server, ca = tls_server
    async with Client(server.address, token=OPERATOR, timeout=2) as plaintext:
        with pytest.raises(Unavailable):
            await plaintext.enqueue("tls.never", scope="acme")
    async with Client(server.address, token=OPERATOR, ca=ca) as client:
        assert (await client.list(scope="acme", kind_prefix="tls.never")).jobs == []
