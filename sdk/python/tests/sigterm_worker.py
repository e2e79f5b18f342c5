"""A worker process for test_worker.py: works KIND until SIGTERM, printing each job it starts."""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from telha import Client, JobContext, Worker  # noqa: E402


async def main(address: str, token: str, kind: str) -> None:
    async with Client(address, token=token) as client:
        worker = Worker(client, concurrency=1, prefetch=2, shutdown_timeout=0)

        @worker.handler(kind)
        async def held(job: JobContext) -> None:
            print(f"started {job.id}", flush=True)
            await asyncio.Event().wait()

        await worker.run_until_signalled()
        print("closed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
