"""Typed tasks: a kind bound to a payload type (a pydantic model, v1 or v2, or a dataclass) and
optionally a result type. The payload is checked at enqueue (``InvalidArgument`` naming the field),
the handler gets the typed value, and ``result`` reads the typed result back.

    @task("email.send")
    async def send_email(email: Email) -> Receipt:
        ...

    await client.enqueue(send_email, Email(to="a@example.com"))    # or a dict, checked here
    worker.add(send_email)
    receipt = await send_email.result(client, job_id)                 # a Receipt
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any, Generic, Optional, TypeVar, Union, overload

from .client import Client
from .errors import InvalidArgument, PermanentError

P = TypeVar("P")
R = TypeVar("R")


def _is_pydantic(cls: Any) -> bool:
    return isinstance(cls, type) and (hasattr(cls, "model_validate") or hasattr(cls, "parse_obj"))


def _pydantic_field(error: Any) -> str:
    """The first failing field of a pydantic ValidationError (v1 or v2), dotted: ``address.zip``."""
    try:
        location = error.errors()[0]["loc"]
    except (AttributeError, IndexError, KeyError):
        return "payload"
    return ".".join(str(part) for part in ("payload", *location))


def validate(cls: Any, value: Any) -> Any:
    """``value`` as an instance of ``cls`` (a pydantic model, a dataclass, or a plain type);
    ``InvalidArgument`` naming the offending field when it is not one."""
    if cls is None or cls is Any or (isinstance(cls, type) and isinstance(value, cls)):
        return value
    if _is_pydantic(cls):
        try:
            return cls.model_validate(value) if hasattr(cls, "model_validate") else cls.parse_obj(value)
        except Exception as error:  # pydantic.ValidationError, whichever major version
            field = _pydantic_field(error)
            raise InvalidArgument(f"{field}: {error}", field=field) from None
    if dataclasses.is_dataclass(cls) and isinstance(cls, type):
        return _dataclass_from(cls, value, "payload")
    if isinstance(cls, type) and not isinstance(value, cls):
        raise InvalidArgument(f"payload: expected {cls.__name__}, got {type(value).__name__}", field="payload")
    return value


def _dataclass_from(cls: type, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise InvalidArgument(f"{path}: expected an object for {cls.__name__}", field=path)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise InvalidArgument(f"{path}.{unknown[0]}: not a field of {cls.__name__}", field=f"{path}.{unknown[0]}")
    arguments: dict[str, Any] = {}
    for name, spec in fields.items():
        where = f"{path}.{name}"
        if name not in value:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise InvalidArgument(f"{where}: required", field=where)
            continue
        arguments[name] = _typed(hints.get(name, Any), value[name], where)
    return cls(**arguments)


def _typed(hint: Any, value: Any, where: str) -> Any:
    """A field's value checked against the common annotations (scalars, Optional, lists, nested dataclasses)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin is Union:
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        present = [option for option in options if option is not type(None)]
        if len(present) == 1:
            return _typed(present[0], value, where)
        for option in present:
            try:
                return _typed(option, value, where)
            except InvalidArgument:
                continue
        raise InvalidArgument(f"{where}: {value!r} matches none of {hint}", field=where)
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        if not isinstance(value, list):
            raise InvalidArgument(f"{where}: expected a list", field=where)
        (item,) = typing.get_args(hint)[:1] or (Any,)
        return [_typed(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise InvalidArgument(f"{where}: expected an object", field=where)
        return value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_from(hint, value, where)
    if _is_pydantic(hint):
        return validate(hint, value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(hint, type) and (not isinstance(value, hint) or (hint is int and isinstance(value, bool))):
        raise InvalidArgument(f"{where}: expected {hint.__name__}, got {type(value).__name__}", field=where)
    return value


class Task(Generic[P, R]):
    """A kind with a payload type ``P`` and a result type ``R``; made by ``@task``."""

    def __init__(
        self,
        kind: str,
        fn: Callable[..., Any],
        *,
        payload_type: Any = None,
        result_type: Any = None,
        concurrency: Optional[int] = None,
    ) -> None:
        self.kind = kind
        self.fn = fn
        self.concurrency = concurrency
        parameters = list(inspect.signature(fn).parameters.values())
        hints = typing.get_type_hints(fn)
        self.payload_type = payload_type if payload_type is not None else (
            hints.get(parameters[0].name) if parameters else None
        )
        self.result_type = result_type if result_type is not None else hints.get("return")
        #: Whether the handler takes the job's context after the payload.
        self._takes_context = len(parameters) >= 2
        self.__name__ = getattr(fn, "__name__", kind)
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__module__ = getattr(fn, "__module__", __name__)
        self.__doc__ = fn.__doc__
        if inspect.iscoroutinefunction(fn):

            async def invoke_async(context: Any) -> Any:
                return await fn(*self._arguments(context))

            self.invoke: Callable[[Any], Any] = invoke_async
        else:
            self.invoke = lambda context: fn(*self._arguments(context))

    def __repr__(self) -> str:
        return f"Task({self.kind!r})"

    def __reduce__(self) -> str:
        """Pickled by name, as a function is: ``@task`` puts the task where its function was, so a
        process pool finds it by importing the module (its ``invoke`` is a closure, never pickled)."""
        return self.__qualname__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself (in a test, say)."""
        return self.fn(*args, **kwargs)

    def _arguments(self, context: Any) -> tuple[Any, ...]:
        try:
            payload = validate(self.payload_type, context.json())
        except InvalidArgument as error:
            # A payload that does not fit its type never will: dead-letter it rather than retry.
            raise PermanentError(error.message) from None
        return (payload, context) if self._takes_context else (payload,)

    def payload_for_enqueue(self, payload: Any) -> Any:
        """What ``Client.enqueue`` sends: the payload checked against the payload type (then encoded as JSON)."""
        return validate(self.payload_type, payload)

    async def enqueue(self, client: Client, payload: P, **options: Any) -> Any:
        """``client.enqueue(self, payload, **options)``."""
        return await client.enqueue(self, payload, **options)

    async def result(self, client: Client, job_id: str, *, timeout: Optional[float] = None) -> R:
        """Wait for the job's result and read it as the result type."""
        outcome = await client.result(job_id, timeout=timeout)
        value = outcome.json()
        if self.result_type is None or self.result_type is type(None) or value is None:
            return value  # type: ignore[no-any-return]
        try:
            return validate(self.result_type, value)  # type: ignore[no-any-return]
        except InvalidArgument as error:
            raise InvalidArgument(error.message.replace("payload", "result", 1), field=(error.field or "").replace("payload", "result", 1)) from None


@overload
def task(kind: str, *, concurrency: Optional[int] = None) -> Callable[[Callable[..., Any]], Task[Any, Any]]: ...
@overload
def task(kind: str, *, payload: type[P], concurrency: Optional[int] = None) -> Callable[[Callable[..., Any]], Task[P, Any]]: ...


def task(kind: str, *, payload: Any = None, concurrency: Optional[int] = None) -> Callable[[Callable[..., Any]], Task[Any, Any]]:
    """Make a typed task of the decorated handler: ``fn(payload)`` or ``fn(payload, ctx)``, async or not.
    The payload type is ``payload=`` or the first parameter's annotation; the result type the return
    annotation."""

    def make(fn: Callable[..., Any]) -> Task[Any, Any]:
        return Task(kind, fn, payload_type=payload, concurrency=concurrency)

    return make
