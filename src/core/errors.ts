/**
 * The closed set of error codes every layer speaks. The server maps them to
 * gRPC status in one function and the client maps them back, so a message
 * reads the same whichever backend or transport produced it.
 */
export const ErrorCode = {
  /** A fenced submission from a worker that no longer holds the lease (gRPC ABORTED). */
  LeaseConflict: 'lease_conflict',
  NotFound: 'not_found',
  /** Bad input; `field` names what was wrong. Nothing was written. */
  InvalidArgument: 'invalid_argument',
  /**
   * The job exists but is not in a state the operation applies to (e.g. retry of a job that is
   * not Dead), or the system is not (a store open in another process, a port in use): retrying
   * will not help until someone changes that.
   */
  FailedPrecondition: 'failed_precondition',
  /** A stored row that cannot be decoded; `key` names it. */
  CorruptRecord: 'corrupt_record',
  Unauthenticated: 'unauthenticated',
  PermissionDenied: 'permission_denied',
  /**
   * Out of something that comes back by itself or by an operator's hand: a per-client budget, or
   * the disk holding the store (`DiskFullError`). Retry after a pause.
   */
  ResourceExhausted: 'resource_exhausted',
  /**
   * The store is closed or closing, or cannot reach its database right now (or lost the answer
   * to a write and cannot tell whether it landed). Retry after a pause.
   */
  Unavailable: 'unavailable',
  Internal: 'internal',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Why a fenced submission is stale (docs/design.md, Fencing). */
export type LeaseConflictReason =
  /** The job is not leased to the submitting worker (another worker holds it, or nobody does). */
  | 'worker_mismatch'
  /** Same worker id, but the lease was reaped and granted again: the submitted generation is superseded. */
  | 'generation_superseded'
  /** The job was cancelled while leased: its holder may submit nothing more for it. */
  | 'cancelled';

/**
 * Every {@link LeaseConflictReason}: the closed set the server sends as `telha-reason` with
 * ABORTED and as an item outcome's `reason` (a record, so the compiler holds it to the type).
 */
const REASONS: Readonly<Record<LeaseConflictReason, true>> = {
  worker_mismatch: true,
  generation_superseded: true,
  cancelled: true,
};
export const LEASE_CONFLICT_REASONS = Object.keys(REASONS) as readonly LeaseConflictReason[];

/** Every error Telha raises on purpose: a stable `code`, and the offending `field` for `invalid_argument`. */
export class TelhaError extends Error {
  /** The class's own name (`LeaseConflictError`, `JobFailedError`, ...), so stacks and logs say which. */
  override readonly name: string = 'TelhaError';
  readonly code: ErrorCode;
  /** The offending input, for `invalid_argument`. */
  readonly field: string | undefined;

  constructor(code: ErrorCode, message: string, options?: { field?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.field = options?.field;
  }
}

/** A fenced call refused because the caller no longer holds the lease; `reason` says why. */
export class LeaseConflictError extends TelhaError {
  override readonly name: string = 'LeaseConflictError';
  readonly jobId: string;
  readonly reason: LeaseConflictReason;

  constructor(jobId: string, reason: LeaseConflictReason, message: string) {
    super(ErrorCode.LeaseConflict, `lease conflict on job ${jobId}: ${message}`);
    this.jobId = jobId;
    this.reason = reason;
  }
}

export class CorruptRecordError extends TelhaError {
  override readonly name: string = 'CorruptRecordError';
  /** Hex of the key whose value could not be decoded. */
  readonly key: string;

  constructor(key: string, message: string, cause?: unknown) {
    super(ErrorCode.CorruptRecord, `corrupt record at key ${key}: ${message}`, cause === undefined ? {} : { cause });
    this.key = key;
  }
}

/**
 * The disk holding the store has no space left: a write was refused (and every write is until
 * space comes back), or the store could not be opened. `path` is the store's directory.
 */
export class DiskFullError extends TelhaError {
  readonly path: string;

  constructor(path: string, message: string, cause: unknown) {
    super(ErrorCode.ResourceExhausted, `the disk holding the store at ${path} is full: ${message}`, { cause });
    this.path = path;
  }
}

export function invalidArgument(field: string, message: string): TelhaError {
  return new TelhaError(ErrorCode.InvalidArgument, `${field}: ${message}`, { field });
}

export function notFound(what: string): TelhaError {
  return new TelhaError(ErrorCode.NotFound, `${what} not found`);
}

/** A call on a store that was closed (or is closing). */
export function storeClosed(): TelhaError {
  return new TelhaError(ErrorCode.Unavailable, 'the store is closed');
}

/** Whether `error` is a `TelhaError`, of `code` if given. */
export function isTelhaError(error: unknown, code?: ErrorCode): error is TelhaError {
  return error instanceof TelhaError && (code === undefined || error.code === code);
}

/** Errors worth retrying after a pause: the store or server is away, restarting or overloaded. */
export function isTransient(error: unknown): boolean {
  return (
    error instanceof TelhaError &&
    (error.code === ErrorCode.Unavailable ||
      error.code === ErrorCode.ResourceExhausted ||
      error.code === ErrorCode.Internal)
  );
}
