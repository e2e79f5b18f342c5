"""Typed tasks: payloads checked at enqueue with the field named, typed values in the handler and
typed results back; with dataclasses and pydantic models."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Optional

import pydantic
import pytest
from conftest import WORKER, TelhaServer

from telha import Client, InvalidArgument, JobContext, JobFailed, Task, Worker, task


@dataclass
class Address:
    city: str
    zip: str


@dataclass
class Email:
    to: str
    subject: str
    address: Optional[Address] = None
    tags: list[str] = field(default_factory=list)


@dataclass
class Receipt:
    delivered_to: str
    tag_count: int


class Invoice(pydantic.BaseModel):
    customer: str
    cents: int


@pytest.fixture
async def worker_client(server: TelhaServer) -> AsyncIterator[Client]:
    async with Client(server.address, token=WORKER) as client:
        yield client


def email_task(kind: str) -> Task[Email, Receipt]:
    @task(kind)
    async def send_email(email: Email, job: JobContext) -> Receipt:
        assert isinstance(email, Email) and (email.address is None or isinstance(email.address, Address))
        return Receipt(delivered_to=email.to, tag_count=len(email.tags))
        assert job.kind == kind

    return send_email


async def test_a_dataclass_task_gets_its_typed_payload_and_returns_a_typed_result(
    client: Client, worker_client: Client, kind: str
) -> None:
    send_email = email_task(kind)
    async with Worker(worker_client, [send_email]):
        job = (await client.enqueue(send_email, Email("a@example.com", "hi", Address("Lisboa", "1000"), ["x"]), scope="acme")).job
        receipt = await send_email.result(client, job.job_id)
    assert receipt == Receipt(delivered_to="a@example.com", tag_count=1)


async def test_a_payload_given_as_a_dict_is_checked_against_the_dataclass(client: Client, kind: str) -> None:
    send_email = email_task(kind)
    await client.enqueue(send_email, {"to": "a@example.com", "subject": "hi"}, scope="acme")
    for bad, field_name in [
        ({"subject": "hi"}, "payload.to"),
        ({"to": 7, "subject": "hi"}, "payload.to"),
        ({"to": "a", "subject": "hi", "address": {"city": "Porto"}}, "payload.address.zip"),
        ({"to": "a", "subject": "hi", "tags": ["ok", 3]}, "payload.tags[1]"),
        ({"to": "a", "subject": "hi", "cc": "b"}, "payload.cc"),
    ]:
        with pytest.raises(InvalidArgument) as raised:
            await client.enqueue(send_email, bad, scope="acme")
        assert raised.value.field == field_name
    assert len((await client.list(scope="acme", kind_prefix=kind)).jobs) == 1


async def test_a_pydantic_task_validates_at_enqueue_naming_the_field(
    client: Client, worker_client: Client, kind: str
) -> None:
    @task(kind, concurrency=2)
    def bill(invoice: Invoice) -> dict[str, int]:
        assert isinstance(invoice, Invoice)
        return {"cents": invoice.cents * 2}

    with pytest.raises(InvalidArgument) as raised:
        await client.enqueue(bill, {"customer": "acme", "cents": "many"}, scope="acme")
    assert raised.value.field == "payload.cents"
    async with Worker(worker_client, [bill]):
        job = (await bill.enqueue(client, Invoice(customer="acme", cents=150), scope="acme")).job
        assert await bill.result(client, job.job_id) == {"cents": 300}


async def test_a_job_whose_payload_does_not_fit_its_task_is_dead_lettered_at_once(
    client: Client, worker_client: Client, kind: str
) -> None:
    send_email = email_task(kind)
    async with Worker(worker_client, [send_email]):
        # Enqueued by kind, not through the task: nothing checked it on the way in.
        job = (await client.enqueue(kind, {"subject": "no recipient"}, scope="acme", max_attempts=5)).job
        with pytest.raises(JobFailed) as raised:
            await client.result(job.job_id)
    assert raised.value.job.attempts == 1 and "payload.to" in str(raised.value)


class _ValidationErrorV2(ValueError):
    def errors(self) -> list[dict[str, object]]:
        return [{"loc": ("cents",), "msg": "Input should be a valid integer", "type": "int_parsing"}]


class InvoiceWithTheV2Api:
    """What a pydantic v2 model offers (``model_validate``, ``model_dump``), without the v1 API: only
    Debian's pydantic 1.10 is on this machine, so v2's code path is driven through its interface."""

    def __init__(self, customer: str, cents: int) -> None:
        self.customer, self.cents = customer, cents

    @classmethod
    def model_validate(cls, value: object) -> "InvoiceWithTheV2Api":
        if not isinstance(value, dict) or not isinstance(value.get("cents"), int):
            raise _ValidationErrorV2("1 validation error for Invoice")
        return cls(value["customer"], value["cents"])

    def model_dump(self, mode: str = "python") -> dict[str, object]:
        assert mode == "json"
        return {"customer": self.customer, "cents": self.cents}


def test_a_pydantic_v2_model_is_validated_and_encoded_through_the_v2_api() -> None:
    from telha.tasks import validate
    from telha.types import payload_bytes

    invoice = validate(InvoiceWithTheV2Api, {"customer": "acme", "cents": 5})
    assert isinstance(invoice, InvoiceWithTheV2Api) and payload_bytes(invoice) == b'{"customer":"acme","cents":5}'
    with pytest.raises(InvalidArgument) as raised:
        validate(InvoiceWithTheV2Api, {"customer": "acme", "cents": "five"})
    assert raised.value.field == "payload.cents"


def test_a_pydantic_v1_model_is_validated_and_encoded_through_the_v1_api() -> None:
    from telha.tasks import validate
    from telha.types import payload_bytes

    assert pydantic.VERSION.startswith("1."), "this machine's pydantic is Debian 12's 1.10"
    invoice = validate(Invoice, {"customer": "acme", "cents": 5})
    assert isinstance(invoice, Invoice) and payload_bytes(invoice) == b'{"customer":"acme","cents":5}'
    with pytest.raises(InvalidArgument) as raised:
        validate(Invoice, {"customer": "acme", "cents": "five"})
    assert raised.value.field == "payload.cents"
