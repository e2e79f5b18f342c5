"""``python -m telha worker module[:attr]`` (or ``telha-worker module[:attr]``): one command that imports
a module's tasks or handlers and works them until SIGTERM or SIGINT, then closes gracefully.

``attr`` may be a ``@task``, a list of them, or a function that registers handlers on the worker it
is given (``def setup(worker): ...``, async or not); without ``attr``, every ``@task`` defined in the
module is worked. The server's address comes from ``--address`` or ``$TELHA_ADDRESS``, the token from
``$TELHA_TOKEN`` only: a command line is visible to every user of the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any, Optional

from .client import Client
from .errors import InvalidArgument, TelhaError
from .tasks import Task
from .worker import DEFAULT_SHUTDOWN_TIMEOUT, Worker

log = logging.getLogger("telha.worker")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="telha-worker", description="Work a module's Telha tasks or handlers.")
    parser.add_argument("target", help="module[:attr]: a @task, a list of tasks, or a setup(worker) function")
    parser.add_argument("--address", help="host:port of telha serve (default $TELHA_ADDRESS, else 127.0.0.1:7070)")
    parser.add_argument("--concurrency", type=int, default=10, help="handlers running at once (default 10)")
    parser.add_argument(
        "--prefetch",
        type=_prefetch,
        default="auto",
        help='jobs held ready beyond those running, or "auto" (default): about 25 ms of work per slot ahead',
    )
    parser.add_argument("--scope", help="work only this tenant's jobs (default: every scope the token reaches)")
    parser.add_argument(
        "--shutdown-timeout",
        type=float,
        default=DEFAULT_SHUTDOWN_TIMEOUT,
        help=f"seconds running handlers get to finish on SIGTERM/SIGINT (default {DEFAULT_SHUTDOWN_TIMEOUT:g})",
    )
    parser.add_argument(
        "--executor",
        choices=("thread", "process"),
        default="thread",
        help="where sync handlers run: a thread pool, or a process pool for CPU-bound work (default thread)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return parser


def _prefetch(value: str) -> Any:
    """``--prefetch``: ``auto`` or a non-negative integer."""
    if value == "auto":
        return value
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f'a non-negative integer or "auto", not {value!r}')
    return number


def load_target(target: str) -> Any:
    """The object ``module[:attr]`` names (the module itself without ``attr``); ``InvalidArgument`` if none."""
    module_name, _, attr = target.partition(":")
    # Like `python -m`, find the caller's modules in the current directory, also from the console script.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise InvalidArgument(f"cannot import {module_name!r}: {error}", field="target") from None
    if not attr:
        return module
    found: Any = module
    for part in attr.split("."):
        if not hasattr(found, part):
            raise InvalidArgument(f"{module_name!r} has no {attr!r}", field="target")
        found = getattr(found, part)
    return found


async def register(worker: Worker, target: Any) -> None:
    """Put what ``target`` holds on ``worker``: a task, tasks, a module's tasks, or a setup function's handlers."""
    if isinstance(target, Task):
        worker.add(target)
    elif inspect.ismodule(target):
        tasks = [value for value in vars(target).values() if isinstance(value, Task)]
        if not tasks:
            raise InvalidArgument(f"module {target.__name__!r} defines no @task; name one with module:attr", field="target")
        for found in tasks:
            worker.add(found)
    elif callable(target):
        registered = target(worker)
        if inspect.isawaitable(registered):
            await registered
    elif isinstance(target, (list, tuple, set, frozenset)) and all(isinstance(t, Task) for t in target):
        for found in target:
            worker.add(found)
    else:
        raise InvalidArgument(f"cannot work {target!r}: not a task, tasks or a setup function", field="target")


async def run_worker(target: Any, options: argparse.Namespace) -> None:
    async with Client(options.address) as client:
        worker = Worker(
            client,
            concurrency=options.concurrency,
            prefetch=options.prefetch,
            scope=options.scope,
            shutdown_timeout=options.shutdown_timeout,
            executor=options.executor,
        )
        await register(worker, target)
        worker.install_signal_handlers()
        await worker.start()
        log.info("worker %s working %s at %s", worker.worker_id, ", ".join(worker.kinds), client.address)
        await worker.run()
        log.info("worker %s stopped", worker.worker_id)


def worker_main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``telha-worker`` console script; returns the exit status."""
    options = _parser().parse_args(argv)
    logging.basicConfig(
        level=options.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        target = load_target(options.target)
        asyncio.run(run_worker(target, options))
    except TelhaError as error:
        log.error("%s", error)
        return 2
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m telha <command>``: today the one command is ``worker``."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0] != "worker":
        print("usage: python -m telha worker module[:attr] [options]  (python -m telha worker --help)", file=sys.stderr)
        return 2
    return worker_main(arguments[1:])
