"""Errors are built from a gRPC status and its telha-* metadata, as the TypeScript SDK builds them."""

import grpc

from telha import InvalidArgument, LeaseConflict, NotFound, ResourceExhausted, TelhaError, Unavailable
from telha._gen.telha.v1 import queue_pb2 as pb
from telha.errors import from_outcome, from_status


def test_an_aborted_status_is_a_lease_conflict_with_its_reason_and_job() -> None:
    error = from_status(
        grpc.StatusCode.ABORTED,
        "lease conflict on job j1: generation 2 superseded by 3",
        {"telha-reason": "generation_superseded", "telha-job-id": "j1"},
    )
    assert isinstance(error, LeaseConflict)
    assert (error.job_id, error.reason, error.message) == ("j1", "generation_superseded", "generation 2 superseded by 3")


def test_a_reason_this_sdk_does_not_know_reads_as_worker_mismatch() -> None:
    error = from_status(grpc.StatusCode.ABORTED, "x", {"telha-reason": "something_new"})
    assert isinstance(error, LeaseConflict) and error.reason == "worker_mismatch"


def test_an_invalid_argument_names_its_field() -> None:
    error = from_status(grpc.StatusCode.INVALID_ARGUMENT, "bad kind", [("telha-field", "kind")])
    assert isinstance(error, InvalidArgument) and error.field == "kind" and error.code == "invalid_argument"


def test_unavailable_and_resource_exhausted_are_retryable_and_not_found_is_not() -> None:
    assert from_status(grpc.StatusCode.UNAVAILABLE, "").retryable
    assert isinstance(from_status(grpc.StatusCode.RESOURCE_EXHAUSTED, ""), ResourceExhausted)
    assert isinstance(from_status(grpc.StatusCode.DEADLINE_EXCEEDED, ""), Unavailable)
    assert not from_status(grpc.StatusCode.NOT_FOUND, "").retryable


def test_a_status_without_a_telha_code_is_internal() -> None:
    error = from_status(grpc.StatusCode.UNKNOWN, "boom")
    assert type(error) is not NotFound and isinstance(error, TelhaError) and error.code == "internal"


def test_a_batch_item_outcome_is_the_error_its_single_call_would_raise() -> None:
    assert from_outcome(pb.ItemOutcome(code=0), "j1") is None
    error = from_outcome(pb.ItemOutcome(code=10, message="m", reason="cancelled"), "j1")
    assert isinstance(error, LeaseConflict) and (error.job_id, error.reason) == ("j1", "cancelled")
    invalid = from_outcome(pb.ItemOutcome(code=3, message="m", field="payload"), "j2")
    assert isinstance(invalid, InvalidArgument) and invalid.field == "payload"


def test_headers_are_read_from_grpc_aio_metadata_which_iterates_as_pairs() -> None:
    import grpc.aio

    from telha.errors import headers_of

    metadata = grpc.aio.Metadata(("telha-reason", "cancelled"), ("telha-job-id", "j1"))
    assert headers_of(metadata) == {"telha-reason": "cancelled", "telha-job-id": "j1"}
    assert headers_of({"telha-field": "kind"}) == {"telha-field": "kind"}
