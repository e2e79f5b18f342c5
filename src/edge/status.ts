/**
 * The one place engine errors become wire status codes: gRPC for the API,
 * HTTP for the dashboard and health checks, side by side in one table. The
 * client maps gRPC back (`src/client/errors.ts`), so a caller sees the same
 * codes in-process and over the network.
 */
import {
  ErrorCode,
  LEASE_CONFLICT_REASONS,
  LeaseConflictError,
  TelhaError,
  type LeaseConflictReason,
} from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { Status } from '../wire/service.ts';

/** Each code's gRPC status and HTTP status. */
const CODES: Readonly<Record<ErrorCode, { readonly grpc: Status; readonly http: number }>> = {
  [ErrorCode.LeaseConflict]: { grpc: Status.ABORTED, http: 409 },
  [ErrorCode.NotFound]: { grpc: Status.NOT_FOUND, http: 404 },
  [ErrorCode.InvalidArgument]: { grpc: Status.INVALID_ARGUMENT, http: 400 },
  [ErrorCode.FailedPrecondition]: { grpc: Status.FAILED_PRECONDITION, http: 409 },
  [ErrorCode.CorruptRecord]: { grpc: Status.DATA_LOSS, http: 500 },
  [ErrorCode.Unauthenticated]: { grpc: Status.UNAUTHENTICATED, http: 401 },
  [ErrorCode.PermissionDenied]: { grpc: Status.PERMISSION_DENIED, http: 403 },
  [ErrorCode.ResourceExhausted]: { grpc: Status.RESOURCE_EXHAUSTED, http: 429 },
  [ErrorCode.Unavailable]: { grpc: Status.UNAVAILABLE, http: 503 },
  [ErrorCode.Internal]: { grpc: Status.INTERNAL, http: 500 },
};

/**
 * Every value the server sends as `telha-reason` metadata and as an item outcome's `reason`: a
 * status carries one only for a lease conflict, so these are the lease conflict's reasons.
 */
export const TELHA_REASONS: readonly LeaseConflictReason[] = LEASE_CONFLICT_REASONS;

/** A status as the wire carries it: code, message, and the metadata that says more. */
export interface WireStatus {
  readonly code: Status;
  /** The same outcome as an HTTP status, for the HTTP listener. */
  readonly http: number;
  readonly message: string;
  /** One of {@link TELHA_REASONS}, for ABORTED. */
  readonly reason: LeaseConflictReason | null;
  readonly field: string | null;
  readonly jobId: string | null;
}

/** Engine error to wire status; anything unexpected is logged whole and reported as INTERNAL. */
export function describeError(error: unknown, logger: Logger, context: object): WireStatus {
  if (error instanceof TelhaError) {
    if (error.code === ErrorCode.CorruptRecord || error.code === ErrorCode.Internal) {
      logger.error({ ...context, err: error.message }, 'request failed');
    }
    return {
      code: CODES[error.code].grpc,
      http: CODES[error.code].http,
      message: error.message,
      reason: error instanceof LeaseConflictError ? error.reason : null,
      field: error.field ?? null,
      jobId: error instanceof LeaseConflictError ? error.jobId : null,
    };
  }
  // A bug or an I/O failure: log it whole, tell the caller little.
  logger.error(
    { ...context, err: error instanceof Error ? (error.stack ?? error.message) : String(error) },
    'internal error',
  );
  return { code: Status.INTERNAL, http: 500, message: 'internal error', reason: null, field: null, jobId: null };
}
