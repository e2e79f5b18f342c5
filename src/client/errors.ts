/**
 * Wire status back to Telha's error codes, so a client sees the same
 * `TelhaError` / `LeaseConflictError` the engine throws in-process.
 */
import * as grpc from '@grpc/grpc-js';
import type { ItemOutcome } from '../gen/telha/v1/queue_pb.ts';
import {
  ErrorCode,
  LEASE_CONFLICT_REASONS,
  LeaseConflictError,
  TelhaError,
  type LeaseConflictReason,
} from '../core/errors.ts';
import { itemFailed, itemOk, type ItemResult } from '../core/types.ts';
import { FIELD_HEADER, JOB_HEADER, REASON_HEADER, Status } from '../wire/service.ts';

/** A failed call as the wire reported it. */
export class WireError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
    readonly metadata: grpc.Metadata,
  ) {
    super(details);
  }
}

const FROM_CODE: Partial<Record<number, ErrorCode>> = {
  [Status.ABORTED]: ErrorCode.LeaseConflict,
  [Status.NOT_FOUND]: ErrorCode.NotFound,
  [Status.INVALID_ARGUMENT]: ErrorCode.InvalidArgument,
  [Status.FAILED_PRECONDITION]: ErrorCode.FailedPrecondition,
  [Status.DATA_LOSS]: ErrorCode.CorruptRecord,
  [Status.UNAUTHENTICATED]: ErrorCode.Unauthenticated,
  [Status.PERMISSION_DENIED]: ErrorCode.PermissionDenied,
  [Status.RESOURCE_EXHAUSTED]: ErrorCode.ResourceExhausted,
  [Status.UNAVAILABLE]: ErrorCode.Unavailable,
  [Status.DEADLINE_EXCEEDED]: ErrorCode.Unavailable,
  [Status.CANCELLED]: ErrorCode.Unavailable,
};

function header(metadata: grpc.Metadata, key: string): string | null {
  const value = metadata.get(key)[0];
  return typeof value === 'string' ? value : null;
}

/** A reason this build does not know reads as `worker_mismatch`: the lease is lost, whatever the cause. */
function leaseConflictReason(reason: string | null): LeaseConflictReason {
  const known = LEASE_CONFLICT_REASONS.find((one) => one === reason);
  return known ?? 'worker_mismatch';
}

/** grpc-js's text when a channel could not connect: "No connection established. Last error: ... Resolution note: ". */
const NO_CONNECTION =
  /^No connection established\. Last error: (?:Error: )?([\s\S]*?)\.?\s*(?:\. Resolution note: [\s\S]*)?$/;

/** What the client says when TLS was asked of a server that answered in plaintext. */
export const PLAINTEXT_SERVER = 'the server does not speak TLS: connect without TLS, or give the server a certificate';

/**
 * grpc-js's connection failure in our words: what went wrong, without its "Last error: Error:"
 * wrapping, OpenSSL's source locations or an empty "Resolution note: ".
 */
function connectionDetails(details: string): string {
  const last = NO_CONNECTION.exec(details)?.[1];
  if (last === undefined) return details;
  if (/wrong version number|packet length too long|http request/i.test(last))
    return `cannot connect: ${PLAINTEXT_SERVER}`;
  const refused = /connect ECONNREFUSED (\S+)/.exec(last);
  if (refused) return `cannot connect: nothing listens at ${refused[1]}`;
  return `cannot connect: ${last.trim()}`;
}

export function fromWireError(error: unknown): Error {
  if (!(error instanceof WireError)) return error instanceof Error ? error : new Error(String(error));
  const code = FROM_CODE[error.code] ?? ErrorCode.Internal;
  if (error.code === Status.UNAVAILABLE) {
    return new TelhaError(code, connectionDetails(error.details), { cause: error });
  }
  if (code === ErrorCode.LeaseConflict) {
    return new LeaseConflictError(
      header(error.metadata, JOB_HEADER) ?? '',
      leaseConflictReason(header(error.metadata, REASON_HEADER)),
      error.details.replace(/^lease conflict on job \S+: /, ''),
    );
  }
  const field = header(error.metadata, FIELD_HEADER);
  return new TelhaError(code, error.details, { ...(field === null ? {} : { field }), cause: error });
}

/** What a call cancelled by its signal rejects with (`unavailable`, gRPC CANCELLED), sent or not. */
export function cancelledError(): Error {
  return fromWireError(new WireError(Status.CANCELLED, 'call cancelled', new grpc.Metadata()));
}

/**
 * Whether a call failed because no server answered: the wire said UNAVAILABLE (nothing listens
 * at the address, the connection dropped, or the server is shutting down).
 */
export function isUnreachable(error: unknown): error is TelhaError {
  return (
    error instanceof TelhaError &&
    error.code === ErrorCode.Unavailable &&
    error.cause instanceof WireError &&
    error.cause.code === Status.UNAVAILABLE
  );
}

/** A batch item's outcome as the error its single call would have thrown, or `null` when accepted. */
export function outcomeToError(outcome: ItemOutcome, jobId: string): Error | null {
  if (outcome.code === 0) return null;
  const metadata = new grpc.Metadata();
  metadata.set(JOB_HEADER, jobId);
  if (outcome.reason !== '') metadata.set(REASON_HEADER, outcome.reason);
  if (outcome.field !== '') metadata.set(FIELD_HEADER, outcome.field);
  return fromWireError(new WireError(outcome.code, outcome.message, metadata));
}

/** A batch's outcomes as each item's result: accepted, or the error its single call would have thrown. */
export function outcomesToResults(
  outcomes: readonly ItemOutcome[],
  items: readonly { readonly jobId: string }[],
): ItemResult<null>[] {
  return outcomes.map((outcome, i) => {
    const error = outcomeToError(outcome, items[i]?.jobId ?? '');
    return error === null ? itemOk(null) : itemFailed(error);
  });
}
