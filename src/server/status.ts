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

export function toConnectError(error: unknown, logger: Logger, context: object): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof TelhaError) {
    const metadata = new Headers();
    if (error instanceof LeaseConflictError) {
      metadata.set(REASON_HEADER, error.reason);
      metadata.set(JOB_HEADER, error.jobId);
    }
    if (error.field !== undefined) metadata.set(FIELD_HEADER, error.field);
    if (error.code === ErrorCode.CorruptRecord || error.code === ErrorCode.Internal) {
      logger.error({ ...context, err: error.message }, 'request failed');
    }
    return new ConnectError(error.message, CODES[error.code], metadata);
  }
  // Anything else is a bug or an I/O failure: log it whole, tell the caller little.
  logger.error({ ...context, err: error instanceof Error ? (error.stack ?? error.message) : String(error) }, 'internal error');
  return new ConnectError('internal error', Code.Internal);
}
