/**
 * What a worker's handlers see and throw: the job context, the handler and task types, the
 * worker's events, and the two errors that steer an attempt (`PermanentError`,
 * `AttemptTimeoutError`). The worker loop that drives them is `runner.ts`.
 */
import type { FailOptions, JobRecord, LeaseFence, NewJob } from '../core/types.ts';

/** Throw this from a handler to dead-letter the job at once, whatever attempts remain. */
export class PermanentError extends Error {
  override readonly name = 'PermanentError';
}

/**
 * The reason a handler's `signal` aborts when its attempt's time is up (the job's `timeoutSecs`,
 * or its kind's): the worker submits nothing for it, and the server's reaper takes the job back
 * as a timed-out attempt, retried with backoff or dead-lettered at its ceiling.
 */
export class AttemptTimeoutError extends Error {
  override readonly name = 'AttemptTimeoutError';
  constructor(readonly jobId: string) {
    super(`job ${jobId}: the attempt's time is up`);
  }
}

/** What a handler gets for one job. */
export interface JobContext {
  /** The job's id, the name records, events and the wire use. */
  readonly jobId: string;
  /** @deprecated Use `jobId`, the name records and events use; `id` goes in the next release. */
  readonly id: string;
  readonly kind: string;
  /** `null` for system-scope jobs. */
  readonly tenant: string | null;
  readonly payload: Uint8Array;
  /** Attempts consumed before this one. */
  readonly attempts: number;
  /** The last checkpoint of *this* lease; always `null` on a fresh lease. */
  readonly continuation: Uint8Array | null;
  /** The fencing token: pass it to downstream stores so they can refuse a stale writer. */
  readonly leaseGeneration: number;
  /**
   * Aborts when the lease is lost, the job is cancelled (its `reason` is then a
   * `LeaseConflictError` with reason `cancelled`), or the worker shuts down.
   */
  readonly signal: AbortSignal;
  /** Store a continuation (where to resume) and extend the lease in one call; throws `LeaseConflictError` if the lease is gone. */
  checkpoint(continuation: Uint8Array): Promise<void>;
  /**
   * Report progress for people to read (a number or a small JSON object, at most 4,096
   * characters as JSON): a heartbeat carrying it, so it extends the lease too. The job shows the
   * last value reported until it is leased again. Throws `LeaseConflictError` if the lease is gone.
   */
  progress(value: number | { readonly [key: string]: unknown }): Promise<void>;
  /** Jobs to enqueue in the same write as this job's completion (chained enqueue). */
  chain(...successors: NewJob[]): void;
  /** The fencing pair this worker holds the job under, for a completion written elsewhere (`completeInTransaction`). */
  readonly fence: LeaseFence;
  /**
   * Say that the handler's own transaction completed the job (`completeInTransaction` of
   * `telha/postgres`), so the worker sends no result of its own and stops heartbeating the
   * lease at once; what the handler returns is then not stored. Call it once that transaction
   * committed (if the handler throws after it, the job fails as usual: a failure of a job
   * already completed is refused, harmlessly). Successors go in `completeInTransaction`'s
   * options: `chain` cannot be combined with it.
   */
  completedInTransaction(): void;
  /**
   * Say that the handler's own transaction failed the job (`failInTransaction`) with `failure`,
   * the options it passed there, as `completedInTransaction` does for a completion: the worker
   * sends nothing, and reports the failure (`failed` event) as if it had sent it.
   */
  failedInTransaction(failure: FailOptions): void;
  /** The whole record as leased. */
  readonly record: JobRecord;
}

/**
 * Runs one job. What it resolves to is the job's result, stored with the completion:
 * `undefined` stores none, a `Uint8Array` is stored as it is, anything else as its JSON text
 * (UTF-8), at most `jobs.max_result_bytes` (64 KiB by default).
 */
export type JobHandler = (job: JobContext) => Promise<unknown>;

/**
 * One kind a worker serves with its own handler (`task.handle(...)` makes one from a typed
 * task): jobs of exactly this kind go to `handler`, at most `concurrency` of them at once.
 */
export interface TaskHandler {
  readonly kind: string;
  readonly handler: JobHandler;
  /** At most this many of this kind run at once (the worker's `concurrency` stays the cap). Default: no limit of its own. */
  readonly concurrency?: number;
}

/** What a worker's listeners get, by event (see `worker.on`). */
export interface WorkerEvents {
  /** The store accepted a job's completion. */
  completed: [job: JobRecord];
  /** The store accepted a job's failure: retried with backoff, or dead-lettered if `permanent`. */
  failed: [job: JobRecord, error: Error, details: { readonly permanent: boolean }];
  /** The worker lost its source (reported once per outage, as `onError` is). */
  error: [error: Error];
}

/** A listener of one {@link WorkerEvents} event. */
export type WorkerListener<E extends keyof WorkerEvents> = (...args: WorkerEvents[E]) => void;
