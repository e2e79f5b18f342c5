/**
 * The one place engine errors become wire status codes. The client maps
 * them back (`src/client/errors.ts`), so a caller sees the same codes
 * in-process and over the network.
 */
import { ErrorCode, LeaseConflictError, TelhaError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { Status } from '../wire/service.ts';

const CODES: Readonly<Record<ErrorCode, Status>> = {
  [ErrorCode.LeaseConflict]: Status.ABORTED,
  [ErrorCode.NotFound]: Status.NOT_FOUND,
  [ErrorCode.InvalidArgument]: Status.INVALID_ARGUMENT,
  [ErrorCode.FailedPrecondition]: Status.FAILED_PRECONDITION,
  [ErrorCode.CorruptRecord]: Status.DATA_LOSS,
  [ErrorCode.Unauthenticated]: Status.UNAUTHENTICATED,
  [ErrorCode.PermissionDenied]: Status.PERMISSION_DENIED,
  [ErrorCode.ResourceExhausted]: Status.RESOURCE_EXHAUSTED,
  [ErrorCode.Unavailable]: Status.UNAVAILABLE,
  [ErrorCode.Internal]: Status.INTERNAL,
};

/** A status as the wire carries it: code, message, and the metadata that says more. */
export interface WireStatus {
  readonly code: Status;
  readonly message: string;
  readonly reason: string | null;
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
      code: CODES[error.code],
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
  return { code: Status.INTERNAL, message: 'internal error', reason: null, field: null, jobId: null };
}
