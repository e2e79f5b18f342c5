/**
 * The one place engine errors become wire status codes. The client maps
 * them back (`src/client/errors.ts`), so a caller sees the same codes
 * in-process and over the network.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorCode, LeaseConflictError, TelhaError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';

/** Metadata keys carrying what a status code alone cannot. */
export const REASON_HEADER = 'telha-reason';
export const FIELD_HEADER = 'telha-field';
export const JOB_HEADER = 'telha-job-id';

const CODES: Readonly<Record<ErrorCode, Code>> = {
  [ErrorCode.LeaseConflict]: Code.Aborted,
  [ErrorCode.NotFound]: Code.NotFound,
  [ErrorCode.InvalidArgument]: Code.InvalidArgument,
  [ErrorCode.FailedPrecondition]: Code.FailedPrecondition,
  [ErrorCode.CorruptRecord]: Code.DataLoss,
  [ErrorCode.Unauthenticated]: Code.Unauthenticated,
  [ErrorCode.PermissionDenied]: Code.PermissionDenied,
  [ErrorCode.ResourceExhausted]: Code.ResourceExhausted,
  [ErrorCode.Unavailable]: Code.Unavailable,
  [ErrorCode.Internal]: Code.Internal,
};

/** A status as the wire carries it: code, message, and the metadata that says more. */
export interface WireStatus {
  readonly code: Code;
  readonly message: string;
  readonly reason: string | null;
  readonly field: string | null;
  readonly jobId: string | null;
}

/** Engine error to wire status; anything unexpected is logged whole and reported as INTERNAL. */
export function describeError(error: unknown, logger: Logger, context: object): WireStatus {
  if (error instanceof ConnectError) return { code: error.code, message: error.rawMessage, reason: null, field: null, jobId: null };
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
  logger.error({ ...context, err: error instanceof Error ? (error.stack ?? error.message) : String(error) }, 'internal error');
  return { code: Code.Internal, message: 'internal error', reason: null, field: null, jobId: null };
}

export function toConnectError(error: unknown, logger: Logger, context: object): ConnectError {
  if (error instanceof ConnectError) return error;
  const status = describeError(error, logger, context);
  const metadata = new Headers();
  if (status.reason !== null) metadata.set(REASON_HEADER, status.reason);
  if (status.jobId !== null) metadata.set(JOB_HEADER, status.jobId);
  if (status.field !== null) metadata.set(FIELD_HEADER, status.field);
  return new ConnectError(status.message, status.code, metadata);
}
