/**
 * Wire status back to Telha's error codes, so a client sees the same
 * `TelhaError` / `LeaseConflictError` the engine throws in-process.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorCode, LeaseConflictError, TelhaError, type LeaseConflictReason } from '../core/errors.ts';

const FROM_CODE: Partial<Record<Code, ErrorCode>> = {
  [Code.Aborted]: ErrorCode.LeaseConflict,
  [Code.NotFound]: ErrorCode.NotFound,
  [Code.InvalidArgument]: ErrorCode.InvalidArgument,
  [Code.FailedPrecondition]: ErrorCode.FailedPrecondition,
  [Code.DataLoss]: ErrorCode.CorruptRecord,
  [Code.Unauthenticated]: ErrorCode.Unauthenticated,
  [Code.PermissionDenied]: ErrorCode.PermissionDenied,
  [Code.ResourceExhausted]: ErrorCode.ResourceExhausted,
  [Code.Unavailable]: ErrorCode.Unavailable,
  [Code.DeadlineExceeded]: ErrorCode.Unavailable,
  [Code.Canceled]: ErrorCode.Unavailable,
};

export function fromWireError(error: unknown): Error {
  if (!(error instanceof ConnectError)) return error instanceof Error ? error : new Error(String(error));
  const code = FROM_CODE[error.code] ?? ErrorCode.Internal;
  if (code === ErrorCode.LeaseConflict) {
    const reason = error.metadata.get('telha-reason');
    return new LeaseConflictError(
      error.metadata.get('telha-job-id') ?? '',
      reason === 'generation_superseded' ? 'generation_superseded' : ('worker_mismatch' satisfies LeaseConflictReason),
      error.rawMessage.replace(/^lease conflict on job \S+: /, ''),
    );
  }
  const field = error.metadata.get('telha-field');
  return new TelhaError(code, error.rawMessage, { ...(field === null ? {} : { field }), cause: error });
}

/** Errors worth retrying after a pause: the server is away, restarting or overloaded. */
export function isTransient(error: unknown): boolean {
  return error instanceof TelhaError && (error.code === ErrorCode.Unavailable || error.code === ErrorCode.ResourceExhausted || error.code === ErrorCode.Internal);
}
